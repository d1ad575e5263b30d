"""Tables that keep their names (issue 32): `get servers|projects [-o wide]` at 80, 120 and 160
columns and piped, and `--help` of every command at 80 columns and piped.

Identifying and state columns (NAME, STATE, TOOLS, SIGN-IN, AGE, PRESENTATION) are never cut or
dropped; free text (TARGET, LAST ERROR, DESCRIPTION) gives way first, then wraps; piped output is
not cut at all. The width is what `_tables.terminal_width` says (patched here; one test runs the
real command on a real terminal of 120 columns).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import _tables, app
from mcpctl.presentation import tables
from mcpctl.resources.store import Store

MCPCTL = str(Path(sys.executable).parent / "mcpctl")

LONG = "weather-forecast-service"
DESCRIPTION = "A long description of the weather service that tells the forecast for every city in the world"
ERROR = "connection refused by 127.0.0.1:9 while opening the streamable HTTP session (retrying in 30 s)"


def run(runner: CliRunner, *args: str) -> str:
    r = runner.invoke(app, list(args), prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.fixture
def store(runner: CliRunner, tmp_path: Path) -> None:
    run(runner, "create", "server", "calc", "--no-check", "--description", "Arithmetic and statistics", "--",
        "mcpctl", "example-server", "calc")
    manifest = tmp_path / "remote.yaml"
    manifest.write_text(f"apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: {LONG}}}\nspec:\n"
                        f"  transport: http\n  url: http://127.0.0.1:9/mcp\n  auth: {{type: oauth}}\n"
                        f"  description: {DESCRIPTION}\n")
    run(runner, "apply", "-f", str(manifest))
    Store().set_status("Server", LONG, {"state": "down", "lastError": ERROR, "protocolVersion": "2025-11-25"})
    Store().set_status("Server", "calc", {"state": "up", "tools": 5, "protocolVersion": "2025-11-25"})
    run(runner, "create", "project", "writing", "--server", "calc", "--server", LONG,
        "--favourite", "calc/add", "--description", DESCRIPTION, "--allow-missing")


def _at(monkeypatch: pytest.MonkeyPatch, width: int | None) -> None:
    monkeypatch.setattr(_tables, "terminal_width", lambda: width)


def _header(text: str) -> list[str]:
    return re.split(r"\s{2,}", text.splitlines()[0].strip())


def _rows(text: str) -> list[dict[str, str]]:
    """Each row's first line, cut at the header's column starts (a kept column never wraps)."""
    head = text.splitlines()[0]
    starts = [m.start() for m in re.finditer(r"(?:(?<=  )|^)\S", head)]
    names = _header(text)
    rows = []
    for line in text.splitlines()[1:]:
        if line[:1] == " " or not line.strip():      # a wrapped line of free text
            continue
        bounds = [*starts, len(line) + 1]
        rows.append({n: line[bounds[i]:bounds[i + 1]].strip() for i, n in enumerate(names)})
    return rows


@pytest.mark.parametrize("width", [80, 120, 160])
def test_get_servers_keeps_names_and_state_at_every_width(runner: CliRunner, store: None, width: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, width)
    for args, header in ((["get", "servers"], ["NAME", "TRANSPORT", "TARGET", "STATE", "TOOLS", "AGE"]),
                         (["get", "servers", "-o", "wide"], ["NAME", "TRANSPORT", "TARGET", "STATE", "TOOLS", "AGE",
                                                            "PROTOCOL", "SIGN-IN", "LAST ERROR", "DESCRIPTION"])):
        text = run(runner, *args)
        assert _header(text) == header, text
        assert "…" not in text and "..." not in text, text
        rows = _rows(text)
        assert [r["NAME"] for r in rows] == ["calc", LONG], text
        assert [(r["STATE"], r["TOOLS"]) for r in rows] == [("up", "5"), ("down", "-")], text
        assert all(re.fullmatch(r"\d+[smhd]", r["AGE"]) for r in rows), text
        if "wide" in args:
            assert [r["SIGN-IN"] for r in rows] == ["-", "signed-out"], text
        if width >= 120 or "wide" not in args:      # free text gave way: the table fits the terminal
            assert max(len(line.rstrip()) for line in text.splitlines()) <= width, text
        free_words = set(" ".join(text.split()).split())
        assert set(DESCRIPTION.split()) <= free_words if "wide" in args else True   # wrapped, not cut


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_get_projects_wide_keeps_every_identifying_column(runner: CliRunner, store: None, width: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, width)
    text = run(runner, "get", "projects", "-o", "wide")
    assert _header(text) == ["NAME", "SERVERS", "PRESENTATION", "FAVOURITES", "DISABLED", "AGE", "SEARCH", "NAMES",
                             "DESCRIPTION"], text
    (row,) = _rows(text)
    assert row["NAME"] == "writing" and row["PRESENTATION"] == "favourite-index", text
    assert (row["FAVOURITES"], row["DISABLED"], row["SEARCH"], row["NAMES"]) == ("1", "0", "auto top5", "portable/48")
    assert "…" not in text, text
    if width >= 100:
        assert max(len(line.rstrip()) for line in text.splitlines()) <= width, text


def test_piped_tables_cut_nothing(runner: CliRunner, store: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, None)
    text = run(runner, "get", "servers", "-o", "wide")
    lines = text.splitlines()
    assert len(lines) == 3, text                                    # one line per server: nothing wraps
    assert DESCRIPTION in lines[2] and ERROR in lines[2], text
    assert "writing" in run(runner, "get", "projects", "-o", "wide").splitlines()[1]


def test_layout_narrows_free_text_only_and_never_below_its_floor() -> None:
    cols = [tables.Column("NAME"), tables.free("TARGET"), tables.Column("STATE"), tables.free("DESCRIPTION")]
    natural = [30, 40, 7, 90]
    assert tables.layout(cols, natural, None) == natural
    assert tables.layout(cols, natural, 200) == natural
    narrowed = tables.layout(cols, natural, 120)
    assert narrowed[0] == 30 and narrowed[2] == 7 and sum(narrowed) + 6 <= 120
    assert narrowed[1] >= tables.FREE_FLOOR and narrowed[3] >= tables.FREE_FLOOR
    assert tables.layout(cols, natural, 20) == [30, 10, 7, 11]      # wider than the terminal: it wraps lines


def _real_terminal(columns: int, *args: str) -> str:
    """`mcpctl ARGS` with stdout on a pseudo-terminal of `columns` columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([MCPCTL, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:             # EIO: the process closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        proc.wait(timeout=30 * SLACK)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 120, 160])
def test_get_servers_on_a_real_terminal(store: None, columns: int) -> None:
    """The real command on a terminal of that width (the width found as a user's shell gives it)."""
    for args in (["get", "servers"], ["get", "servers", "-o", "wide"]):
        text = _real_terminal(columns, *args)
        assert _header(text)[:1] == ["NAME"] and ("SIGN-IN" in _header(text)) == ("wide" in args), text
        assert [r["NAME"] for r in _rows(text)] == ["calc", LONG] and "…" not in text, text
        if columns >= 120 or "wide" not in args:
            assert max(len(line.rstrip()) for line in text.splitlines()) <= columns, text


def test_piped_output_of_the_real_command_is_whole(store: None) -> None:
    r = subprocess.run([MCPCTL, "get", "servers", "-o", "wide"], capture_output=True, text=True,
                       timeout=60 * SLACK, stdin=subprocess.DEVNULL)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 3, r.stdout + r.stderr
    assert lines[2].startswith(LONG) and lines[2].rstrip().endswith(DESCRIPTION) and ERROR in lines[2], r.stdout


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, group)]
    for name, cmd in getattr(group, "commands", {}).items():
        if not cmd.hidden:
            found += _commands(cmd, (*path, name))
    return found


@pytest.mark.parametrize("columns", ["80", None])
def test_help_never_cuts_an_option_name_or_default(runner: CliRunner, columns: str | None) -> None:
    env = {"COLUMNS": columns} if columns else {"COLUMNS": ""}       # piped: rich's own default width
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 40
    for path, cmd in commands:
        r = runner.invoke(app, [*path, "--help"], prog_name="mcpctl", env=env)
        assert r.exit_code == 0, (path, r.output)
        cut = re.search(r"\S…[ ]*(?:│|$)", r.output, re.MULTILINE)     # rich's ellipsis ends a cut cell
        assert not cut, (path, cut, r.output)
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-"):
                    assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", r.output), (path, opt, r.output)
