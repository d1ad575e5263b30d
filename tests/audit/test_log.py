from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import astuple
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl import paths
from mcpctl.audit import migrations
from mcpctl.audit.log import (
    OUTCOMES,
    SEARCH_TOOL_ID,
    CallRecord,
    InvocationLog,
)
from mcpctl.audit.records import row
from mcpctl.audit.writer import BackgroundWriter

T0 = 1_800_000_000.0


def rec(ts: float, cid: str | None = "calc/add", **kw: object) -> CallRecord:
    base: dict[str, object] = {
        "ts": ts, "duration_ms": 1.0, "project": "p", "presented_name": (cid or "?").replace("/", "__"),
        "canonical_id": cid, "outcome": "ok",
    }
    base.update(kw)
    return CallRecord(**base)  # type: ignore[arg-type]


@pytest.fixture
def log(request: pytest.FixtureRequest, tmp_path: Path) -> InvocationLog:
    """The SQLite log; `@both` runs a test on every backend of `AuditLog` (the contract: the same
    queries, the same answers): PostgreSQL and the in-memory log too."""
    if getattr(request, "param", "sqlite") == "postgresql":
        from mcpctl.audit.pglog import PgInvocationLog

        yield PgInvocationLog(request.getfixturevalue("pg_db"))  # type: ignore[misc]
        return
    if getattr(request, "param", "sqlite") == "memory":
        from mcpctl.audit.memlog import MemoryLog

        mem = MemoryLog()
        yield mem  # type: ignore[misc]
        mem.close()
        return
    lg = InvocationLog(tmp_path / "log.db")
    yield lg
    lg.close()


both = pytest.mark.parametrize("log", ["sqlite", "postgresql", "memory"], indirect=True)


def test_default_path_follows_mcpctl_home(tmp_home: Path) -> None:
    with InvocationLog() as lg:
        assert lg.path == paths.invocation_log_path()
        assert lg.path.is_relative_to(tmp_home)
    assert (tmp_home / "data" / "invocations.db").exists()


def test_fresh_database_is_wal_with_recorded_migrations(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "log.db"
    InvocationLog(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [r[0] for r in db.execute("SELECT name FROM _mcpctl_migrations ORDER BY rowid")]
    assert names == [m.__name__ for m in migrations.MIGRATIONS]
    indexes = {r[0]: r[1] for r in db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'invocations'")}
    assert "(ts)" in indexes["idx_invocations_ts"]
    assert "(project, ts)" in indexes["idx_invocations_project_ts"]
    cols = [r[1] for r in db.execute("PRAGMA table_info(invocations)")]
    # never arguments or results: the schema has no place for them
    assert not {"arguments", "result", "args"} & set(cols)
    assert "query" in cols
    db.close()


def test_reopening_runs_no_migration_twice_and_keeps_rows(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    with InvocationLog(path) as lg:
        lg.record(rec(T0))
    with InvocationLog(path) as lg:
        assert lg.count() == 1
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM _mcpctl_migrations").fetchone()[0] == len(migrations.MIGRATIONS)
    db.close()


def test_pending_migration_is_applied_once_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.db"
    with InvocationLog(path) as lg:
        lg.record(rec(T0))

    def m999_add_flow(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE invocations ADD COLUMN flow TEXT")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m999_add_flow])
    with InvocationLog(path) as lg:
        assert lg.summary().migrations[-1] == "m999_add_flow"
        assert lg.count() == 1
    with InvocationLog(path) as lg:  # second open: nothing to do (ALTER would fail if re-run)
        assert lg.summary().migrations.count("m999_add_flow") == 1


def test_failed_migration_rolls_back_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def m900_broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half (x)")
        raise RuntimeError("boom")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m900_broken])
    with pytest.raises(RuntimeError, match="boom"):
        InvocationLog(tmp_path / "log.db")
    db = sqlite3.connect(tmp_path / "log.db")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half" not in tables and "invocations" not in tables
    db.close()


@both
def test_record_round_trips_every_field(log: InvocationLog) -> None:
    r = CallRecord(ts=T0, duration_ms=12.5, project="demo", presented_name="favourite__add",
                   canonical_id="calc/add", outcome="tool_error", error_class="ValueError",
                   client_name="claude-code", client_version="2.1", session_id="s1",
                   profile="ci", query=None)
    log.record(r)
    assert log.query() == [r]


def test_unknown_outcome_is_rejected() -> None:
    with pytest.raises(ValueError, match="outcome 'weird'"):
        rec(T0, outcome="weird")
    assert len(OUTCOMES) == 7 and "limited" in OUTCOMES


@both
def test_record_many_is_one_transaction(log: InvocationLog) -> None:
    good = [rec(T0 + i) for i in range(3)]
    bad = CallRecord.__new__(CallRecord)  # bypasses validation; NOT NULL column left empty
    values = (T0, 1.0, None, "x", None, "ok", None, None, None, None, None, None, None, None, None, None)
    for f, v in zip(CallRecord.__slots__, values, strict=True):
        object.__setattr__(bad, f, v)
    with pytest.raises(Exception) as caught:
        log.record_many([*good, bad])
    assert "null" in str(caught.value).lower()
    assert log.count() == 0
    log.record_many(good)
    assert log.count() == 3


def test_a_batch_is_one_multi_row_insert_in_order(tmp_path: Path) -> None:
    """A batch that fits one statement is that INSERT alone (its own transaction; each statement's
    step gives up the GIL and has to win it back from a busy event loop); a longer one is a few
    multi-row INSERTs in one transaction; the rows keep the order given either way."""
    statements: list[str] = []
    with InvocationLog(tmp_path / "log.db") as lg:
        lg._db.set_trace_callback(statements.append)
        lg.record_many([rec(T0 + i, presented_name=f"a{i}") for i in range(40)])
        assert [s.split(" (")[0] for s in statements] == ["INSERT INTO invocations"]
        statements.clear()
        n = lg.rows_per_insert * 2 + lg.rows_per_insert // 2
        lg.record_many([rec(T0 + 100 + i, presented_name=f"b{i}") for i in range(n)])
        lg._db.set_trace_callback(None)
        names = [r.presented_name for r in lg.query(project="p")]
    assert names == [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(n)]
    assert [s.split(" (")[0] for s in statements] == ["BEGIN IMMEDIATE", *["INSERT INTO invocations"] * 3, "COMMIT"]


@both
def test_query_filters_and_limit_keeps_newest_in_order(log: InvocationLog) -> None:
    log.record_many([
        rec(T0 + 0, "calc/add", project="a"),
        rec(T0 + 1, "notes/create_note", project="a"),
        rec(T0 + 2, "calc/multiply", project="b"),
        rec(T0 + 3, "calc/add", project="a"),
        rec(T0 + 4, None, project="a", presented_name="nope", outcome="denied"),
    ])
    assert [r.ts - T0 for r in log.query(project="a")] == [0, 1, 3, 4]
    assert [r.ts - T0 for r in log.query(since=T0 + 1, until=T0 + 3)] == [1, 2]
    assert [r.ts - T0 for r in log.query(canonical_id="calc/add")] == [0, 3]
    assert [r.canonical_id for r in log.query(tool_glob="calc/*")] == ["calc/add", "calc/multiply", "calc/add"]
    assert [r.presented_name for r in log.query(tool_glob="nop*")] == ["nope"]
    assert [r.ts - T0 for r in log.query(limit=2)] == [3, 4]
    assert [r.ts - T0 for r in log.query(project="a", limit=3)] == [1, 3, 4]
    assert log.query(limit=0) == []


@both
def test_search_pairs_follow_each_session(log: InvocationLog) -> None:
    search = {"canonical_id": SEARCH_TOOL_ID, "presented_name": "search_tools"}
    log.record_many([
        rec(T0 + 0, session_id="s1", query="take a note", **search),
        rec(T0 + 1, "calc/add", session_id="s2"),                      # other session
        rec(T0 + 2, None, session_id="s1", outcome="denied"),         # unknown tool: skipped
        rec(T0 + 3, "notes/create_note", session_id="s1"),
        rec(T0 + 4, session_id="s2", query="add numbers", **search),
        rec(T0 + 5, session_id="s2", query="sum two numbers", **search),  # a search is not "next"
        rec(T0 + 6, "calc/add", session_id="s2"),
        rec(T0 + 7, session_id="s1", query="never followed", **search),
        rec(T0 + 8, session_id=None, query="no session", **search),
        rec(T0 + 9, "calc/add", session_id=None),
        rec(T0 + 10, session_id="s3", query="elsewhere", project="other", **search),
        rec(T0 + 11, "calc/add", session_id="s3", project="other"),
    ])
    assert log.search_pairs("p") == [
        ("take a note", "notes/create_note"),
        ("add numbers", "calc/add"),
        ("sum two numbers", "calc/add"),
    ]
    assert log.search_pairs("other") == [("elsewhere", "calc/add")]
    assert log.search_pairs("none") == []


@both
def test_tool_stats_percentiles_errors_and_order(log: InvocationLog) -> None:
    log.record_many([rec(T0 + i, "calc/add", duration_ms=float(i + 1)) for i in range(100)])
    log.record_many([
        rec(T0 + 200, "notes/read_note", duration_ms=5, outcome="timeout"),
        rec(T0 + 201, "notes/read_note", duration_ms=7),
        rec(T0 + 202, None, outcome="denied"),
        rec(T0 + 203, "calc/add", project="q", duration_ms=1000),
    ])
    stats = log.tool_stats(project="p")
    assert [s.canonical_id for s in stats] == ["calc/add", "notes/read_note"]
    add, note = stats
    assert (add.calls, add.errors, add.first_ts, add.last_ts) == (100, 0, T0, T0 + 99)
    assert add.p50_ms == pytest.approx(50.5)
    assert add.p95_ms == pytest.approx(95.05)
    assert (note.calls, note.errors, note.error_rate) == (2, 1, 0.5)
    assert note.p50_ms == pytest.approx(6.0)
    assert [(s.canonical_id, s.calls) for s in log.tool_stats(since=T0 + 200)] == [
        ("notes/read_note", 2), ("calc/add", 1)]
    assert log.tool_stats(project="q")[0].p95_ms == 1000


@both
def test_summary_counts_rows_and_bounds(log: InvocationLog) -> None:
    empty = log.summary()
    assert (empty.rows, empty.oldest_ts, empty.newest_ts) == (0, None, None)
    log.record_many([rec(T0 + 5), rec(T0 + 1), rec(T0 + 3)])
    s = log.summary()
    assert (s.rows, s.oldest_ts, s.newest_ts) == (3, T0 + 1, T0 + 5)
    assert s.size_bytes > 0 and s.path == getattr(log, "path", s.path)


def test_background_writer_batches_and_flushes_on_close(log: InvocationLog) -> None:
    writer = BackgroundWriter(log, flush_interval=0.02, max_batch=64)
    threads = [threading.Thread(target=lambda k=k: [writer.submit(rec(T0 + k * 1000 + i)) for i in range(250)])
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    writer.close()
    writer.close()  # idempotent
    assert log.count() == 1000
    assert (writer.written, writer.dropped) == (1000, 0)
    writer.submit(rec(T0))  # after close: dropped, not raised
    assert writer.dropped == 1 and log.count() == 1000


def test_background_writer_takes_lists_whole(log: InvocationLog) -> None:
    """`submit_many` hands a list over as one item: every row written once, a list
    longer than a batch split across transactions; after close, each of a list counted dropped."""
    writer = BackgroundWriter(log, flush_interval=0.0, max_batch=64)
    lists = [[rec(T0 + k * 1000 + i) for i in range(n)] for k, n in enumerate((1, 5, 200, 64))]
    for recs in lists:
        writer.submit_many(recs)
    writer.close()
    assert (writer.written, writer.dropped) == (270, 0)
    assert [r.ts for r in log.query(limit=1000)] == [r.ts for recs in lists for r in recs]
    writer.submit_many([rec(T0), rec(T0 + 1)])
    assert writer.dropped == 2 and log.count() == 270


def test_row_is_the_records_values_in_column_order() -> None:
    r = CallRecord(ts=T0, duration_ms=1.5, project="p", presented_name="a", canonical_id="s/a", outcome="ok",
                   error_class="E", client_name="c", client_version="1", session_id="s", profile="pr",
                   query="q", result_chars=3, result_sections=2, credential="cr", host="h")
    assert row(r) == astuple(r)


def test_background_writer_flush_makes_rows_visible(log: InvocationLog) -> None:
    writer = BackgroundWriter(log, flush_interval=5.0)  # would wait 5 s without flush()
    writer.submit(rec(T0))
    start = time.monotonic()
    assert writer.flush(timeout=5 * SLACK)
    assert time.monotonic() - start < 2 * SLACK
    assert log.count() == 1
    writer.close()


def test_background_writer_survives_a_failing_log(tmp_path: Path) -> None:
    lg = InvocationLog(tmp_path / "log.db")
    writer = BackgroundWriter(lg, flush_interval=0.01)
    lg.close()  # every write now fails
    writer.submit(rec(T0))
    assert writer.flush(timeout=10 * SLACK)
    assert writer.dropped == 1 and writer.written == 0
    writer.close()


def test_background_writer_full_queue_drops_without_blocking(log: InvocationLog) -> None:
    gate = threading.Event()
    real = log.record_many

    def slow(recs: object) -> None:
        gate.wait(60 * SLACK)
        real(recs)  # type: ignore[arg-type]

    log.record_many = slow  # type: ignore[method-assign]
    writer = BackgroundWriter(log, flush_interval=0.0, max_batch=1, max_queue=2)
    start = time.monotonic()
    for i in range(20):
        writer.submit(rec(T0 + i))
    assert time.monotonic() - start < min(1 * SLACK, 30)     # far below the held writer's 60 s
    assert writer.dropped >= 17
    gate.set()
    writer.close()
    assert writer.written + writer.dropped == 20
    assert log.count() == writer.written


_WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mcpctl.audit.log import CallRecord, InvocationLog
    from mcpctl.audit.writer import BackgroundWriter
    path, n, mode, start_at = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    while time.time() < start_at:   # start together, so the migrations race too
        time.sleep(0.002)
    log = InvocationLog(path)
    recs = [CallRecord(ts=time.time(), duration_ms=0.1, project="p", presented_name=f"t{i}",
                       canonical_id=f"w{n}/t{i}", outcome="ok", session_id=f"w{n}") for i in range(500)]
    if mode == "each":
        for r in recs:
            log.record(r)
    else:
        w = BackgroundWriter(log, flush_interval=0.001, max_batch=50)
        for r in recs:
            w.submit(r)
        w.close()
        assert w.dropped == 0, w.dropped
    log.close()
""")


def test_concurrent_processes_lose_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    start_at = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(n),
                               "each" if n % 2 == 0 else "batch", str(start_at)],
                              stderr=subprocess.PIPE, text=True) for n in range(4)]
    for p in procs:
        _, stderr = p.communicate(timeout=60 * SLACK)
        assert p.returncode == 0, stderr
    with InvocationLog(path) as lg:
        rows = lg.query()
        assert len(rows) == 2000
        assert len({r.canonical_id for r in rows}) == 2000
        assert {r.session_id for r in rows} == {"w0", "w1", "w2", "w3"}
        assert lg.summary().migrations == tuple(m.__name__ for m in migrations.MIGRATIONS)


@both
def test_search_pairs_since_keeps_later_searches(log: InvocationLog) -> None:
    search = {"canonical_id": SEARCH_TOOL_ID, "presented_name": "search_tools", "session_id": "s"}
    log.record_many([
        rec(T0, query="old", **search), rec(T0 + 1, "calc/add", session_id="s"),
        rec(T0 + 10, query="new", **search), rec(T0 + 11, "notes/read_note", session_id="s"),
    ])
    assert log.search_pairs("p", since=T0 + 5) == [("new", "notes/read_note")]
    assert [q for q, _ in log.search_pairs("p")] == ["old", "new"]


def _reference_percentile(values: list[float], q: float) -> float:
    v = sorted(values)
    k = (len(v) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


@both
def test_tool_stats_percentiles_match_a_reference_on_random_data(log: InvocationLog) -> None:
    import random

    rng = random.Random(7)
    durations: dict[str, list[float]] = {}
    recs = []
    for n_tool, n in enumerate([1, 2, 3, 7, 20, 21, 101]):
        cid = f"s/t{n_tool}"
        durations[cid] = [round(rng.uniform(0.1, 500), 3) for _ in range(n)]
        recs += [rec(T0 + i, cid, duration_ms=d, outcome=rng.choice(["ok", "ok", "timeout"]))
                 for i, d in enumerate(durations[cid])]
    rng.shuffle(recs)
    log.record_many(recs)
    stats = {s.canonical_id: s for s in log.tool_stats()}
    for cid, values in durations.items():
        assert stats[cid].calls == len(values)
        assert stats[cid].p50_ms == pytest.approx(_reference_percentile(values, 0.5))
        assert stats[cid].p95_ms == pytest.approx(_reference_percentile(values, 0.95))
        assert stats[cid].errors == sum(1 for r in recs if r.canonical_id == cid and r.outcome != "ok")


_STATS_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mcpctl.audit.log import CallRecord, InvocationLog
    path, n, ready, stop = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    log = InvocationLog(path)
    ready.touch()
    for i in range(n):   # one transaction per call, as gateways commit them: a row for every tool
        if i % 16 == 0 and stop.exists():    # the reader has run its rounds
            break
        log.record_many([CallRecord(ts=time.time(), duration_ms=float(i % 97), project="p",
                                    presented_name=f"t{k}", canonical_id=f"s/t{k}", outcome="ok")
                         for k in range(3)])
    log.close()
""")


def test_tool_stats_reads_one_snapshot_while_a_gateway_writes(tmp_path: Path) -> None:
    """Defect 6: `logs stats` ran two SELECTs; a row committed between them gave a KeyError.
    A writer process commits one row per tool per transaction, so every consistent snapshot has
    equal counts for all tools; stats is computed over and over while it writes."""
    path = tmp_path / "log.db"
    with InvocationLog(path) as seed:   # enough rows that each SELECT takes a while
        seed.record_many([rec(T0 + i, f"s/t{k}", duration_ms=float(i % 89)) for i in range(4000) for k in range(3)])
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    # it writes until the reader has run its rounds (at most 200,000 transactions): not a race
    # between the two processes' speeds
    writer = subprocess.Popen([sys.executable, "-c", _STATS_WRITER, str(path), "200000", str(ready), str(stop)],
                              stderr=subprocess.PIPE, text=True)
    failures: list[str] = []
    rounds = 0
    try:
        with InvocationLog(path) as lg:
            deadline = time.monotonic() + 20 * SLACK
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            while writer.poll() is None and rounds < 40 and time.monotonic() < deadline:
                rounds += 1
                try:
                    stats = lg.tool_stats(project="p")
                except Exception as e:   # the defect: a raw KeyError
                    failures.append(f"{type(e).__name__}: {e}")
                    continue
                counts = {s.canonical_id: s.calls for s in stats}
                if len(set(counts.values())) != 1:
                    failures.append(f"torn snapshot: {counts}")
                for s in stats:
                    if not (0 <= s.p50_ms <= s.p95_ms <= 96):
                        failures.append(f"bad percentiles: {s}")
    finally:
        stop.touch()
        _, stderr = writer.communicate(timeout=60 * SLACK)
    assert writer.returncode == 0, stderr
    assert rounds >= 5, "the writer finished before stats ran 5 times"
    assert failures == [], f"{len(failures)} of {rounds} stats runs failed, e.g. {failures[:3]}"


def test_background_writer_checkpoints_off_its_own_thread(tmp_path: Path) -> None:
    """Defect 7 (the kill -9 window): a WAL checkpoint fsyncs, and when it runs inside a commit
    every record queued behind it waits, unlogged. The writer's own commits never checkpoint;
    a helper thread does, so the WAL still stays small."""
    from mcpctl.audit.writer import WAL_SIZE_CAP

    lg = InvocationLog(tmp_path / "log.db")
    writer = BackgroundWriter(lg)
    assert lg._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    wal = tmp_path / "log.db-wal"
    largest = 0
    for i in range(6000):    # sustained writes, a transaction every other record: ~20,000 WAL frames
        writer.submit(rec(T0 + i))
        if i % 2 == 0:
            assert writer.flush(timeout=10 * SLACK)
            largest = max(largest, wal.stat().st_size)
    writer.close()
    assert writer.checkpoints > 0
    assert largest < 2 * WAL_SIZE_CAP, largest   # bounded (~70 MB without the cap)
    assert lg.count() == 6000
    lg.close()


def test_a_log_written_before_result_sizes_opens_and_reads_its_rows_with_none(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute(f"CREATE TABLE {migrations.MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    old = migrations.MIGRATIONS[:3]                     # the schema before m004_result_size
    for fn in old:
        fn(db)
        db.execute(f"INSERT INTO {migrations.MIGRATIONS_TABLE} VALUES (?, 0)", (fn.__name__,))
    db.execute("INSERT INTO invocations (ts, duration_ms, project, presented_name, canonical_id, outcome) "
               "VALUES (?, 1.5, 'p', 'echo', 'a/echo', 'ok')", (T0,))
    db.execute("COMMIT")
    db.close()
    with InvocationLog(path) as lg:
        assert lg.summary().migrations[-2:] == ("m004_result_size", "m005_credential_host")
        lg.record(rec(T0 + 1, result_chars=2_000_000, result_sections=67, credential="ci", host="h1"))
        rows = [(r.presented_name, r.result_chars, r.result_sections, r.credential, r.host) for r in lg.query()]
    assert rows[0] == ("echo", None, None, None, None) and rows[1][1:] == (2_000_000, 67, "ci", "h1")
