"""The same rows in SQLite and in PostgreSQL: every query method gives the same answer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mcpctl.audit.log import InvocationLog
from mcpctl.audit.pglog import PgInvocationLog, glob_regex
from mcpctl.audit.records import BREAKDOWNS, SEARCH_TOOL_ID, CallRecord

T0 = 1_800_000_000.0


def _rows(n: int, seed: int = 11) -> list[CallRecord]:
    rng = random.Random(seed)
    tools = [None, "calc/add", "calc/mul", "notes/read", "notes/create", SEARCH_TOOL_ID, "mcpctl/describe"]
    out = []
    for i in range(n):
        cid = rng.choice(tools)
        search = cid == SEARCH_TOOL_ID
        out.append(CallRecord(
            ts=T0 + i * rng.choice([0.25, 1.0, 30.0, 90.0]) + rng.random(), duration_ms=round(rng.uniform(0.1, 900), 3),
            project=rng.choice(["a", "b"]), presented_name="search_tools" if search else (cid or "nope").replace("/", "__"),
            canonical_id=cid, outcome=rng.choice(["ok", "ok", "ok", "tool_error", "timeout", "denied"]),
            error_class=None, client_name=rng.choice([None, "claude", "cursor"]), client_version=None,
            session_id=rng.choice([None, "s1", "s2", "s3", "s4"]), profile=rng.choice([None, "ci"]),
            query=f"q{i}" if search and rng.random() < 0.8 else None,
            result_chars=rng.choice([None, 10, 5000]), result_sections=None,
            credential=rng.choice([None, "alice", "bob"]), host=rng.choice(["gw1", "gw2", "gw3"])))
    return out


@pytest.fixture
def both(tmp_path: Path, pg_db: str) -> tuple[InvocationLog, PgInvocationLog]:
    rows = _rows(1500)
    lite = InvocationLog(tmp_path / "log.db")
    pg = PgInvocationLog(pg_db)
    for start in range(0, len(rows), 500):
        lite.record_many(rows[start:start + 500])
        pg.record_many(rows[start:start + 500])
    yield lite, pg
    lite.close()


def test_every_query_method_agrees(both: tuple[InvocationLog, PgInvocationLog]) -> None:
    lite, pg = both
    mid = T0 + 20_000
    assert lite.query() == pg.query()
    for kw in ({"project": "a", "since": mid}, {"tool_glob": "calc/*"}, {"tool_glob": "notes__[cr]*"},
               {"tool_glob": "n?pe"}, {"tool_glob": "[!c]*"}, {"tool_glob": "*.*"}, {"outcome": "denied", "limit": 7}, {"session_id": "s2", "until": mid},
               {"canonical_id": "calc/add", "limit": 0}):
        assert lite.query(**kw) == pg.query(**kw), kw          # type: ignore[arg-type]
    for project in ("a", "b"):
        assert lite.search_pairs(project) == pg.search_pairs(project)
        assert lite.search_pairs(project, since=mid) == pg.search_pairs(project, since=mid)
        assert lite.search_evidence(project) == pg.search_evidence(project)
        assert lite.search_evidence(project, since=mid, limit=5) == pg.search_evidence(project, since=mid, limit=5)
        assert sorted(lite.usage(project, since=mid), key=repr) == sorted(pg.usage(project, since=mid), key=repr)
        assert sorted(lite.transitions(project, within=45), key=repr) == sorted(
            pg.transitions(project, within=45), key=repr)
    for by in BREAKDOWNS:
        assert lite.breakdown(by) == pg.breakdown(by), by
        assert lite.breakdown(by, project="b", since=mid) == pg.breakdown(by, project="b", since=mid), by
    for a, b in zip(lite.tool_stats(project="a"), pg.tool_stats(project="a"), strict=True):
        assert (a.canonical_id, a.calls, a.errors, a.first_ts, a.last_ts) == (
            b.canonical_id, b.calls, b.errors, b.first_ts, b.last_ts)
        assert (a.p50_ms, a.p95_ms) == pytest.approx((b.p50_ms, b.p95_ms))
    assert lite.count() == pg.count() == 1500
    assert lite.count("a", until=mid) == pg.count("a", until=mid)
    ls, ps = lite.summary(), pg.summary()
    assert (ls.rows, ls.oldest_ts, ls.newest_ts) == (ps.rows, ps.oldest_ts, ps.newest_ts)
    assert ps.migrations[0].startswith("log 1:") and ps.size_bytes > 0
    assert lite.delete_before(mid, project="a") == pg.delete_before(mid, project="a")
    assert lite.query() == pg.query()


def test_glob_regex_matches_what_fnmatch_does() -> None:
    import fnmatch
    import re

    names = ["calc/add", "calc__add", "a.b", "a+b", "x[1]", "notes/read_note", "", "c", "a\\b", "b!c"]
    for pat in ["calc/*", "*", "?", "a.b", "a?b", "[!c]*", "[ab]*", "notes/*_note", "a\\b", "*!*",
                "[", "a["]:
        rx = re.compile(glob_regex(pat))    # PostgreSQL's ARE and Python's agree on what glob_regex makes
        for n in names:
            assert bool(rx.search(n)) == fnmatch.fnmatchcase(n, pat), (pat, n)


def test_db_copy_moves_the_log_both_ways_and_reports_counts(tmp_home: Path, pg_db: str) -> None:
    from typer.testing import CliRunner

    from mcpctl.cli import app

    rows = sorted(_rows(1200), key=lambda r: r.ts)
    with InvocationLog() as lite:
        lite.record_many(rows)
    runner = CliRunner()
    res = runner.invoke(app, ["db", "copy", "--from", "sqlite", "--to", pg_db])
    assert res.exit_code == 0, res.output
    assert "log: 1200 call(s) copied" in res.stderr and "(1200 there now)" in res.stderr
    assert PgInvocationLog(pg_db).query() == rows
    back = tmp_home / "back.db"
    res = runner.invoke(app, ["db", "copy", "--from", pg_db, "--to", str(back)])
    assert res.exit_code == 0, res.output
    with InvocationLog(back) as copy:
        assert copy.query() == rows


def test_logs_reads_the_team_database_and_breaks_down_by_credential_and_host(tmp_home: Path, pg_db: str) -> None:
    import json

    from typer.testing import CliRunner

    from mcpctl.cli import app

    rows = _rows(300)
    PgInvocationLog(pg_db).record_many(rows)
    runner = CliRunner()
    res = runner.invoke(app, ["logs", "--by", "host", "-o", "json"])
    assert res.exit_code == 0, res.output
    got = {r["key"]: r["calls"] for r in json.loads(res.stdout)}
    assert got == {h: sum(1 for r in rows if r.host == h) for h in ("gw1", "gw2", "gw3")}
    res = runner.invoke(app, ["logs", "--by", "credential", "--project", "a"])
    assert res.exit_code == 0 and "alice" in res.stdout and "CREDENTIAL" in res.stdout
    res = runner.invoke(app, ["logs", "-n", "0", "-o", "json"])
    assert len(json.loads(res.stdout)) == 300
    res = runner.invoke(app, ["logs", "--by", "nope"])
    assert res.exit_code != 0 and "--by" in res.output
