"""Everything mcpctl keeps under MCPCTL_HOME is the user's alone (dirs 0700, files 0600), even under
umask 022: the invocation log, the gateway's and upstreams' logs, tokens, client backups and secrets."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from gwkit import Kit, text_of, wait_tools
from test_serve_http import http_client, http_gateway
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl import paths
from mcpctl.cli import app

pytestmark = pytest.mark.anyio

GH_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def loose(home: Path) -> list[str]:
    """Everything under mcpctl's roots that group or others may read, write or enter."""
    found = []
    for root in ("config", "data", "state", "log"):
        top = home / root
        for p in [top, *top.rglob("*")] if top.exists() else []:
            mode = stat.S_IMODE(p.lstat().st_mode)
            if mode & 0o077 and not p.is_symlink():
                found.append(f"{oct(mode)} {p.relative_to(home)}")
    return found


def a_cursor_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME whose Cursor config holds a literal token (import moves it to a secret file)."""
    user = tmp_path / "user"
    (user / ".cursor").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "APPDATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(user)
    (user / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GH_TOKEN}}}}))


async def test_a_full_flow_under_umask_022_leaves_nothing_readable_by_others(
        kit: Kit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpctl.audit.log import InvocationLog

    a_cursor_user(tmp_path, monkeypatch)
    runner = CliRunner()
    with umask(0o022):
        kit.server("alpha")
        kit.project("p", ["alpha"])
        r = runner.invoke(app, ["create", "token", "reader", "-p", "p"], prog_name="mcpctl")
        assert r.exit_code == 0, r.output
        r = runner.invoke(app, ["import", "cursor", "--project", "imported"], prog_name="mcpctl")
        assert r.exit_code == 0, r.output
        r = runner.invoke(app, ["connect", "cursor", "--project", "p"], prog_name="mcpctl")
        assert r.exit_code == 0, r.output
        with http_gateway(kit, "p") as (url, token):
            async with http_client(url, token) as c:
                await wait_tools(c, {"alpha__echo"})
                assert text_of(await c.session.call_tool("alpha__echo", {"text": "hi"})) == "hi"
            deadline = time.monotonic() + 20 * SLACK
            while True:     # the call's row is written by the gateway's log writer
                with InvocationLog() as log:
                    if log.query(project="p"):
                        break
                assert time.monotonic() < deadline, "the call was not logged"
                await anyio.sleep(0.1)
    assert kit.leftovers() == []
    home = kit.home
    for kept in ("data/invocations.db", "log/gateway-p.log", "log/upstreams/alpha.log", "state/tokens/p.token",
                 "state/credentials/reader.json", "config/resources/tokens/reader.yaml", "state/clients/imports.json",
                 "state/secrets"):
        assert (home / kept).exists(), kept
    assert list((home / "state" / "clients" / "backups").iterdir())
    assert loose(home) == []


def test_files_an_older_mcpctl_left_open_are_tightened_when_opened(tmp_home: Path) -> None:
    from mcpctl.audit.log import InvocationLog

    db = paths.invocation_log_path()
    with umask(0o022):
        db.parent.mkdir(parents=True)
        old = sqlite3.connect(db)
        old.execute("PRAGMA journal_mode=WAL")
        old.execute("CREATE TABLE t (x)")
        assert Path(f"{db}-wal").exists()
        assert loose(tmp_home)
        with InvocationLog() as log:
            log.query()
        old.close()
    assert loose(tmp_home) == []


def test_doctor_reports_what_others_can_read_and_how_to_fix_it(tmp_home: Path) -> None:
    import shlex
    import subprocess

    runner = CliRunner()
    assert runner.invoke(app, ["create", "project", "p"], prog_name="mcpctl").exit_code == 0

    def private_check() -> list[dict[str, str]]:
        r = runner.invoke(app, ["doctor", "--no-connect", "-o", "json"], prog_name="mcpctl")
        return [c for c in json.loads(r.stdout)["checks"] if c["check"] == "private"]

    assert private_check() == []
    made = paths.resources_dir() / "projects" / "p.yaml"
    os.chmod(made, 0o644)
    os.chmod(made.parent, 0o755)
    [check] = private_check()
    assert check["status"] == "warn" and "2 of mcpctl's files" in check["message"]
    assert subprocess.run(shlex.split(check["hint"])).returncode == 0
    assert private_check() == [] and loose(tmp_home) == []
