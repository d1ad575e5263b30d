"""Search learns from the catalogue's own use, through the real gateway: a query that misses, searched
and followed by a call of the intended tool in three sessions, ranks that tool first afterwards (and
a paraphrase moves up); with recordQueries off, or search.learn.enabled false, nothing is learned.

In-process: each session is one gateway (as a stdio client starts one `mcpctl serve` per agent
session) over the bundled examples, writing the real SQLite log through `serve`'s own recorder,
which is also what the next gateway's search reads."""

from __future__ import annotations

from typing import Any

import pytest
from gwkit import Kit
from inproc import Harness

pytestmark = pytest.mark.anyio

MISS = "squirrel away my grocery list"          # means notes/create_note; no ranker finds it first
PARAPHRASE = "squirrel away the packing list for the trip"
INTENDED = "notes__create_note"


def _examples(kit: Kit, ranker: str = "auto", **search: Any) -> None:
    for name in ("notes", "calc", "textkit"):
        kit.server(name, "example-server", name, command="mcpctl")   # run in-process by the harness
    kit.project("p", ["notes", "calc", "textkit"], search={"ranker": ranker, **search})


async def _names(gw: Harness, query: str, settled: bool = False) -> list[str]:
    """The names `search_tools` ranks for `query`, in a new session; `settled`: the answer of the
    project's ranker itself, not a keyword-only one standing in while the tools' vectors (and the
    learned queries') are computed (asked again until then: at most 600 times, 0.1 s apart)."""
    import anyio

    async with gw.client("p", "auto", log=True) as c:
        for _ in range(600):
            r = await c.session.call_tool("search_tools", {"query": query, "top_k": 10})
            if not settled or "note" not in r.structured_content:
                return [tool["name"] for tool in r.structured_content["tools"]]
            await anyio.sleep(0.1)
    raise AssertionError(f"search_tools still answered keyword-only after 600 tries: {r.structured_content}")


async def _session_that_finds_it(gw: Harness, query: str, who: str) -> None:
    """Search, then call the tool the request meant (it answers without error). `who`: the client's
    name: a 2026-07-28 client's session over HTTP is its credential, name and version, the same on
    every replica and after a restart (docs/team.md), so distinct sessions are distinct clients."""
    async with gw.client("p", "auto", log=True, name=who) as c:
        await c.session.call_tool("search_tools", {"query": query})
        r = await c.session.call_tool(INTENDED, {"title": "groceries", "body": "milk, eggs"})
        assert not r.is_error


@pytest.mark.parametrize("ranker", ["auto", "bm25"])
async def test_three_sessions_teach_search_the_tool_a_query_meant(kit: Kit, gw: Harness, ranker: str) -> None:
    """With either ranker (`auto` answers with the lexical one while the tools' vectors are computed,
    as under load): the words people used before outrank the action a request seems to ask for."""
    _examples(kit, ranker, recordQueries=True)
    before = await _names(gw, MISS)
    assert before[0] != INTENDED
    # the paraphrase compared ranker to same ranker: a keyword-only answer while vectors are computed
    # (under load) is not the hybrid ranking it stands in for
    listed = await _names(gw, PARAPHRASE, settled=True)
    paraphrase_before = listed.index(INTENDED) if INTENDED in listed else 10
    for k in range(3):
        await _session_that_finds_it(gw, MISS, f"agent-{k}")
    after = await _names(gw, MISS, settled=True)
    assert after[0] == INTENDED, after
    paraphrase = await _names(gw, PARAPHRASE, settled=True)
    assert INTENDED in paraphrase and paraphrase.index(INTENDED) < paraphrase_before, (paraphrase_before, paraphrase)


async def test_one_session_alone_teaches_nothing(kit: Kit, gw: Harness) -> None:
    """minSessions (2 by default): one session's searches, however many, are not evidence yet."""
    _examples(kit, recordQueries=True)
    for _ in range(2):
        async with gw.client("p", "auto", log=True) as c:
            for _ in range(3):
                await c.session.call_tool("search_tools", {"query": MISS})
                await c.session.call_tool(INTENDED, {"title": "groceries", "body": "milk"})
            break
    assert (await _names(gw, MISS))[0] != INTENDED


@pytest.mark.parametrize("search", [{"recordQueries": False}, {"recordQueries": True, "learn": {"enabled": False}}])
async def test_nothing_is_learned_without_recorded_queries_or_with_learning_off(
        kit: Kit, gw: Harness, search: dict[str, Any]) -> None:
    _examples(kit, **search)
    for k in range(3):     # what teaches search in the test above
        await _session_that_finds_it(gw, MISS, f"agent-{k}")
    assert (await _names(gw, MISS))[0] != INTENDED


async def test_a_call_that_failed_teaches_nothing(kit: Kit, gw: Harness) -> None:
    _examples(kit, recordQueries=True)
    for k in range(3):     # three clients, as in the first test
        async with gw.client("p", "auto", log=True, name=f"agent-{k}") as c:
            await c.session.call_tool("search_tools", {"query": MISS})
            r = await c.session.call_tool(INTENDED, {"nonsense": True})       # refused: invalid arguments
            assert r.is_error
    assert (await _names(gw, MISS))[0] != INTENDED


async def test_one_gateway_serving_many_sessions_learns_as_they_go(kit: Kit, gw: Harness) -> None:
    """An HTTP gateway serves every session: its search re-reads what the log teaches (at most
    every LEARN_REFRESH_S; here at every search). Handshake-era clients: each connection is a
    session of its own (a 2026-07-28 client is one identity per credential and client)."""
    _examples(kit, recordQueries=True)
    async with gw.serve("p", log=True) as g:
        search = g.gateway.views.search
        assert search is not None and search.learning is not None
        search.learning.refresh_s = 0.0
        for _ in range(3):
            async with g.client("legacy") as c:
                await c.session.call_tool("search_tools", {"query": MISS})
                await c.session.call_tool(INTENDED, {"title": "groceries", "body": "milk"})
        await g.settle_log()
        async with g.client("legacy") as c:
            r = await c.session.call_tool("search_tools", {"query": MISS})
            assert r.structured_content["tools"][0]["name"] == INTENDED
