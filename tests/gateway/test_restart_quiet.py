"""A gateway restarted over an unchanged upstream is quiet: nothing "changed", no list_changed.

Every section of a server's listing is kept in the catalogue cache, `about` included, and the
gateway starts from all of them, so an upstream that lists what it listed last time changes
nothing (issue 17: every start logged "catalogue of X changed (about); notifying clients").
The gateway runs in-process (`inproc`); its log is read as records (`caplog`).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp.types as t
import pytest
from gwkit import Kit, wait_tools
from inproc import Harness, Running

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


async def _until_up(g: Running, caplog: pytest.LogCaptureFixture, ups: int) -> str:
    """The gateway's log once it reports its upstream up for the `ups`-th time (awaited)."""
    await g.until(lambda: caplog.text.count("upstream alpha up") >= ups, 30)
    return caplog.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_restart_over_an_unchanged_upstream_logs_no_change_and_notifies_nobody(
        kit: Kit, gw: Harness, caplog: pytest.LogCaptureFixture, mode: str) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    caplog.set_level(logging.INFO, logger="mcpctl.gateway")
    async with gw.client("p", mode) as c:
        await wait_tools(c, 1)
        first = await _until_up(c.gw, caplog, 1)
    assert "catalogue of alpha changed (about, prompts, resourceTemplates, resources, tools); notifying clients" \
        in first                                                           # first contact: all new

    seen: list[Any] = []

    async def on_message(msg: Any) -> None:
        if not isinstance(msg, Exception):
            seen.append(msg)

    async with gw.client("p", mode, message_handler=on_message) as c:
        await wait_tools(c, 1)
        second = (await _until_up(c.gw, caplog, 2))[len(first):]
        await c.list_tools()                     # one more round trip after the listing
    assert "changed" not in second, second
    assert not [m for m in seen if isinstance(m, t.ToolListChangedNotification | t.PromptListChangedNotification
                                              | t.ResourceListChangedNotification)]
