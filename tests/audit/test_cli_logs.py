from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.audit.formats import parse_time
from mcpctl.audit.log import CallRecord, InvocationLog
from mcpctl.cli import app

NOW = 1_800_000_000.0
JSON_KEYS = ["time", "ts", "durationMs", "project", "presentedName", "canonicalId", "outcome",
             "errorClass", "clientName", "clientVersion", "sessionId", "profile", "query",
             "resultChars", "resultSections", "credential", "host"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def seeded(tmp_home: Path) -> list[CallRecord]:
    now = time.time()
    recs = [
        CallRecord(now - 3 * 86400, 4.0, "demo", "notes__create_note", "notes/create_note", "ok",
                   client_name="claude-code", client_version="2.1.332", session_id="sess-1"),
        CallRecord(now - 7200, 12.5, "demo", "calc__add", "calc/add", "tool_error", error_class="ValueError"),
        CallRecord(now - 600, 2.0, "demo", "calc__multiply", "calc/multiply", "ok"),
        CallRecord(now - 60, 1.0, "other", "bogus", None, "denied"),
    ]
    with InvocationLog() as log:
        log.record_many(recs)
    return recs


@pytest.mark.parametrize(("text", "expected"), [
    ("30m", NOW - 1800), ("1h", NOW - 3600), ("2d", NOW - 2 * 86400), ("1w", NOW - 604800),
    ("45s", NOW - 45), ("1.5h", NOW - 5400), (" 10 min ", NOW - 600), ("2D", NOW - 2 * 86400),
    ("2026-11-29T14:00:00Z", dt.datetime(2026, 11, 29, 14, tzinfo=dt.UTC).timestamp()),
    ("2026-11-29T14:00:00+01:00", dt.datetime(2026, 11, 29, 13, tzinfo=dt.UTC).timestamp()),
    ("2026-11-29", dt.datetime(2026, 11, 29).astimezone().timestamp()),
])
def test_parse_time_accepts_durations_and_iso(text: str, expected: float) -> None:
    assert parse_time(text, now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "1y", "h", "-1h", "", "2026-13-01"])
def test_parse_time_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_time(text, now=NOW)


def test_logs_json_has_stable_keys_and_filters(runner: CliRunner, seeded: list[CallRecord]) -> None:
    res = runner.invoke(app, ["logs", "-o", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["canonicalId"] for r in rows] == ["notes/create_note", "calc/add", "calc/multiply", None]
    assert all(list(r) == JSON_KEYS for r in rows)
    assert rows[0]["clientName"] == "claude-code" and rows[0]["time"].endswith("Z")

    def ids(*args: str) -> list[str | None]:
        r = runner.invoke(app, ["logs", "-o", "json", *args])
        assert r.exit_code == 0, r.output
        return [x["canonicalId"] for x in json.loads(r.stdout)]

    assert ids("--since", "1d") == ["calc/add", "calc/multiply", None]
    assert ids("--since", "3h", "--project", "demo") == ["calc/add", "calc/multiply"]
    assert ids("--tool", "calc/*") == ["calc/add", "calc/multiply"]
    assert ids("--tool", "calc/m*", "--limit", "5") == ["calc/multiply"]
    assert ids("--limit", "2") == ["calc/multiply", None]
    assert ids("--outcome", "tool_error") == ["calc/add"]
    assert ids("--until", "1h") == ["notes/create_note", "calc/add"]
    assert ids("--project", "nope") == []


def test_logs_table_goes_to_stdout(runner: CliRunner, seeded: list[CallRecord]) -> None:
    res = runner.invoke(app, ["logs", "--project", "demo"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split()[:4] == ["TIME", "PROJECT", "TOOL", "OUTCOME"]
    assert len(lines) == 4
    assert "tool_error (ValueError)" in lines[2]
    assert "claude-code 2.1.332" in lines[1]


def test_logs_empty_says_so_on_stderr(runner: CliRunner, tmp_home: Path) -> None:
    res = runner.invoke(app, ["logs"])
    assert res.exit_code == 0
    assert res.stdout == ""
    assert "No calls logged yet" in res.stderr
    assert json.loads(runner.invoke(app, ["logs", "-o", "json"]).stdout) == []


@pytest.mark.parametrize(("args", "flag"), [
    (["--since", "yesterday"], "--since"),
    (["--until", "soon"], "--until"),
    (["--outcome", "boom"], "--outcome"),
    (["-o", "yaml"], "--output"),
])
def test_logs_bad_option_names_the_flag(runner: CliRunner, tmp_home: Path, args: list[str], flag: str) -> None:
    res = runner.invoke(app, ["logs", *args])
    assert res.exit_code == 2
    assert flag in res.stderr
    assert res.stdout == ""


def test_logs_path_does_not_create_the_database(runner: CliRunner, tmp_home: Path) -> None:
    res = runner.invoke(app, ["logs", "path"])
    assert res.exit_code == 0
    assert res.stdout == f"{tmp_home / 'data' / 'invocations.db'}\n"
    assert not (tmp_home / "data" / "invocations.db").exists()


def test_logs_status_reports_rows_and_bounds(runner: CliRunner, seeded: list[CallRecord]) -> None:
    res = runner.invoke(app, ["logs", "status", "-o", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["rows"] == 4 and data["sizeBytes"] > 0
    assert data["oldest"] < data["newest"]
    assert data["migrations"] == ["m001_invocations", "m002_indexes", "m003_search_index", "m004_result_size",
                                  "m005_credential_host"]
    table = runner.invoke(app, ["logs", "status"])
    assert table.exit_code == 0
    assert any(line.split()[:2] == ["Rows", "4"] for line in table.stdout.splitlines())


def test_logs_stats_per_tool(runner: CliRunner, seeded: list[CallRecord]) -> None:
    res = runner.invoke(app, ["logs", "stats", "-o", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["canonicalId"] for r in rows] == ["calc/add", "calc/multiply", "notes/create_note"]
    add = rows[0]
    assert (add["calls"], add["errors"], add["errorRate"], add["p50Ms"]) == (1, 1, 1.0, 12.5)
    assert list(add) == ["canonicalId", "calls", "errors", "errorRate", "p50Ms", "p95Ms", "firstCall", "lastCall"]
    recent = json.loads(runner.invoke(app, ["logs", "stats", "--since", "1h", "-o", "json"]).stdout)
    assert [r["canonicalId"] for r in recent] == ["calc/multiply"]
    table = runner.invoke(app, ["logs", "stats", "--project", "demo"])
    assert table.exit_code == 0
    assert table.stdout.splitlines()[0].split()[:3] == ["TOOL", "CALLS", "ERRORS"]
    assert runner.invoke(app, ["logs", "stats", "--since", "soon"]).exit_code == 2


def test_logs_reports_an_unopenable_database(runner: CliRunner, tmp_home: Path) -> None:
    db = tmp_home / "data" / "invocations.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    res = runner.invoke(app, ["logs"])
    assert res.exit_code == 1
    assert f"cannot open the invocation log {db}" in res.stderr
    assert res.stdout == ""


def test_logs_follow_prints_each_new_row_once(runner: CliRunner, seeded: list[CallRecord],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpctl.audit.formats as formats_mod

    late = [
        CallRecord(time.time(), 3.0, "demo", "calc__add", "calc/add", "ok", session_id="s9"),
        # recorded later but stamped earlier (a batch flushed late): still shown
        CallRecord(time.time() - 86400 * 5, 1.0, "demo", "textkit__echo", "textkit/echo", "ok"),
        CallRecord(time.time(), 1.0, "other", "x", None, "denied"),
    ]
    polls: list[int] = []

    def fake_sleep(_: float) -> None:   # a gateway records one call while we wait
        polls.append(1)
        if len(polls) <= len(late):
            with InvocationLog() as log:
                log.record(late[len(polls) - 1])

    monkeypatch.setattr(formats_mod.time, "sleep", fake_sleep)
    res = runner.invoke(app, ["logs", "-f", "--project", "demo", "--limit", "2", "--max-polls", "5",
                              "-o", "json"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert [x["canonicalId"] for x in lines] == ["calc/add", "calc/multiply", "calc/add", "textkit/echo"]
    assert len(polls) == 5

    text = runner.invoke(app, ["logs", "-f", "--tool", "textkit/*", "--max-polls", "0"])
    assert text.exit_code == 0
    assert [line.split("  ")[2] for line in text.stdout.splitlines()] == ["textkit/echo"]


def test_logs_prune_deletes_only_old_calls(runner: CliRunner, seeded: list[CallRecord]) -> None:
    dry = runner.invoke(app, ["logs", "prune", "--older-than", "1d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("1 calls older than")
    with InvocationLog() as log:
        assert log.count() == 4
    res = runner.invoke(app, ["logs", "prune", "--older-than", "1h", "--project", "demo"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("2 calls older than")
    with InvocationLog() as log:
        assert [r.canonical_id for r in log.query()] == ["calc/multiply", None]
    bad = runner.invoke(app, ["logs", "prune", "--older-than", "ages"])
    assert bad.exit_code == 2 and "--older-than" in bad.stderr


def test_logs_backup_writes_a_consistent_copy(runner: CliRunner, seeded: list[CallRecord], tmp_path: Path) -> None:
    dest = tmp_path / "copy" / "log-backup.db"
    res = runner.invoke(app, ["logs", "backup", str(dest)])
    assert res.exit_code == 0, res.output
    assert "Backed up 4 rows" in res.stderr and res.stdout == ""
    with InvocationLog(dest) as copy:
        assert [r.canonical_id for r in copy.query()] == [r.canonical_id for r in seeded]
    again = runner.invoke(app, ["logs", "backup", str(dest)])
    assert again.exit_code == 1 and "already exists" in again.stderr


def test_logs_table_shows_client_supplied_text_literally(runner: CliRunner, tmp_home: Path) -> None:
    with InvocationLog() as log:
        log.record(CallRecord(time.time(), 1.0, "p", "[bold]x[/bold]", None, "protocol_error",
                              error_class="UnknownTool", client_name="[red]evil[/red]", client_version="1"))
    res = runner.invoke(app, ["logs"])
    assert res.exit_code == 0, res.output
    assert "[bold]x[/bold]" in res.stdout and "[red]evil[/red] 1" in res.stdout


def test_logs_says_when_older_calls_were_left_out(runner: CliRunner, seeded: list[CallRecord]) -> None:
    res = runner.invoke(app, ["logs", "--limit", "3"])
    assert res.exit_code == 0
    assert len(res.stdout.splitlines()) == 1 + 3
    assert "the newest 3 calls" in res.stderr
    full = runner.invoke(app, ["logs", "--limit", "4"])
    assert "newest" not in full.stderr and len(full.stdout.splitlines()) == 1 + 4
