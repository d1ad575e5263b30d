"""First contact: a client that lists once, on a store whose servers were never listed.

A server with no cached listing has nothing to show, so the first `tools/list` waits for it
(bounded by its connect timeout, capped); a cached server never delays a list, and a server
that failed on an earlier start is remembered so that it delays no later one. The gateway runs
in-process (`inproc`); the missing command goes through the real transport.
"""

from __future__ import annotations

import time

import pytest
from gwkit import SLACK, Kit, until
from inproc import Harness

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])     # initialize, discover, neither
async def test_a_client_that_lists_once_sees_every_working_server_and_a_failed_one_delays_no_later_start(
        kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("slow", "--start-delay", "2")                          # a slow starter, never listed
    kit.server("gone", command="/nonexistent/mcp-server")             # its command is missing
    kit.server("stuck", "--start-delay", "600", connect=3.0)          # never answers initialize
    kit.project("p", ["slow", "gone", "stuck"])

    async with gw.client("p", mode) as c:
        t0 = time.monotonic()
        tools = {t.name for t in (await c.list_tools()).tools}        # listed once, like MCP Inspector
        first = time.monotonic() - t0
        assert {"slow__echo", "slow__add"} <= tools, tools
        assert first < 3.0 + 2.0 * SLACK                              # bounded by stuck's connect timeout
        # on a loaded machine slow may come up after stuck's own 3 s ran out, or before: the
        # gateway records stuck as down when its connect timeout has passed, which it awaits
        await until(c, lambda: kit.store.status("Server", "stuck").get("state") == "down", 30 * SLACK)
    status = {n: kit.store.status("Server", n) for n in ("slow", "gone", "stuck")}
    assert status["slow"]["state"] == "up"
    assert status["gone"]["state"] == "down" and "command not found" in status["gone"]["lastError"]
    assert status["stuck"]["state"] == "down"

    # the second start: slow is cached, gone and stuck failed before: the list answers at once
    async with gw.client("p", mode) as c:
        t0 = time.monotonic()
        tools = {t.name for t in (await c.list_tools()).tools}
        assert time.monotonic() - t0 < 1.0 * SLACK
        assert {"slow__echo", "slow__add"} <= tools
    assert kit.leftovers() == []
