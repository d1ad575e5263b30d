"""An upstream's stderr log is rotated while the upstream runs (issue 8, defect 10)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from gwkit import Kit, text_of, wait_tools

from ci_support import SLACK
from mcpctl.upstream import transport as upstream_transport

pytestmark = pytest.mark.anyio

BURST = 15 * 1024 * 1024   # fault_server --stderr-flood writes ~16 MB at once, then a trickle


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


async def test_a_flooding_upstreams_stderr_log_is_rotated_while_it_runs(kit: Kit) -> None:
    limit = upstream_transport.STDERR_ROTATE_BYTES
    assert limit < BURST
    kit.server("chatty", "--stderr-flood")
    log = kit.home / "log" / "upstreams" / "chatty.log"
    old = log.with_suffix(".log.1")
    async with kit.client(kit.project("p", ["chatty"])) as c:
        await wait_tools(c, {"chatty__echo"})
        with anyio.fail_after(20 * SLACK):   # until the burst is written, whichever file holds it
            while _size(log) + _size(old) < BURST:
                await anyio.sleep(0.05)
        assert _size(log) <= limit and _size(old) <= limit, (_size(log), _size(old))
        assert old.read_bytes().endswith(b"\n")       # rotated at a line boundary
        r = await c.session.call_tool("chatty__echo", {"text": "still serving"})
        assert text_of(r) == "still serving"
    assert kit.leftovers() == []
