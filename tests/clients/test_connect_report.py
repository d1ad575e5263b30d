"""What `connect` and `disconnect` say, read from a `ConnectReport` without the CLI
(`mcpctl.clients.connect_report`): the lines a person reads and the `-o json` object."""

from __future__ import annotations

from pathlib import Path

from mcpctl.clients.connect_report import connect_text, disconnect_text, report_json
from mcpctl.clients.connection import ConnectReport


def _report(**kw: object) -> ConnectReport:
    base: dict[str, object] = {"client": "cursor", "title": "Cursor", "file": Path("/tmp/x/mcp.json"),
                               "name": "mcpctl", "action": "created", "project": "p", "transport": "stdio",
                               "entry": {"command": "/bin/mcpctl", "args": ["serve", "--project", "p"]}}
    return ConnectReport(**{**base, **kw})  # type: ignore[arg-type]


def test_connect_text_names_the_entry_its_file_and_the_undo_line() -> None:
    text = connect_text(_report(backup=Path("/tmp/x/mcp.json.bak"), removed=["github"], kept=["notes (not imported)"]))
    lines = text.splitlines()
    assert lines[0] == "cursor: entry 'mcpctl' created in /tmp/x/mcp.json (stdio: /bin/mcpctl serve --project p)"
    assert "backup: /tmp/x/mcp.json.bak" in lines
    assert "removed (imported; the gateway serves them): github" in lines
    assert "kept notes (not imported)" in lines
    assert lines[-1] == "undo: mcpctl disconnect cursor --file /tmp/x/mcp.json"


def test_a_dry_run_shows_the_entry_and_what_would_run_and_no_undo() -> None:
    text = connect_text(_report(dry_run=True, method="claude", entry={"url": "http://127.0.0.1:8765/mcp"},
                                commands=["claude mcp add-json mcpctl …"]))
    assert text.splitlines() == [
        "cursor: entry 'mcpctl' created (dry run) in Claude Code's user scope (claude mcp) "
        "(http: http://127.0.0.1:8765/mcp)",
        'entry: {"url": "http://127.0.0.1:8765/mcp"}',
        "would run: claude mcp add-json mcpctl …"]


def test_disconnect_text_and_the_json_object() -> None:
    r = _report(action="restored", removed=["github"], backup=Path("/b"))
    assert disconnect_text(r) == ("cursor: entry 'mcpctl' removed; original entries restored (/tmp/x/mcp.json)\n"
                                  "put back: github\nbackup: /b\n")
    assert report_json(r) == {
        "client": "cursor", "file": "/tmp/x/mcp.json", "name": "mcpctl", "action": "restored", "method": "file",
        "project": "p", "transport": "stdio", "entry": r.entry, "dryRun": False, "backup": "/b",
        "removed": ["github"], "kept": [], "commands": [], "warnings": []}
