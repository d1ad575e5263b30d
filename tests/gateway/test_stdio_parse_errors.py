"""A stdio line that is not JSON, nested 100,000 deep included, gets a JSON-RPC parse error and the
gateway keeps serving: in the early front (the first line) and in the gateway's own front."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from gwkit import MCPCTL, SLACK, SRC_ENV, Kit
from test_early_front import Raw

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


@pytest.mark.anyio
@pytest.mark.parametrize("id_last", [False, True])
async def test_a_100_mb_argument_is_refused_under_its_id_and_the_gateway_keeps_serving(kit: Kit,
                                                                                       id_last: bool) -> None:
    """One stdio message over 4 MiB (the limit HTTP has) is answered at once with an error under its
    own id, wherever the client put the id (the Python SDK first, the TypeScript SDK last), without
    the gateway reading it whole; the next call is served (before: 121 s and 658 MB)."""
    import time

    kit.server("good")
    kit.project("p", ["good"])
    proc = await asyncio.create_subprocess_exec(
        MCPCTL, "serve", "--project", "p", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=1 << 20,
        env={"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV})
    assert proc.stdin is not None and proc.stderr is not None
    c = Raw(proc)
    try:
        c.send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        c.send({"method": "notifications/initialized"})
        c.send({"id": 2, "method": "tools/call", "params": {"name": "good__echo", "arguments": {"text": "hi"}}})
        assert (await c.reply(2))["result"]["content"][0]["text"] == "hi"
        big = b'"' + b"x" * (100 * 1024 * 1024) + b'"'
        params = b'{"name":"good__echo","arguments":{"id":1,"text":' + big + b"}}"
        line = (b'{"method":"tools/call","params":' + params + b',"jsonrpc":"2.0","id":"big"}' if id_last else
                b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":' + params + b"}")
        started = time.monotonic()
        proc.stdin.write(line + b"\n")
        await proc.stdin.drain()
        refused = await c.reply("big", timeout=60)      # type: ignore[arg-type]
        took = time.monotonic() - started
        assert refused["error"]["code"] == -32600, refused
        assert "Request too large: 104,857," in refused["error"]["message"], refused
        assert "4,194,304 bytes" in refused["error"]["message"], refused
        assert took < 10 * SLACK, took
        rss = int(Path(f"/proc/{proc.pid}/status").read_text().split("VmRSS:")[1].split()[0]) // 1024
        assert rss < 250, rss                             # MB: never the whole line in memory
        c.send({"id": 3, "method": "tools/call", "params": {"name": "good__echo", "arguments": {"text": "after"}}})
        assert (await c.reply(3))["result"]["content"][0]["text"] == "after"
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        stderr = (await proc.stderr.read()).decode()
        assert "tools/call request of 104,857," in stderr and "Traceback" not in stderr, stderr[-2000:]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        c.task.cancel()
    assert kit.leftovers() == []


@pytest.mark.anyio
async def test_an_oversized_first_message_read_by_the_early_front_is_refused_too(kit: Kit) -> None:
    """On a second start the early front answers the first messages before the SDK loads; a first
    line over the limit stops it (it never holds more than the limit) and the gateway refuses it."""
    kit.server("good")
    kit.project("p", ["good"])
    env = {"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV}
    hello = {"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    for start in ("first", "second"):
        proc = await asyncio.create_subprocess_exec(
            MCPCTL, "serve", "--project", "p", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=1 << 20, env=env)
        assert proc.stdin is not None
        c = Raw(proc)
        try:
            if start == "second":
                proc.stdin.write(b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"good__echo",'
                                 b'"arguments":{"text":"' + b"x" * (20 * 1024 * 1024) + b'"}}}\n')
            c.send(hello)
            c.send({"method": "notifications/initialized"})
            c.send({"id": 2, "method": "tools/call", "params": {"name": "good__echo", "arguments": {"text": "hi"}}})
            assert (await c.reply(2))["result"]["content"][0]["text"] == "hi"
            assert "result" in await c.reply(1)
            if start == "second":
                refused = await c.reply("big")      # type: ignore[arg-type]
                assert "Request too large: 20,971,6" in refused["error"]["message"], refused
            proc.stdin.close()
            assert await asyncio.wait_for(proc.wait(), 30) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            c.task.cancel()
    assert kit.leftovers() == []
