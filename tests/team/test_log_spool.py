"""The PostgreSQL log never loses a call: the spool while the database is down, draining when it
returns, a close (SIGTERM) that drains, uids that keep a twice-written batch one row per call.

On the real database (tests/pg_support.py); the cluster is stopped and started with pg_ctl.
"""

from __future__ import annotations

import os
import re
import stat
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.audit.pglog import PgInvocationLog
from mcpctl.audit.pgwriter import SpoolingWriter
from mcpctl.audit.records import CallRecord
from mcpctl.audit.spool import Spool
from pg_support import Cluster

T0 = 1_800_000_000.0


def rec(i: int, **kw: object) -> CallRecord:
    base: dict[str, object] = {"ts": T0 + i, "duration_ms": 1.0, "project": "p", "presented_name": f"t{i}",
                               "canonical_id": f"s/t{i % 7}", "outcome": "ok", "host": "h1"}
    base.update(kw)
    return CallRecord(**base)  # type: ignore[arg-type]


def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout * SLACK
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout * SLACK:.0f}s"
        time.sleep(0.05)


def test_spool_round_trips_is_private_and_drops_the_oldest_past_its_cap(tmp_home: Path) -> None:
    spool = Spool(cap_bytes=64 * 1024)
    assert spool.dir == tmp_home / "state" / "log-spool"
    rows = [(uuid.uuid4(), rec(i, query="q" * 100)) for i in range(2000)]
    for start in range(0, len(rows), 100):      # a segment each: the cap drops whole old segments
        spool.append(rows[start:start + 100])
        spool.seal()
    files = list(spool.dir.glob("*.jsonl"))
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(spool.dir.stat().st_mode) == 0o700
    assert spool.pending_bytes() <= 64 * 1024 and spool.dropped > 0
    got: list[tuple[uuid.UUID, CallRecord]] = []
    assert spool.drain(got.extend) == len(got) == 2000 - spool.dropped
    assert got == rows[spool.dropped:]           # the newest kept, in order
    assert not spool.has_pending()


def test_the_spool_never_passes_its_cap_and_counts_every_row_it_drops(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """MCPCTL_LOG_SPOOL_BYTES=200000: the segment being written counts too (before: it was never
    counted, and the spool reached 1.6 MB); nothing is dropped while the rows fit, and every row is
    either drained back or counted as dropped."""
    import random

    cap = 200_000
    spool = Spool(tmp_path / "spool", cap_bytes=cap)
    rng = random.Random(7)
    rows = [(uuid.uuid4(), rec(i, query="q" * rng.randrange(0, 400))) for i in range(6000)]
    start, first_drop, largest = 0, None, 0
    while start < len(rows):
        batch = rows[start:start + rng.choice((1, 3, 40, 250))]
        before = spool.pending_bytes()
        spool.append(batch)
        start += len(batch)
        size = spool.pending_bytes()
        largest = max(largest, size)
        assert size <= cap, (size, cap)
        if spool.dropped and first_drop is None:
            first_drop = before
            assert before + len(_encoded(batch)) > cap      # dropped only when the next write would not fit
        if spool.dropped == 0:
            assert size == before + len(_encoded(batch))
    assert first_drop is not None and largest > cap * 0.8
    got: list[tuple[uuid.UUID, CallRecord]] = []
    assert spool.drain(got.extend) == len(got)
    assert len(got) + spool.dropped == len(rows)
    assert got == rows[spool.dropped:]                  # the newest kept, in order, none twice
    reported = [int(m.group(1)) for r in caplog.records
                if (m := re.search(r"the oldest (\d+) row\(s\) dropped", r.getMessage()))]
    assert sum(reported) == spool.dropped               # each drop reported with its count


def _encoded(rows: list[tuple[uuid.UUID, CallRecord]]) -> bytes:
    from mcpctl.audit.spool import _encode

    return _encode(rows)


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    rows = [(uuid.uuid4(), rec(i)) for i in range(3)]
    spool.append(rows)
    spool.seal()
    seg = next((tmp_path / "spool").glob("*.jsonl"))
    with seg.open("ab") as f:
        f.write(b'{"u": "0123')
    got: list[tuple[uuid.UUID, CallRecord]] = []
    assert spool.drain(got.extend) == 3 and got == rows


def test_a_batch_written_twice_is_one_row_per_call(pg_db: str) -> None:
    log = PgInvocationLog(pg_db)
    rows = [(uuid.uuid4(), rec(i)) for i in range(5)]
    log.insert(rows)
    log.insert(rows[2:])
    assert log.count() == 5


def test_calls_go_on_while_the_database_is_down_and_every_row_arrives(
        pg_db: str, pg_cluster: Cluster, tmp_path: Path) -> None:
    log = PgInvocationLog(pg_db)
    writer = SpoolingWriter(log, spool=Spool(tmp_path / "spool"))
    try:
        for i in range(200):
            writer.submit(rec(i))
        assert writer.flush(20)
        until(lambda: log.count() == 200)
        pg_cluster.stop()
        try:
            t = time.monotonic()
            for i in range(200, 1200):
                writer.submit(rec(i))
            assert time.monotonic() - t < 1.0 * SLACK          # submit never waits on the database
            assert writer.flush(30)
            assert writer.down and writer.spool.has_pending()
        finally:
            pg_cluster.start()
        for i in range(1200, 1300):
            writer.submit(rec(i))
        until(lambda: not writer.spool.has_pending() and writer.written == 1300, timeout=30)
        assert log.count() == 1300 and writer.dropped == 0
        assert {r.presented_name for r in log.query()} == {f"t{i}" for i in range(1300)}
    finally:
        writer.close()


def test_close_drains_and_what_stays_spooled_is_written_by_the_next_writer(
        pg_db: str, pg_cluster: Cluster, tmp_path: Path) -> None:
    log = PgInvocationLog(pg_db)
    pg_cluster.stop()
    try:
        writer = SpoolingWriter(log, spool=Spool(tmp_path / "spool"), drain_timeout=1.0)
        for i in range(300):
            writer.submit(rec(i))
        writer.close()                                 # the database is down: rows stay on disk
        assert writer.dropped == 0 and writer.spool.pending_bytes() > 0
        writer.write_now(rec(300))                     # a call answered after close: spooled too
    finally:
        pg_cluster.start()
    nxt = SpoolingWriter(log, spool=Spool(tmp_path / "spool"))
    try:
        until(lambda: log.count() == 301, timeout=30)
    finally:
        nxt.close()
    assert not list((tmp_path / "spool").glob("*.jsonl"))


def test_close_with_the_database_up_writes_everything_queued(pg_db: str, tmp_path: Path) -> None:
    log = PgInvocationLog(pg_db)
    writer = SpoolingWriter(log, spool=Spool(tmp_path / "spool"))
    for i in range(5000):
        writer.submit(rec(i))
    writer.close()
    assert log.count() == 5000 and writer.written == 5000
    assert os.listdir(tmp_path / "spool") == [] if (tmp_path / "spool").exists() else True
