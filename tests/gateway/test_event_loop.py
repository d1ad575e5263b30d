"""The event loop `mcpctl serve` runs on (`mcpctl.eventloop`): uvloop where installed, asyncio's
with `MCPCTL_EVENT_LOOP=asyncio`, and a clear error for anything else. The loop in use is read
from the running gateway's memory map (the uvloop extension loaded or not), after a real call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from gwkit import MCPCTL, SRC_ENV, Kit, stop

from ci_support import SLACK
from mcpctl import eventloop
from mcpctl.errors import MCPCtlError


def test_choice_from_the_environment() -> None:
    assert eventloop.chosen({}) == "uvloop"                       # a dependency where CI runs
    assert eventloop.chosen({"MCPCTL_EVENT_LOOP": " UVLOOP "}) == "uvloop"
    assert eventloop.chosen({"MCPCTL_EVENT_LOOP": "asyncio"}) == "asyncio"
    assert eventloop.backend_options({"MCPCTL_EVENT_LOOP": "asyncio"}) == {"use_uvloop": False}
    assert eventloop.backend_options({}) == {"use_uvloop": True}
    with pytest.raises(MCPCtlError) as bad:
        eventloop.chosen({"MCPCTL_EVENT_LOOP": "trio"})
    assert bad.value.message == "MCPCTL_EVENT_LOOP='trio': not an event loop mcpctl knows"
    assert bad.value.hint is not None and "uvloop, asyncio" in bad.value.hint


def test_uvloop_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = eventloop.importlib.util.find_spec
    monkeypatch.setattr(eventloop.importlib.util, "find_spec",
                        lambda name, *a: None if name == "uvloop" else real(name, *a))
    assert eventloop.chosen({}) == "asyncio"                      # not installed: asyncio's, quietly
    with pytest.raises(MCPCtlError) as missing:
        eventloop.chosen({"MCPCTL_EVENT_LOOP": "uvloop"})        # insisted on: an error, not a quiet fallback
    assert "uvloop is not installed" in missing.value.message


def _serve(kit: Kit, project: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([MCPCTL, "serve", "--project", project], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark,
                                 **SRC_ENV, **env})


def _ask(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    reply: dict[str, Any] = json.loads(proc.stdout.readline())
    return reply


def _loop_in(proc: subprocess.Popen[bytes]) -> str:
    """Which loop the gateway answers on: after initialize and a relayed call, is uvloop's extension mapped?"""
    init = _ask(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert init["result"]["serverInfo"]["name"] == "mcpctl"
    assert proc.stdin is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    call = _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "alpha__echo", "arguments": {"text": "hi"}}})
    assert call["result"]["content"][0]["text"] == "hi", call
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    return "uvloop" if "/uvloop/loop." in maps else "asyncio"


@pytest.mark.parametrize(("env", "expected"), [({}, "uvloop"), ({"MCPCTL_EVENT_LOOP": "asyncio"}, "asyncio")])
def test_serve_runs_on_the_chosen_loop(kit: Kit, env: dict[str, str], expected: str) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    proc = _serve(kit, project, env)
    try:
        assert _loop_in(proc) == expected
    finally:
        stop(proc, timeout=30)
    assert not kit.leftovers()


def test_serve_refuses_an_unknown_loop(kit: Kit) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    proc = _serve(kit, project, {"MCPCTL_EVENT_LOOP": "trio"})
    out, err = proc.communicate(b"", timeout=60 * SLACK)
    assert proc.returncode == 1
    assert out == b""                                   # nothing on stdout but protocol: here, nothing
    assert err.decode().startswith("error: MCPCTL_EVENT_LOOP='trio': not an event loop mcpctl knows"), err
    assert not kit.leftovers()                          # no upstream was started


def test_doctor_says_which_loop(kit: Kit) -> None:
    """`mcpctl doctor` names the loop gateways will run on, and fails on a value `serve` would refuse."""
    def doctor(env: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
        r = subprocess.run([MCPCTL, "doctor", "--no-connect", "-o", "json"], capture_output=True, text=True,
                           timeout=60 * SLACK, stdin=subprocess.DEVNULL,
                           env={**os.environ, "MCPCTL_HOME": str(kit.home), **SRC_ENV, **env})
        return r.returncode, [c for c in json.loads(r.stdout)["checks"] if c["check"] == "loop"]

    code, loop = doctor({})
    assert code == 0 and [(c["status"], c["message"]) for c in loop] == [("ok", "gateways run on uvloop")]
    code, loop = doctor({"MCPCTL_EVENT_LOOP": "asyncio"})
    assert code == 0 and [(c["status"], c["message"]) for c in loop] == [
        ("info", "gateways run on asyncio's event loop (MCPCTL_EVENT_LOOP=asyncio)")]
    code, loop = doctor({"MCPCTL_EVENT_LOOP": "trio"})
    assert code == 1 and [(c["status"], c["message"]) for c in loop] == [
        ("fail", "MCPCTL_EVENT_LOOP='trio': not an event loop mcpctl knows")]
