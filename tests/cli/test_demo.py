"""`mcpctl demo` end to end: the real gateway, the example servers, the SDK client, the log."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.audit.log import InvocationLog
from mcpctl.cli import app
from mcpctl.resources.store import Store

EXPECTED_CALLS = [
    ("notes/create_note", "ok"),
    ("notes/search_notes", "ok"),
    ("calc/add", "ok"),
    ("textkit/slugify", "ok"),
    ("mcpctl/search_tools", "ok"),
    ("notes/create_note", "ok"),      # the search result the demo picked
    ("notes/delete_note", "denied"),  # disabled in the project
]


def test_demo_runs_the_main_job_and_logs_every_call(tmp_home: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["demo", "--timeout", "60"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    for needle in ("1. Registered", "server/notes created", "project/demo created", "protocol 2026-07-28",
                   "3. The agent sees", "notes__create_note", "search_tools", "42", "one-catalogue-many-servers",
                   "is disabled in project 'demo'", "5. Invocation log"):
        assert needle in out, f"{needle!r} missing from:\n{out}"
    assert "delete_note  " not in out.split("4. Calls")[0]  # not listed to the agent
    assert "✗" not in out
    # the favourites first, with the load-bearing instruction, then the suggestions drawn from this run
    listing = out.split("3. The agent sees")[1].split("4. Calls")[0].splitlines()
    names = [line.split()[0] for line in listing[3:] if line.strip()]
    assert names[:5] == ["favourite__create_note", "favourite__search_notes", "favourite__add", "search_tools",
                         "read_result"]
    assert all(n.startswith("all__") for n in names[5:])
    assert "PREFER favourite__<tool> when one fits; use all__<server>__<tool> only if nothing in favourites fits" \
        in out.replace("\n", " ")
    suggested = out.split("6. Favourites from this run's calls")[1]
    assert "flagged: disabled in the project" in suggested and "textkit/slugify" in suggested
    assert "mcpctl favourites set --project demo " in suggested and " textkit/slugify" in suggested

    store = Store()
    assert sorted(store.names("Server")) == ["calc", "notes", "textkit"]
    project = store.get("Project", "demo")
    assert project["spec"]["tools"]["disabled"] == ["notes/delete_note"]
    notes = json.loads((tmp_home / "state" / "examples" / "notes" / "notes.json").read_text())
    assert [n["title"] for n in notes["notes"].values()] == ["Try mcpctl", "Found through search_tools"]

    with InvocationLog() as log:
        rows = log.query(project="demo")
    assert [(r.canonical_id, r.outcome) for r in rows] == EXPECTED_CALLS
    assert {r.client_name for r in rows} == {"mcpctl-demo"}
    assert [r.query for r in rows if r.query] == ["take a note"]   # the project opts in to queries

    # Running it again changes nothing in the store and adds one more run to the log.
    again = runner.invoke(app, ["demo", "--timeout", "60", "--protocol", "legacy", "--cleanup"])
    assert again.exit_code == 0, again.output
    assert "server/notes unchanged" in again.stdout and "project/demo unchanged" in again.stdout
    assert "protocol 2025-11-25" in again.stdout
    assert "search 'take a note' was followed by a call to notes/create_note" in again.stdout
    with InvocationLog() as log:
        assert log.count("demo") == 2 * len(EXPECTED_CALLS)
    # --cleanup removed what the demo registered
    assert Store().names("Server") == [] and Store().names("Project") == []


def test_demo_leaves_a_users_own_server_alone(tmp_home: Path) -> None:
    runner = CliRunner()
    created = runner.invoke(app, ["create", "server", "notes", "--", "my-notes-server", "--flag"])
    assert created.exit_code == 0, created.output
    before = Store().get("Server", "notes")["spec"]
    res = runner.invoke(app, ["demo", "--timeout", "30"])
    assert res.exit_code == 4
    assert "server/notes already exists and was not created by mcpctl demo" in res.stderr
    assert "--home" in res.stderr
    assert res.stdout == ""
    assert Store().get("Server", "notes")["spec"] == before
    assert Store().names("Project") == []


def test_demo_home_option_uses_a_separate_store(tmp_home: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere"
    runner = CliRunner()
    bad = runner.invoke(app, ["demo", "--home", str(other), "--protocol", "bogus"])
    assert bad.exit_code == 2 and "--protocol" in bad.stderr
    assert not other.exists()

    res = runner.invoke(app, ["demo", "--home", str(other), "--timeout", "60"])
    assert res.exit_code == 0, res.output
    assert f"MCPCTL_HOME={other}" in res.stdout
    assert os.environ["MCPCTL_HOME"] == str(tmp_home)       # restored afterwards
    assert Store().names("Server") == []                      # the user's store is untouched
    monkeypatch.setenv("MCPCTL_HOME", str(other))
    assert sorted(Store().names("Server")) == ["calc", "notes", "textkit"]
    with InvocationLog() as log:
        assert log.count("demo") == len(EXPECTED_CALLS)
