"""No process of an upstream outlives the gateway or the upstream's restart (issue 8, defect 2).

Each upstream here is `sh -c 'sleep 600 & exec python fault_server.py …'`: the direct child
(the server) exits by itself when its stdin closes, and its background `sleep` must not survive
it. Every process the upstream starts carries the kit's mark, so `kit.leftovers()` finds it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from gwkit import FAULT_SERVER, MCPCTL, SLACK, Kit, _alive, _mark_pids, free_port, text_of, wait_tools

pytestmark = pytest.mark.anyio

WRAP = 'sleep 600 & exec "$0" "$@"'
# A background child that ignores SIGTERM: only SIGKILL ends it.
WRAP_STUBBORN = '(trap "" TERM; exec sleep 600) & exec "$0" "$@"'


def wrapped_server(kit: Kit, name: str, script: str = WRAP, *args: str) -> str:
    return kit.server(name, "-c", script, sys.executable, str(FAULT_SERVER), "--name", name, *args,
                      command="/bin/sh")


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def sleepers(kit: Kit) -> list[int]:
    """The live background `sleep 600` processes of this kit's upstreams."""
    return [p for p in _mark_pids(kit.mark) if _alive(p) and _cmdline(p)[:2] == ["sleep", "600"]]


async def wait_up(kit: Kit, server: str, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """Until the gateway reports `server` up (its status file) and its background child runs."""
    with anyio.fail_after(timeout * SLACK):
        while kit.store.status("Server", server).get("state") != "up" or not sleepers(kit):
            assert proc.poll() is None, "the gateway exited"
            await anyio.sleep(0.05)


def serve(kit: Kit, project: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([MCPCTL, "serve", "--project", project, *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})


async def wait_exit(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    with anyio.fail_after(timeout):
        while proc.poll() is None:
            await anyio.sleep(0.05)


@pytest.mark.parametrize("how", ["stdin-eof", "SIGTERM", "SIGINT", "SIGHUP"])
async def test_stdio_gateway_exit_leaves_no_upstream_process(kit: Kit, how: str) -> None:
    wrapped_server(kit, "wrap")
    proc = serve(kit, kit.project("p", ["wrap"]))
    try:
        await wait_up(kit, "wrap", proc)
        if how == "stdin-eof":
            assert proc.stdin is not None
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        await wait_exit(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers(timeout=5) == []


async def test_http_gateway_sigterm_leaves_no_upstream_process(kit: Kit) -> None:
    wrapped_server(kit, "wrap")
    proc = serve(kit, kit.project("p", ["wrap"]), "--transport", "http", "--port", str(free_port()))
    try:
        await wait_up(kit, "wrap", proc)
        proc.send_signal(signal.SIGTERM)
        await wait_exit(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers(timeout=5) == []


async def test_a_background_child_that_ignores_sigterm_is_killed(kit: Kit) -> None:
    wrapped_server(kit, "stubborn", WRAP_STUBBORN)
    proc = serve(kit, kit.project("p", ["stubborn"]))
    try:
        await wait_up(kit, "stubborn", proc)
        assert proc.stdin is not None
        proc.stdin.close()
        await wait_exit(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers(timeout=5) == []


async def test_restart_ends_the_crashed_upstreams_background_children(kit: Kit) -> None:
    wrapped_server(kit, "wrap")
    async with kit.client(kit.project("p", ["wrap"])) as c:
        await wait_tools(c, {"wrap__crash", "wrap__echo"})
        with anyio.fail_after(10 * SLACK):
            while not (before := sleepers(kit)):
                await anyio.sleep(0.05)
        r = await c.session.call_tool("wrap__crash", {})
        assert r.is_error
        with anyio.fail_after(10 * SLACK):     # the restarted upstream serves again
            while True:
                r = await c.session.call_tool("wrap__echo", {"text": "back"})
                if not r.is_error:
                    break
                await anyio.sleep(0.1)
        assert text_of(r) == "back"
        with anyio.fail_after(5 * SLACK):      # the crashed one's `sleep` went with it
            while any(_alive(p) for p in before):
                await anyio.sleep(0.05)
        after = sleepers(kit)
        assert len(after) == 1 and not set(after) & set(before)
    assert kit.leftovers(timeout=5) == []


async def test_a_killed_gateways_upstream_processes_are_ended(kit: Kit) -> None:
    """kill -9 of the gateway: its guard process ends every upstream's process group."""
    wrapped_server(kit, "wrap")
    wrapped_server(kit, "other")
    proc = serve(kit, kit.project("p", ["wrap", "other"]))
    try:
        await wait_up(kit, "wrap", proc)
        await wait_up(kit, "other", proc)
        proc.kill()
        await wait_exit(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers(timeout=6) == []
