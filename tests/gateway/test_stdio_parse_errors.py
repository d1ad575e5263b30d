"""A stdio line that is not JSON, nested 100,000 deep included, gets a JSON-RPC parse error and the
gateway keeps serving: in the early front (the first line) and in the gateway's own front."""

from __future__ import annotations

import asyncio
import os

import pytest
from gwkit import MCPCTL, SRC_ENV, Kit
from test_early_front import Raw

from ci_support import SLACK

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' + DEEP + b"}"
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


@pytest.mark.anyio
async def test_lines_nested_too_deep_get_a_parse_error_and_the_gateway_keeps_serving(kit: Kit) -> None:
    kit.project("p", [])
    proc = await asyncio.create_subprocess_exec(
        MCPCTL, "serve", "--project", "p", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV})
    assert proc.stdin is not None
    c = Raw(proc)
    try:
        proc.stdin.write(DEEP + b"\n")          # the very first line: the early front reads it
        c.send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        c.send({"method": "notifications/initialized"})
        c.send({"id": 2, "method": "ping"})
        assert (await c.reply(2))["result"] == {}
        # the session is up: the gateway's own front (its hot path for tools/) reads these
        proc.stdin.write(DEEP_CALL + b"\n" + DEEP + b"\nnot json\n")
        c.send({"id": 3, "method": "ping"})
        assert (await c.reply(3))["result"] == {}
        assert "result" in (await c.reply(1))
        assert [m for m in c.lines if m.get("error")] == [PARSE_ERROR] * 4
        assert proc.returncode is None
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30 * SLACK) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        c.task.cancel()
    assert kit.leftovers() == []
