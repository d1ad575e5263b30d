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

from client_files import Env
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.clients import jsonc
from mcpctl.errors import EXIT_CONFLICT, EXIT_NOT_FOUND

DEADLINE = 120.0          # seconds; a busy 2-core machine starts Python slowly


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


def read_line(proc: subprocess.Popen[bytes], stream: str, marker: str) -> str:
    """The first line of the child's `stream` holding `marker` (awaited, bounded)."""
    fd = getattr(proc, stream).fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    end = time.monotonic() + DEADLINE
    seen = b""
    while time.monotonic() < end and sel.select(end - time.monotonic()):
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        seen += chunk
        for line in seen.decode(errors="replace").splitlines():
            if marker in line:
                return line
    proc.kill()
    raise AssertionError(f"{marker!r} never came; {stream}: {seen.decode(errors='replace')[-2000:]}")


def test_a_kill_between_the_record_and_the_file_loses_no_replaced_entry(env: Env) -> None:
    path = env.write("cursor")
    original = path.read_bytes()
    assert run("import", "cursor", "--project", "work").exit_code == 0
    proc = subprocess.Popen([sys.executable, "-m", "mcpctl", "connect", "cursor", "--project", "work",
                             "--replace-imported"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "MCPCTL_TEST_PAUSE": "connect:between-writes"})
    try:
        read_line(proc, "stderr", "paused at connect:between-writes")
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
    time.sleep(0.1)                                    # an app writes now and then, not in a spin
print(f"writes={written} lost={lost}", flush=True)
"""


def test_a_client_rewriting_its_file_meanwhile_loses_none_of_its_writes(env: Env) -> None:
    path = env.write("mcp-json", json.dumps({"mcpServers": {"calc": {"command": "calc"}}, "writes": 0}, indent=2))
    run("create", "project", "work")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    codes = []
    try:
        read_line(writer, "stdout", "ready")
        for _ in range(10):
            codes.append(run("connect", "mcp-json", "--project", "work").exit_code)
            codes.append(run("disconnect", "mcp-json").exit_code)
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        summary = read_line(writer, "stdout", "writes=")
        writer.wait(DEADLINE)
    written, lost = (int(part.split("=")[1]) for part in summary.split())
    assert written > 0 and lost == 0, summary
    assert set(codes) <= {0, EXIT_CONFLICT, EXIT_NOT_FOUND} and codes.count(0) >= len(codes) // 4, codes
    doc = json.loads(path.read_text())
    assert doc["writes"] == written and doc["mcpServers"] == {"calc": {"command": "calc"}}
