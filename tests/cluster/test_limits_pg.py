"""Per-person call limits shared by replicas on a real PostgreSQL (`cluster.limits.SharedLimits`):
two and three replicas' `Limits` on one database, each sync driven by the test (`step`), on a still
clock, so every count is exact. What one replica admits is charged to the others' buckets once
(the news since the last read, not the totals); credentials and profiles are kept apart; a row no
longer changing is not read, and is deleted with what was remembered of it; a database away is
logged once and the counts go out when it is back."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import pytest

from ci_support import SLACK
from mcpctl.cluster.limits import CLEAN_EVERY, KEEP_S, LIVE_S, MARGIN_S, SharedLimits
from mcpctl.presentation.budgets import Limits
from mcpctl.resources.kinds import ProjectSpec

BURST = 10


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _spec() -> ProjectSpec:
    return ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {"profiles": {
        "ci": {"limits": {"callsPerMinute": 60, "burst": BURST}},         # one call a second
        "ops": {"limits": {"callsPerMinute": 60, "burst": 3}}, "free": {}}}})


def _replicas(pg_db: str, clock: Clock, n: int) -> list[SharedLimits]:
    """`n` replicas' limits on one database, each past its first read (which only notes the others)."""
    replicas = [SharedLimits(pg_db, "p", f"r{i}", Limits(_spec(), clock), clock=clock) for i in range(n)]
    for r in replicas:
        r.step()
    return replicas


def _admit(r: SharedLimits, n: int, profile: str = "ci", identity: str | None = "alice") -> int:
    """How many of `n` calls `r` admits."""
    return sum(r.limits.take(profile, identity) is None for _ in range(n))


def _level(r: SharedLimits, profile: str = "ci", identity: str = "alice") -> float:
    return r.limits.buckets[profile, identity].level


def test_what_one_replica_admits_the_other_charges_once(pg_db: str) -> None:
    clock = Clock()
    a, b = _replicas(pg_db, clock, 2)
    assert _admit(a, 6) == 6
    a.step()
    b.step()
    assert _level(b) == BURST - 6
    assert _admit(b, 5) == 4                                    # 4 more, then refused: 10 across both
    b.step()
    a.step()
    assert _level(a) == 0.0 and _admit(a, 1) == 0
    for _ in range(3):                                          # nothing new: nothing charged again
        a.step()
        b.step()
    assert _level(a) == 0.0 and _level(b) == 0.0
    clock.now += 5                                              # 5 refilled on each
    assert _admit(a, 6) == 5
    a.step()
    b.step()
    assert _level(b) == 0.0                                     # charged the 5 new ones, not the 11 in all
    clock.now += 3
    assert _admit(b, 2) == 2 and _level(b) == 1.0
    b.step()
    a.step()
    assert _level(a) == 1.0


def test_three_replicas_each_charge_the_other_two(pg_db: str) -> None:
    clock = Clock()
    replicas = _replicas(pg_db, clock, 3)
    assert [_admit(r, 3) for r in replicas] == [3, 3, 3]
    for _ in range(2):
        for r in replicas:
            r.step()
    assert [_level(r) for r in replicas] == [1.0, 1.0, 1.0]     # 10 - 3 own - 6 of the others
    assert [_admit(r, 2) for r in replicas] == [1, 1, 1]


def test_credentials_and_profiles_are_kept_apart_and_the_project_token_is_shared(pg_db: str) -> None:
    clock = Clock()
    a, b = _replicas(pg_db, clock, 2)
    assert _admit(a, 3, "ci", "alice") == 3
    assert _admit(a, 1, "ops", "alice") == 1
    assert _admit(a, 2, "ci", "bob") == 2
    assert _admit(a, 4, "ci", "") == 4                          # the project's own token
    assert _admit(a, 4, "ci", None) == 4                        # the stdio client: not shared
    assert _admit(a, 5, "free", "alice") == 5                   # no limits: not counted
    a.step()
    b.step()
    assert {k: bucket.level for k, bucket in b.limits.buckets.items()} == {
        ("ci", "alice"): 7.0, ("ops", "alice"): 2.0, ("ci", "bob"): 8.0, ("ci", ""): 6.0}


def test_a_row_no_longer_changing_is_not_read_and_an_idle_key_starts_a_new_count(pg_db: str) -> None:
    import psycopg

    clock = Clock()
    a, b = _replicas(pg_db, clock, 2)
    assert _admit(a, 5) == 5
    a.step()
    with psycopg.connect(pg_db) as conn:                        # as if b had not read since an hour ago
        conn.execute("UPDATE limit_spend SET at = now() - interval '1 hour'")
    b.step()
    assert ("ci", "alice") not in b.limits.buckets
    late = _replicas(pg_db, clock, 1)[0]                        # nor does a replica started now
    assert late.seen == {}
    clock.now += LIVE_S                                         # idle: a's next call starts a new count
    assert _admit(a, 2) == 2
    a.step()
    b.step()
    assert _level(b) == BURST - 2                               # the new count's 2, not 5 + 2
    with psycopg.connect(pg_db) as conn:
        rows = conn.execute("SELECT replica, profile, identity, taken FROM limit_spend").fetchall()
        assert rows == [("r0", "ci", "alice", 2)]
        conn.execute("UPDATE limit_spend SET at = now() - make_interval(secs => %s)", (KEEP_S + 1,))
    clock.now += LIVE_S + 2 * MARGIN_S
    b.syncs = CLEAN_EVERY - 1                                   # the next sync cleans: rows and memory
    b.step()
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT count(*) FROM limit_spend").fetchone() == (0,)
    assert b.seen == {} and b.mine == {}


def test_a_database_away_is_logged_once_and_the_counts_go_out_when_it_is_back(
        pg_db: str, pg_cluster: Any, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    a, b = _replicas(pg_db, clock, 2)
    caplog.set_level(logging.WARNING, "mcpctl.cluster")
    pg_cluster.stop()
    try:
        assert _admit(a, 3) == 3
        a.step()
        assert _admit(a, 2) == 2                                # calls go on, counted here
        a.step()
    finally:
        pg_cluster.start()
    away = [r.getMessage() for r in caplog.records if "limit_spend" in r.getMessage()]
    assert len(away) == 1 and "each replica counts its own until the database answers" in away[0]
    deadline = time.monotonic() + 30 * SLACK
    for _ in range(100):                                        # the pool reconnects (with a back-off)
        a.step()
        if not a.down or time.monotonic() > deadline:
            break
    assert not a.down and not a.pending
    b.step()
    assert _level(b) == BURST - 5
    assert any("answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.anyio
async def test_the_sync_runs_every_interval_until_stopped(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    clock = Clock()
    a = SharedLimits(pg_db, "p", "r0", Limits(_spec(), clock), interval=0.01, clock=clock)
    assert _admit(a, 4) == 4
    syncs: list[anyio.Event] = [anyio.Event(), anyio.Event()]     # set by the first and second answered syncs
    answered = a.answered

    def answer(rows: list[Any], clean: bool) -> None:
        answered(rows, clean)
        (syncs[1] if syncs[0].is_set() else syncs[0]).set()

    monkeypatch.setattr(a, "answered", answer)
    stop = anyio.Event()
    with anyio.fail_after(10 * SLACK):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.run, stop)
            await syncs[1].wait()           # a second sync: the loop goes on after the first
            stop.set()
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT taken FROM limit_spend").fetchall() == [(4,)]
    assert a.syncs >= 2 and not a.pending


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_database_at_cluster_version_1_says_to_migrate_and_migrate_adds_the_table(pg_db: str) -> None:
    """A team database migrated before limits were shared: a replica refuses it naming the command,
    and `mcpctl db migrate` adds `limit_spend` (version 2) to it."""
    import psycopg

    from mcpctl.db import migrations

    with psycopg.connect(pg_db) as conn:
        conn.execute("DROP TABLE limit_spend")
        conn.execute("DELETE FROM schema_migrations WHERE component = 'cluster' AND version = 2")
    with pytest.raises(migrations.SchemaBehind, match="cluster schema is at version 1, this mcpctl needs 2") as e:
        migrations.require("cluster", pg_db)
    assert e.value.hint == "run: mcpctl db migrate"
    assert [(c, m.version) for c, m in migrations.migrate(pg_db)] == [("cluster", 2)]
    migrations.require("cluster", pg_db)
    a = _replicas(pg_db, Clock(), 1)[0]
    assert _admit(a, 1) == 1
    a.step()
    assert not a.down and not a.pending
