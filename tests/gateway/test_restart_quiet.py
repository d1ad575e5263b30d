"""A gateway restarted over an unchanged upstream is quiet: nothing "changed", no list_changed.

Every section of a server's listing is kept in the catalogue cache, `about` included, and the
gateway starts from all of them, so an upstream that lists what it listed last time changes
nothing (issue 17: every start logged "catalogue of X changed (about); notifying clients").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, wait_tools

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


async def _until_up(log: Path, ups: int) -> str:
    """The gateway log once it reports its upstream up for the `ups`-th time (bounded)."""
    with anyio.fail_after(30):
        while True:
            text = log.read_text() if log.exists() else ""
            if text.count("upstream alpha up") >= ups:
                return text
            await anyio.sleep(0.05)


async def test_a_restart_over_an_unchanged_upstream_logs_no_change_and_notifies_nobody(kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    log = kit.home / "log" / "gateway-p.log"
    async with kit.client("p") as c:
        await wait_tools(c, 1)
        first = await _until_up(log, 1)
    assert "catalogue of alpha changed (about, prompts, resourceTemplates, resources, tools); notifying clients" \
        in first                                                           # first contact: all new

    seen: list[Any] = []

    async def on_message(msg: Any) -> None:
        if not isinstance(msg, Exception):
            seen.append(msg)

    async with kit.client("p", message_handler=on_message) as c:
        await wait_tools(c, 1)
        second = (await _until_up(log, 2))[len(first):]
        await c.list_tools()                     # one more round trip after the listing
    assert "changed" not in second, second
    assert not [m for m in seen if isinstance(m, t.ToolListChangedNotification | t.PromptListChangedNotification
                                              | t.ResourceListChangedNotification)]
