"""Misbehaving upstreams never take the gateway down or delay the others (loopback, bounded).

Through `mcpctl serve` with upstream processes; where the fault is the upstream's behaviour
rather than its process (a crash that closes the connection, a hang, a slow start, a large
result), also in-process (`front="inproc"`, `inproc`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import anyio
import pytest
from gwkit import MCPCTL, SLACK, Kit, text_of, until, wait_tools
from inproc import Harness
from test_relay_requests import gateway_client

pytestmark = pytest.mark.anyio


def _listed_before(*servers: str) -> None:
    """These servers were listed on an earlier start (a cached listing): no tools/list waits for
    them. A first start's first list does (first contact: test_first_contact.py)."""
    from mcpctl.catalogue.cache import FilesCache

    for s in servers:
        FilesCache().write_server_tools(s, [{"name": "echo", "inputSchema": {"type": "object"}}])


async def _listed_fast(c: object) -> set[str]:
    t0 = time.monotonic()
    tools = (await c.list_tools()).tools  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 0.5 * SLACK, "tools/list must not wait for upstreams"
    return {x.name for x in tools}


async def _good_call_is_fast(c: object) -> None:
    """A healthy upstream answers at once, whatever the others do. (Its listing may be cached, so
    the first call can still wait for it to start: that one is not timed.)"""
    with anyio.fail_after(30 * SLACK):
        await c.session.call_tool("good__echo", {"text": "warm"})  # type: ignore[attr-defined]
    t0 = time.monotonic()
    r = await c.session.call_tool("good__echo", {"text": "still here"})  # type: ignore[attr-defined]
    assert text_of(r) == "still here"
    assert time.monotonic() - t0 < 1.0 * SLACK


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_crash_mid_call_then_restart(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    kit.server("good")
    kit.server("crashy", call=5)
    _listed_before("good", "crashy")
    async with gateway_client(kit, kit.project("p", ["good", "crashy"]), front, mode, gw) as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo", "crashy__crash"})
        t0 = time.monotonic()
        r = await c.session.call_tool("crashy__crash", {})
        assert r.is_error and "crashy" in text_of(r) and "crash" in text_of(r)
        assert time.monotonic() - t0 < 5 * SLACK
        await _good_call_is_fast(c)
        # meanwhile calls fail fast and clearly, then the restarted upstream serves again
        async def back() -> bool:
            nonlocal r
            r = await c.session.call_tool("crashy__echo", {"text": "back"})
            assert r.is_error or text_of(r) == "back"
            assert not r.is_error or "crashy" in text_of(r)
            return not r.is_error

        await until(c, back, 15, 0.2)
        assert text_of(r) == "back"
    assert kit.leftovers() == []
    status = kit.store.status("Server", "crashy")
    assert status["tools"] > 0 and status["lastSeen"]


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_hanging_call_times_out_without_delaying_others(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    kit.server("good")
    kit.server("hangs", call=2)
    _listed_before("good", "hangs")
    async with gateway_client(kit, kit.project("p", ["good", "hangs"]), front, mode, gw) as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo", "hangs__hang"})
        result: dict[str, object] = {}

        async def hang() -> None:
            t0 = time.monotonic()
            result["r"] = await c.session.call_tool("hangs__hang", {})
            result["dt"] = time.monotonic() - t0

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            if front == "inproc":              # the hanging call reached the upstream
                await until(c, lambda: bool(gw.upstreams.seen("hangs").get("hanging")), 10)
            else:
                await anyio.sleep(0.2)
            for _ in range(5):
                await _good_call_is_fast(c)
        r = result["r"]
        assert r.is_error and "hangs" in text_of(r) and "2s" in text_of(r)  # type: ignore[attr-defined]
        assert 1.9 < result["dt"] < 2 + 2 * SLACK  # type: ignore[operator]
        r = await c.session.call_tool("hangs__echo", {"text": "ok"})   # the session stays usable
        assert text_of(r) == "ok"
    assert kit.leftovers() == []


@pytest.mark.slow
async def test_slow_start_does_not_block_the_list(kit: Kit) -> None:
    kit.server("good")
    kit.server("sleepy", "--start-delay", "10", call=2, connect=30)
    _listed_before("good")
    kit.store.set_status("Server", "sleepy", {"state": "down", "lastError": "an earlier start failed"})
    async with kit.client(kit.project("p", ["good", "sleepy"])) as c:
        names = await _listed_fast(c)
        assert not any(n.startswith("sleepy__") for n in names)
        await wait_tools(c, {"good__echo"}, timeout=10)
        await _good_call_is_fast(c)
        assert kit.store.status("Server", "sleepy").get("state") == "connecting"
        await wait_tools(c, {"sleepy__echo"}, timeout=30)
        r = await c.session.call_tool("sleepy__echo", {"text": "awake"})
        assert text_of(r) == "awake"
    assert kit.leftovers() == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_starting_upstream_call_fails_within_its_timeout(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    from mcpctl.catalogue.cache import FilesCache

    kit.server("good")
    kit.server("sleepy", "--start-delay", "10", call=2, connect=30)
    _listed_before("good")
    FilesCache().write_server_tools("sleepy", [{"name": "echo", "inputSchema": {"type": "object"}}])
    async with gateway_client(kit, kit.project("p", ["good", "sleepy"]), front, mode, gw) as c:
        assert "sleepy__echo" in await _listed_fast(c)   # from the cache, at once
        t0 = time.monotonic()
        r = await c.session.call_tool("sleepy__echo", {"text": "x"})
        assert r.is_error and "sleepy" in text_of(r) and "starting" in text_of(r)
        assert time.monotonic() - t0 < 2 + 2 * SLACK
        await _good_call_is_fast(c)
    assert kit.leftovers() == []


async def test_missing_command_and_missing_secret(kit: Kit) -> None:
    from mcpctl.catalogue.cache import FilesCache

    kit.server("good")
    kit.server("ghost", command="definitely-not-a-command-mcpctl")
    kit.server("nosecret", env={"API_TOKEN": "${env:MCPCTL_TEST_UNSET_VAR}"})
    kit.project("p", ["good", "ghost", "nosecret", "unregistered"])
    _listed_before("good")
    FilesCache().write_server_tools("ghost", [{"name": "echo", "inputSchema": {"type": "object"}}])
    FilesCache().write_server_tools("nosecret", [{"name": "echo", "inputSchema": {"type": "object"}}])
    async with kit.client("p") as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo"})
        await _good_call_is_fast(c)
        r = await c.session.call_tool("ghost__echo", {})
        assert r.is_error and "ghost" in text_of(r) and "command not found" in text_of(r)
        r = await c.session.call_tool("nosecret__echo", {})
        assert r.is_error and "nosecret" in text_of(r) and "MCPCTL_TEST_UNSET_VAR" in text_of(r)
    ghost = kit.store.status("Server", "ghost")
    assert ghost["state"] == "down" and "definitely-not-a-command-mcpctl" in ghost["lastError"]
    nosecret = kit.store.status("Server", "nosecret")
    assert nosecret["state"] == "down" and "MCPCTL_TEST_UNSET_VAR" in nosecret["lastError"]
    assert "nosecret" in nosecret["lastError"]
    assert kit.leftovers() == []


async def test_stderr_flood_is_drained(kit: Kit) -> None:
    kit.server("good")
    kit.server("chatty", "--stderr-flood")
    _listed_before("good", "chatty")
    async with kit.client(kit.project("p", ["good", "chatty"])) as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo", "chatty__echo"})
        for i in range(50):
            r = await c.session.call_tool("chatty__echo", {"text": str(i)})
            assert text_of(r) == str(i)
        await _good_call_is_fast(c)
    log = kit.home / "log" / "upstreams" / "chatty.log"
    assert log.stat().st_size > 4 * 1024 * 1024
    assert kit.leftovers() == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_five_megabyte_result(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    kit.server("good")
    kit.server("bulky")
    _listed_before("good", "bulky")
    # the relay itself, whole: results in sections are off here (test_result_sections has them)
    project = kit.project("p", ["good", "bulky"], results={"maxTokens": 0})
    async with gateway_client(kit, project, front, mode, gw) as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo", "bulky__big"})
        async with anyio.create_task_group() as tg:
            got: list[int] = []

            async def big() -> None:
                got.append(len(text_of(await c.session.call_tool("bulky__big", {}))))

            tg.start_soon(big)
            await _good_call_is_fast(c)
        assert got == [5 * 1024 * 1024]
    assert kit.leftovers() == []


async def test_garbage_on_stdout(kit: Kit) -> None:
    kit.server("good")
    kit.server("noisy", "--garbage")
    _listed_before("good", "noisy")
    async with kit.client(kit.project("p", ["good", "noisy"])) as c:
        await _listed_fast(c)
        await wait_tools(c, {"good__echo", "noisy__echo", "noisy__garbage"})
        r = await c.session.call_tool("noisy__garbage", {})
        assert text_of(r) == "after garbage"
        r = await c.session.call_tool("noisy__echo", {"text": "clean"})
        assert text_of(r) == "clean"
        await _good_call_is_fast(c)
    assert kit.leftovers() == []


async def test_sigterm_stops_gateway_and_upstreams(kit: Kit) -> None:
    kit.server("good")
    kit.server("other")
    kit.project("p", ["good", "other"])
    proc = subprocess.Popen([MCPCTL, "serve", "--project", "p"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    try:
        with anyio.fail_after(20 * SLACK):
            # wait until both upstreams run (their processes carry the mark)
            from gwkit import _mark_pids

            while len([p for p in _mark_pids(kit.mark) if p != proc.pid]) < 2:
                await anyio.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        proc.wait(timeout=15 * SLACK)
        assert time.monotonic() - t0 < 10 * SLACK
        assert proc.stdout is not None and proc.stdout.read() == b""   # nothing but protocol on stdout
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers() == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_call_before_first_listing_waits_for_the_upstream(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    kit.server("good")
    async with gateway_client(kit, kit.project("p", ["good"]), front, mode, gw) as c:
        r = await c.session.call_tool("good__echo", {"text": "early"})   # no cache, no list yet
        assert text_of(r) == "early"
        from mcp import MCPError

        with pytest.raises(MCPError, match="Unknown tool: good__nope"):
            await c.session.call_tool("good__nope", {})
