"""Usage by credential (token name) and by gateway host, everywhere the log is read: `logs --by`,
`favourites suggest --by` and `surface --by` (one seam: cli/_breakdown.py), on both backends:
the SQLite log and the team's PostgreSQL log, with rows written through the gateway's log writer
(`audit.writer.open_writer`: SQLite's BackgroundWriter, PostgreSQL's SpoolingWriter).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mcpctl.audit.records import CallRecord
from mcpctl.cli import app

NOW = time.time()
# (credential, host, tool, how many calls): distinct totals per credential and per host
CALLS = [("alice", "gw1", "a/add", 5), ("alice", "gw2", "a/search", 1), ("bob", "gw2", "b/sum", 3),
         (None, "gw1", "a/add", 1)]
BY_CREDENTIAL = [("alice", 6), ("bob", 3), (None, 1)]
BY_HOST = [("gw1", 6), ("gw2", 4)]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_home: Path) -> str:
    """The log in effect: the SQLite file, or the team database (pg_db makes its URL the one in effect)."""
    if request.param == "postgresql":
        request.getfixturevalue("pg_db")
    return str(request.param)


def _project() -> None:
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.storage import Storage

    store = Storage.open().store
    for server, tools in (("a", ["add", "search"]), ("b", ["sum"])):
        store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                   "spec": {"command": "true"}})
        FilesCache().write_server_tools(server, [{"name": t, "description": f"{t} things", "inputSchema": {"type": "object"}}
                                          for t in tools])
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
               "spec": {"servers": ["a", "b"]}})


def _write_calls() -> None:
    """The calls of CALLS in project p in the last hour, and some the breakdowns must leave out:
    another project's, and p's from 40 days ago (outside every window used here)."""
    from mcpctl.storage import Storage

    def rec(i: int, cred: str | None, host: str, cid: str, project: str = "p", ago: float = 60.0) -> CallRecord:
        return CallRecord(NOW - ago - i, 5.0, project, cid.replace("/", "__"), cid, "ok" if i % 4 else "tool_error",
                          session_id=f"s{i % 3}", credential=cred, host=host)

    storage = Storage.open()
    log, writer = storage.log, storage.writer()
    i = 0
    for cred, host, cid, n in CALLS:
        for _ in range(n):
            writer.submit(rec(i, cred, host, cid))
            i += 1
    writer.submit(rec(i, "carol", "gw3", "a/add", project="other"))
    writer.submit(rec(i + 1, "dave", "gw3", "a/add", ago=40 * 86400.0))
    writer.close()
    assert writer.written == i + 2 and writer.dropped == 0
    log.close()


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[str | None, int]]:
    return [(r["key"], r["calls"]) for r in rows]


def _shares(rows: list[dict[str, Any]]) -> list[float]:
    return [r["share"] for r in rows]


def run(*args: str) -> Any:
    r = CliRunner().invoke(app, list(args), prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    return r


def test_logs_favourites_and_surface_break_usage_down_by_credential_and_host(backend: str) -> None:
    _project()
    _write_calls()

    logs = json.loads(run("logs", "--by", "credential", "--project", "p", "--since", "30d", "-o", "json").stdout)
    assert _pairs(logs) == BY_CREDENTIAL and _shares(logs) == [0.6, 0.3, 0.1]
    assert [r["errors"] for r in logs] == [2, 1, 0]        # calls 0, 4, 8 answered errors: alice 0, 4; bob 8
    assert _pairs(json.loads(run("logs", "--by", "host", "-o", "json").stdout)) == [("gw1", 6), ("gw2", 4),
                                                                                     ("gw3", 2)]

    fav = json.loads(run("favourites", "suggest", "-p", "p", "--by", "credential", "--min-calls", "1",
                         "--min-sessions", "1", "-o", "json").stdout)
    assert fav["by"]["column"] == "credential" and fav["by"]["calls"] == 10 == fav["calls"]
    assert _pairs(fav["by"]["rows"]) == BY_CREDENTIAL and fav["suggested"]
    assert fav["by"]["rows"] == logs                       # one seam: the same rows as `logs --by`
    table = run("favourites", "suggest", "-p", "p", "--by", "host", "--min-calls", "1", "--min-sessions", "1").stdout
    assert "Calls by host over the last 30 days" in table and "10 call(s), 2 value(s)" in table
    assert [line.split()[:3] for line in table.splitlines() if line.startswith("gw")] == [
        ["gw1", "6", "60%"], ["gw2", "4", "40%"]]
    assert table.rstrip().splitlines()[-1].startswith("mcpctl favourites set")   # the line still ends it
    assert "by" not in json.loads(run("favourites", "suggest", "-p", "p", "-o", "json").stdout)

    surf = json.loads(run("surface", "-p", "p", "--by", "host", "-o", "json").stdout)
    assert surf["by"] == {"column": "host", "calls": 10, "rows": surf["by"]["rows"]}
    assert _pairs(surf["by"]["rows"]) == BY_HOST and _shares(surf["by"]["rows"]) == [0.6, 0.4]
    md = run("surface", "-p", "p", "--by", "credential", "-o", "markdown").stdout
    assert "**Calls by credential** (in the last 30 days): 10 call(s)" in md
    assert "| alice | 6 | 60% | 2 |" in md and "| bob | 3 | 30% | 1 |" in md and "| - | 1 | 10% | 0 |" in md
    text = run("surface", "-p", "p", "--by", "credential").stdout
    assert [line.split()[:3] for line in text.splitlines() if line.split()[:1] in (["alice"], ["bob"], ["-"])] == [
        ["alice", "6", "60%"], ["bob", "3", "30%"], ["-", "1", "10%"]]


@pytest.mark.parametrize("command", [["logs"], ["favourites", "suggest", "-p", "p"], ["surface", "-p", "p"]])
def test_an_unknown_by_names_the_flag_and_the_choices(tmp_home: Path, command: list[str]) -> None:
    _project()
    r = CliRunner().invoke(app, [*command, "--by", "token"], prog_name="mcpctl")
    assert r.exit_code == 2 and "--by" in r.output and "credential, host" in r.output, r.output
