"""What `connect` and `disconnect` promise about a client's file beyond its bytes: a kill between
their writes loses nothing, a client writing its own file meanwhile loses no write, an entry the
user wrote under the gateway's name stays, a symlink and its target are one file."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest
from client_files import Env
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.clients import jsonc
from mcpctl.errors import EXIT_CONFLICT, EXIT_NOT_FOUND

DEADLINE = 120.0          # seconds; a busy 2-core machine starts Python slowly


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


class Output:
    """A child's stdout or stderr, read as it comes (awaited, bounded; no sleeps)."""

    def __init__(self, proc: subprocess.Popen[bytes], stream: str) -> None:
        self.proc = proc
        self.fd = getattr(proc, stream).fileno()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)
        self.data = b""

    def _more(self, end: float) -> bool:
        """Read what came; False at the end of the stream or past the deadline."""
        if time.monotonic() >= end or not self.sel.select(end - time.monotonic()):
            return False
        chunk = os.read(self.fd, 65536)
        self.data += chunk
        return bool(chunk)

    def line(self, marker: str, nth: int = 1) -> str:
        """The `nth` line holding `marker`."""
        end = time.monotonic() + DEADLINE
        while True:
            hits = [line for line in self.data.decode(errors="replace").splitlines(keepends=True)
                    if marker in line and line.endswith("\n")]
            if len(hits) >= nth:
                return hits[nth - 1]
            if not self._more(end):
                self.proc.kill()
                raise AssertionError(f"{marker!r} #{nth} never came: {self.data.decode(errors='replace')[-2000:]}")

    def rest(self) -> str:
        """Everything the child wrote, up to the end of the stream."""
        end = time.monotonic() + DEADLINE
        while self._more(end):
            pass
        return self.data.decode(errors="replace")


def paused_connect(*args: str) -> tuple[subprocess.Popen[bytes], Output]:
    """`mcpctl connect ARGS` in a child that stops between its record and the client file."""
    proc = subprocess.Popen([sys.executable, "-m", "mcpctl", "connect", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "MCPCTL_TEST_PAUSE": "connect:between-writes"})
    return proc, Output(proc, "stderr")


def test_a_kill_between_the_record_and_the_file_loses_no_replaced_entry(env: Env) -> None:
    path = env.write("cursor")
    original = path.read_bytes()
    assert run("import", "cursor", "--project", "work").exit_code == 0
    proc, err = paused_connect("cursor", "--project", "work", "--replace-imported")
    try:
        err.line("paused at connect:between-writes")
        proc.kill()
    finally:
        proc.wait(DEADLINE)
    r = run("disconnect", "cursor")
    assert r.exit_code == 0, r.output
    assert path.read_bytes() == original
    # and connect then works as if the killed one had never run
    assert run("connect", "cursor", "--project", "work", "--replace-imported").exit_code == 0
    assert run("disconnect", "cursor").exit_code == 0
    assert path.read_bytes() == original


@pytest.mark.parametrize("app_writes", [1, 8])
def test_a_write_by_the_client_during_connect_is_kept_and_connect_edits_again_or_refuses(
        env: Env, app_writes: int) -> None:
    """The client writes its file while connect is between its read and its write: connect sees
    it, edits the new file again (8 tries), and refuses when the client never stops."""
    path = env.write("mcp-json", json.dumps({"mcpServers": {}, "writes": 0}, indent=2))
    run("create", "project", "work")
    proc, err = paused_connect("mcp-json", "--project", "work")
    assert proc.stdin is not None
    try:
        for n in range(1, app_writes + 1):
            err.line("paused at connect:between-writes", n)
            doc = json.loads(path.read_text())
            path.write_text(json.dumps({**doc, "writes": n}, indent=2))       # the client's own write
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        if app_writes < 8:
            err.line("paused at connect:between-writes", app_writes + 1)
        proc.stdin.close()
        proc.wait(DEADLINE)
    finally:
        proc.kill()
    doc = json.loads(path.read_text())
    assert doc["writes"] == app_writes
    if app_writes < 8:
        assert proc.returncode == 0
        assert set(doc["mcpServers"]) == {"mcpctl"}
        assert run("disconnect", "mcp-json").exit_code == 0
        assert json.loads(path.read_text()) == {"mcpServers": {}, "writes": app_writes}
    else:
        message = err.rest()
        assert proc.returncode == EXIT_CONFLICT and f"{path} changed 8 times" in message, message
        assert "quit the client" in message and "Traceback" not in message
        assert doc["mcpServers"] == {}
        assert run("disconnect", "mcp-json").exit_code == EXIT_NOT_FOUND      # no record left behind


def test_disconnect_leaves_an_entry_the_user_wrote_later_under_the_gateways_name(env: Env) -> None:
    path = env.write("cursor")
    run("import", "cursor", "--project", "work")
    assert run("connect", "cursor", "--project", "work", "--replace-imported").exit_code == 0
    mine = {"command": "my-own-server", "args": ["--port", "1"]}
    path.write_text(jsonc.set_member(path.read_text(), ["mcpServers"], "mcpctl", mine))
    r = run("disconnect", "cursor")
    assert r.exit_code == 0, r.output
    assert "left in place" in r.stdout
    servers = jsonc.loads(path.read_text())["mcpServers"]
    assert servers["mcpctl"] == mine
    assert {"GitHub", "calc", "notes", "remote"} <= set(servers)         # the replaced entries are back
    assert run("disconnect", "cursor").exit_code == EXIT_NOT_FOUND        # the record is gone
    assert jsonc.loads(path.read_text())["mcpServers"]["mcpctl"] == mine


def test_a_file_reached_through_a_symlink_and_through_its_target_is_one_connection(env: Env, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(env.write("cursor").read_text())
    link = env.path("cursor")
    link.unlink()
    link.symlink_to(real)
    original = real.read_bytes()
    run("import", "cursor", "--project", "work")
    assert run("connect", "cursor", "--project", "work", "--replace-imported").exit_code == 0
    again = run("connect", "cursor", "--project", "work", "--file", str(real))
    assert again.exit_code == 0 and "unchanged" in again.stdout
    connections = json.loads((env.mcpctl_home / "state" / "clients" / "connections.json").read_text())["entries"]
    assert list(connections) == [f"cursor|{real}|mcpctl"]
    r = run("disconnect", "cursor", "--file", str(real))
    assert r.exit_code == 0 and "no record" not in r.stderr, r.output
    assert real.read_bytes() == original and link.is_symlink()
    assert run("disconnect", "cursor").exit_code == EXIT_NOT_FOUND


WRITER = r"""
import json, os, select, sys, time
path = sys.argv[1]
written = lost = 0
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:      # until the test closes our stdin
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc["writes"] != written:
        lost += 1                                       # someone replaced the file with an older one
    written += 1
    doc["writes"] = written
    tmp = f"{path}.app.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)                              # as clients do: a whole new file
    time.sleep(0.25)                                   # an app writes now and then, not in a spin
print(f"writes={written} lost={lost}", flush=True)
"""


def test_a_client_rewriting_its_file_meanwhile_loses_none_of_its_writes(env: Env) -> None:
    path = env.write("mcp-json", json.dumps({"mcpServers": {"calc": {"command": "calc"}}, "writes": 0}, indent=2))
    run("create", "project", "work")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    out = Output(writer, "stdout")
    codes = []
    try:
        out.line("ready")
        for _ in range(10):
            codes.append(run("connect", "mcp-json", "--project", "work").exit_code)
            codes.append(run("disconnect", "mcp-json").exit_code)
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        summary = out.line("writes=")
        writer.wait(DEADLINE)
    written, lost = (int(part.split("=")[1]) for part in summary.split())
    assert written > 0 and lost == 0, summary
    assert set(codes) <= {0, EXIT_CONFLICT, EXIT_NOT_FOUND} and codes.count(0) >= len(codes) // 4, codes
    doc = json.loads(path.read_text())
    assert doc["writes"] == written and doc["mcpServers"] == {"calc": {"command": "calc"}}
