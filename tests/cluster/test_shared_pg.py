"""The cluster's tables on a real PostgreSQL: replicas registered, refreshed and forgotten when
silent; the hop secret written once; cut results and the gate's sessions readable from another
replica (another `SharedSections` / `SharedGate` on the same database)."""

from __future__ import annotations

import pytest

from ci_support import SLACK
from mcpctl.cluster.registry import STALE_S, Registry
from mcpctl.cluster.shared import SharedGate, SharedSections
from mcpctl.presentation.sections import SectionError, cut_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _age(url: str, rid: str, seconds: float) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("UPDATE replicas SET heartbeat_at = now() - make_interval(secs => %s) WHERE id = %s",
                     (seconds, rid))


async def test_replicas_register_see_each_other_and_a_silent_one_is_forgotten(pg_db: str) -> None:
    a, b = Registry(pg_db, "http://10.0.0.1:8765/mcp"), Registry(pg_db)
    b.listening("127.0.0.1", 9999)
    for r in (a, b):
        r.load_secret()
    assert a.secret == b.secret and len(a.secret) >= 32       # one secret for the cluster
    a.beat()
    b.beat()
    a.beat()
    assert a.peers == {b.id: "http://127.0.0.1:9999"} and b.peers == {a.id: "http://10.0.0.1:8765"}
    _age(pg_db, b.id, STALE_S + 1)                              # b went silent (killed)
    a.beat()
    assert a.peers == {}                                        # its row is deleted
    b.beat()                                                    # it was only slow: back
    assert await a.url_of(b.id) == "http://127.0.0.1:9999"      # an unknown id re-reads the table
    assert await a.url_of("cccccccc") is None                   # never registered (and no second read within 1 s)
    b.leave()
    a.beat()
    assert a.peers == {}


def test_a_cut_result_is_read_from_another_replica_by_its_owner_only(pg_db: str) -> None:
    here, there = SharedSections(database=pg_db), SharedSections(database=pg_db)
    text = "\n\n".join(f"paragraph {i} " + "word " * 200 for i in range(10))
    cut = cut_text(text, 300, lambda s: len(s) // 4)
    rid = here.put(("s1", "alice"), text, cut)
    assert rid is not None
    n = len(cut.bounds)
    assert "".join(there.read(("s1", "alice"), rid, k)[0] for k in range(1, n + 1)) == text
    for owner in (("s2", "alice"), ("s1", "bob"), ("s1", None)):
        with pytest.raises(SectionError, match="no result"):
            there.read(owner, rid, 2)
    with pytest.raises(SectionError, match="does not exist"):
        there.read(("s1", "alice"), rid, n + 1)


def test_a_session_begun_on_one_replica_has_begun_on_every_one(pg_db: str) -> None:
    here, there, other_project = SharedGate(pg_db, "p"), SharedGate(pg_db, "p"), SharedGate(pg_db, "q")
    assert not there.begun("s1")
    here.begin("s1")
    here.begin("s1")
    assert there.begun("s1") and not there.begun("s2") and not other_project.begun("s1")


def test_begin_session_on_a_second_replica_says_the_session_had_begun(pg_db: str) -> None:
    from mcpctl.gateway.sessions import Sessions

    here, there = Sessions(), Sessions()
    here.shared, there.shared = SharedGate(pg_db, "p"), SharedGate(pg_db, "p")
    assert not there.begun("s1")
    assert here.begin("s1") is True             # was gated
    assert there.begun("s1")
    assert there.begin("s1") is False           # "This session had already begun."


async def test_a_session_begun_on_one_replica_is_announced_to_the_others(pg_db: str) -> None:
    import asyncio

    from mcpctl.cluster.shared import GateListener

    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_begun(session_id: str) -> None:
        heard.put_nowait(session_id)

    listener = GateListener(pg_db, "p", "bbbbbbbb", on_begun)
    listener.start(asyncio.get_running_loop())
    try:
        assert await asyncio.to_thread(listener.listening.wait, 10 * SLACK)
        await asyncio.to_thread(SharedGate(pg_db, "q", "aaaaaaaa").begin, "other-project")
        await asyncio.to_thread(SharedGate(pg_db, "p", "bbbbbbbb").begin, "its-own")
        await asyncio.to_thread(SharedGate(pg_db, "p", "aaaaaaaa").begin, "s1")
        assert await asyncio.wait_for(heard.get(), 10 * SLACK) == "s1"      # only this one
        assert heard.empty()
    finally:
        listener.stop(wait=5)
