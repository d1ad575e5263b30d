"""Text an upstream controls (tool names and descriptions, errors, server info) reaches the terminal
escaped: ESC, NUL and bidi controls as visible escapes, rich markup as text. JSON stays exact."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.audit.log import CallRecord, InvocationLog
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.resources.store import Store

# clear the screen, a NUL, a right-to-left override and rich markup, in a name and a description
EVIL = "rm\x1b[2J\x00\u202eexe.sh[red]x[/red]"
DESCRIPTION = "Reads\x1b]0;pwned\x07 a file \u2066hidden\u2069 \u202e[bold]loud[/bold]\x9b31m"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def evil(tmp_home: Path) -> str:
    """A project whose one server lists a hostile tool, called twice, with a hostile last error."""
    store = Store()
    store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "evil"},
               "spec": {"transport": "stdio", "command": "true"}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
               "spec": {"servers": ["evil"], "favouriteIndex": {"enabled": True, "tools": [f"evil/{EVIL}"]}}})
    store.set_status("Server", "evil", {"state": "failed", "lastError": f"boom {EVIL}",
                                        "serverInfo": {"name": EVIL, "version": "1"}})
    FilesCache().write_server_tools("evil", [{"name": EVIL, "description": DESCRIPTION,
                                       "inputSchema": {"type": "object"}}])
    now = time.time()
    with InvocationLog() as log:
        log.record_many([CallRecord(now - 60 * i, 3.0, "p", f"evil__{EVIL}", f"evil/{EVIL}", "ok",
                                    client_name=EVIL, session_id=f"s{i}") for i in (1, 2)])
    return f"evil/{EVIL}"


@pytest.mark.parametrize("argv", [
    ["tools", "list", "-p", "p", "-o", "wide"],
    ["tools", "search", "-p", "p", "reads a file"],
    ["logs"],
    ["logs", "stats"],
    ["surface", "-p", "p"],
    ["surface", "-p", "p", "-o", "markdown"],
    ["favourites", "suggest", "-p", "p", "--min-calls", "1"],       # a row (below the floor: one line)
    ["favourites", "list", "-p", "p"],
    ["get", "servers", "-o", "wide"],
    ["describe", "server", "evil"],
], ids=" ".join)
def test_hostile_tool_text_is_shown_escaped_in_every_human_output(evil: str, argv: list[str]) -> None:
    r = CliRunner().invoke(app, argv, prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    shown = r.stdout + r.stderr
    assert RAW.findall(shown) == []
    assert "\\x1b" in shown and "\\u202e" in shown
    assert "[red]x[/red]" in shown or "[bold]loud[/bold]" in shown     # markup is text, not a style


def test_json_output_keeps_the_names_exact(evil: str) -> None:
    r = CliRunner().invoke(app, ["tools", "list", "-p", "p", "-o", "json"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    assert RAW.findall(r.stdout) == []
    assert [row["canonicalId"] for row in json.loads(r.stdout)] == [evil]
    r = CliRunner().invoke(app, ["logs", "-o", "json"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    assert {row["clientName"] for row in json.loads(r.stdout)} == {EVIL}


def test_the_gateways_stderr_shows_upstream_text_escaped_and_its_log_file_keeps_it(
        tmp_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from mcpctl.gateway.run import setup_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        path = setup_logging("p")
        logging.getLogger("mcpctl.gateway").warning("upstream evil: transport error: %s", DESCRIPTION)
        for h in root.handlers:
            h.flush()
        shown = capsys.readouterr().err
        assert RAW.findall(shown) == [] and "\\x1b]0;pwned\\x07" in shown
        assert DESCRIPTION in path.read_text(encoding="utf-8")
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
            h.close()
        for h in saved[0]:
            root.addHandler(h)
        root.setLevel(saved[1])


def test_the_diff_suggest_apply_prints_shows_a_hostile_tool_name_escaped(tmp_home: Path) -> None:
    """The project diff `favourites suggest --apply` prints carries the suggested tool's name: its
    bidi override and escapes are shown escaped (before: raw, so the terminal reversed the line)."""
    name = "read\u202efdp.exe\x1b"
    store = Store()
    store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "evil"},
               "spec": {"transport": "stdio", "command": "true"}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
               "spec": {"servers": ["evil"], "favouriteIndex": {"enabled": True, "tools": ["evil/plain"]}}})
    FilesCache().write_server_tools("evil", [{"name": n, "description": "d", "inputSchema": {"type": "object"}}
                                      for n in ("plain", name)])
    now = time.time()
    with InvocationLog() as log:
        log.record_many([CallRecord(now - 60 * i, 3.0, "p", f"evil__{name}", f"evil/{name}", "ok",
                                    session_id=f"s{i}") for i in (1, 2, 3)])
    r = CliRunner().invoke(app, ["favourites", "suggest", "-p", "p", "--apply", "--min-calls", "1",
                                 "--min-sessions", "1"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    assert "+++ suggested/project/p" in r.stderr, r.stderr
    assert RAW.findall(r.stdout + r.stderr) == [], r.stderr
    assert "+    - \"evil/read\\u202efdp.exe\\e\"" in r.stderr       # YAML escapes ESC itself, not bidi
    assert Store().get("Project", "p")["spec"]["favouriteIndex"]["tools"] == [f"evil/{name}"]   # stored exact
