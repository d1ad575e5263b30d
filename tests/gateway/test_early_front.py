"""The early stdio front answers the first messages from the last run's record and the cache,
exactly as the SDK-based gateway would, in both protocol eras, and hands over cleanly.

Every wait is bounded by a time that scales with the machine's load (`SLACK`), and what "nothing
more was sent" means is read at the gateway's exit (its stdout at EOF), never after a fixed sleep."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gwkit import MCPCTL, SRC_ENV, Kit

from ci_support import SLACK

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


class Raw:
    """A newline-delimited JSON-RPC client that keeps every line the gateway sent."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.arrived = asyncio.Event()          # set at each line (cleared by whoever waits for one)
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)       # nothing but protocol on stdout
            self.lines.append(msg)
            if msg.get("method") == "notifications/tools/list_changed":
                self.changed.set()
            self.arrived.set()

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")

    async def reply(self, rid: int, timeout: float = 30) -> dict[str, Any]:
        """The answer to request `rid`, awaited line by line (within `timeout` times the load's slack)."""
        async def wait() -> dict[str, Any]:
            while True:
                self.arrived.clear()
                for m in self.lines:
                    if m.get("id") == rid and ("result" in m or "error" in m):
                        return m
                if self.task.done():
                    raise AssertionError(f"the gateway closed its stdout without answering {rid}")
                await self.arrived.wait()
        return await asyncio.wait_for(wait(), timeout * SLACK)

    async def close(self) -> None:
        """Close the gateway's stdin and wait for it to exit and for its stdout to end: every line it
        ever sent is in `lines` then."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 20 * SLACK)
        await asyncio.wait_for(self.task, 20 * SLACK)

    def count(self, rid: int) -> int:
        return sum(1 for m in self.lines if m.get("id") == rid and ("result" in m or "error" in m))


async def _session(kit: Kit, project: str, era: str, expect_tools: int) -> dict[str, Any]:
    """Handshake, list until complete, call echo, ping; returns what the gateway answered."""
    proc = await asyncio.create_subprocess_exec(
        MCPCTL, "serve", "--project", project, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV})
    c = Raw(proc)
    out: dict[str, Any] = {}
    meta = {"_meta": ENVELOPE} if era == "modern" else {}
    try:
        if era == "legacy":
            c.send({"id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
            c.send({"method": "notifications/initialized"})
        else:
            c.send({"id": 1, "method": "server/discover", "params": meta})
        out["hello"] = (await c.reply(1))["result"]
        rid = 2
        deadline = time.monotonic() + 10 * SLACK        # the upstreams' first listing, then a list_changed
        while True:
            c.send({"id": rid, "method": "tools/list", "params": meta})
            listed = (await c.reply(rid))["result"]
            rid += 1
            if len(listed["tools"]) >= expect_tools:
                break
            assert time.monotonic() < deadline, f"{len(listed['tools'])} of {expect_tools} tools listed"
            with contextlib.suppress(TimeoutError):     # the list changes: re-list then, or after a moment
                await asyncio.wait_for(c.changed.wait(), 0.1 * SLACK)
            c.changed.clear()
        out["list"] = listed
        c.send({"id": rid, "method": "tools/call", "params": {"name": "alpha__echo", "arguments": {"text": "hi"},
                                                              **meta}})
        out["call"] = (await c.reply(rid))["result"]
        c.send({"id": rid + 1, "method": "ping", "params": meta})
        out["ping"] = await c.reply(rid + 1)
        out["ping"].pop("id")
    finally:
        await c.close()
    out["duplicates"] = [i for i in range(1, rid + 2) if c.count(i) > 1]     # all it sent, read to EOF
    return out


def _answered_early(home: Path, project: str) -> list[str]:
    logs = list(home.rglob(f"gateway-{project}.log"))
    return [line for p in logs for line in p.read_text().splitlines() if "early front:" in line]


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_early_answers_equal_the_sdks(kit: Kit, era: str) -> None:
    kit.server("alpha")
    kit.server("beta")
    project = kit.project("p", ["alpha", "beta"])
    first = await _session(kit, project, era, 29)     # records initialize/discover, fills the cache
    assert _answered_early(kit.home, project) == []
    second = await _session(kit, project, era, 29)
    early = _answered_early(kit.home, project)
    assert early and "answered there" in early[-1] and " 0 answered" not in early[-1]
    logs = "".join(p.read_text() for p in kit.home.rglob(f"gateway-{project}.log"))
    assert "differed from the SDK" not in logs and "SDK refused" not in logs
    for key in ("hello", "list", "ping"):
        assert second[key] == first[key], key
    assert second["call"]["content"][0]["text"] == first["call"]["content"][0]["text"]
    assert second["duplicates"] == [] and first["duplicates"] == []
    if era == "modern":
        assert second["list"]["resultType"] == "complete"
        assert second["list"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpctl"
        assert second["hello"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpctl"
    else:
        assert second["hello"]["protocolVersion"] == "2025-11-25"
        assert "resultType" not in second["list"]
    assert kit.leftovers() == []


@pytest.mark.anyio
async def test_a_changed_project_is_not_answered_from_an_old_record(kit: Kit) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    await _session(kit, project, "legacy", 15)
    kit.project("p", ["alpha"], search={"enabled": False})
    again = await _session(kit, project, "legacy", 14)
    assert "search_tools" not in again["hello"].get("instructions", "")
    assert "search_tools" not in {t["name"] for t in again["list"]["tools"]}
    assert kit.leftovers() == []


def test_early_module_loads_no_sdk() -> None:
    import subprocess

    code = ("import sys, mcpctl.gateway.early; "
            "print(','.join(m for m in ('mcp', 'anyio', 'asyncio', 'pydantic') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK, check=True)
    assert r.stdout.strip() == ""


async def _spawn(kit: Kit, project: str) -> Raw:
    proc = await asyncio.create_subprocess_exec(
        MCPCTL, "serve", "--project", project, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "PATH": os.environ["PATH"], **SRC_ENV})
    return Raw(proc)


async def _close(c: Raw) -> None:
    await c.close()


@pytest.mark.anyio
async def test_pipelined_and_unrecorded_requests_are_answered_once_in_order(kit: Kit) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    await _session(kit, project, "legacy", 15)     # record + cache
    init = {"capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    # an unrecorded version: the SDK negotiates it; nothing is answered early
    c = await _spawn(kit, project)
    try:
        c.send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", **init}})
        c.send({"method": "notifications/initialized"})
        c.send({"id": 2, "method": "tools/list"})
        assert (await c.reply(1))["result"]["protocolVersion"] == "2025-06-18"
        assert len((await c.reply(2))["result"]["tools"]) == 16
    finally:
        await _close(c)
    # everything at once, a call among the early messages: each answered exactly once
    c = await _spawn(kit, project)
    try:
        c.send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", **init}})
        c.send({"method": "notifications/initialized"})
        c.send({"id": 2, "method": "tools/list"})
        c.send({"id": 3, "method": "tools/call", "params": {"name": "alpha__echo", "arguments": {"text": "x1"}}})
        c.send({"id": 4, "method": "tools/list"})
        c.send({"id": 5, "method": "ping"})
        assert (await c.reply(1))["result"]["protocolVersion"] == "2025-11-25"
        assert len((await c.reply(2))["result"]["tools"]) == 16
        assert (await c.reply(3))["result"]["content"][0]["text"] == "x1"
        assert len((await c.reply(4))["result"]["tools"]) == 16
        assert (await c.reply(5))["result"] == {}
    finally:
        await _close(c)
    assert [c.count(i) for i in range(1, 6)] == [1] * 5          # all it sent, read to EOF
    assert kit.leftovers() == []
