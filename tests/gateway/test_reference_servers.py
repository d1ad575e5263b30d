"""The reference servers behind the gateway: server-everything, -filesystem, -memory (npm) and
mcp-server-time (PyPI). npm servers are found in $MCPCTL_NPM_SERVERS or ./.npm-servers
(`npm install --prefix .npm-servers @modelcontextprotocol/server-everything ...`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from gwkit import Kit, npm_bin, text_of, wait_tools

from ci_support import SLACK, skip_unless_ci

pytestmark = [pytest.mark.anyio, pytest.mark.npm]

NPM = {name: npm_bin(f"mcp-server-{name}") for name in ("everything", "filesystem", "memory")}
TIME = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) or shutil.which("mcp-server-time")


def _need(*names: str) -> None:
    missing = [n for n in names if not NPM.get(n)]
    if missing:
        skip_unless_ci(f"npm reference servers not installed: {', '.join(missing)} (run: npm install --prefix "
                    ".npm-servers @modelcontextprotocol/server-{everything,filesystem,memory})")
    if not TIME:
        skip_unless_ci("mcp-server-time is not installed (pip install mcp-server-time)")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_reference_servers_through_the_gateway(kit: Kit, tmp_path: Path, mode: str) -> None:
    _need("everything", "filesystem", "memory")
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from the filesystem server\n")
    kit.server("everything", command=str(NPM["everything"]), connect=30)
    kit.server("fs", str(files), command=str(NPM["filesystem"]), connect=30)
    kit.server("memory", command=str(NPM["memory"]), connect=30,
               env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    kit.server("time", "--local-timezone", "UTC", command=str(TIME), connect=30)
    kit.project("ref", ["everything", "fs", "memory", "time"])
    async with kit.client("ref", mode=mode) as c:
        tools = {t.name: t for t in await wait_tools(
            c, {"everything__echo", "fs__read_text_file", "memory__read_graph", "time__get_current_time"},
            timeout=60 * SLACK)}
        assert "everything__get-sum" in tools and tools["fs__read_text_file"].output_schema is not None
        r = await c.session.call_tool("everything__echo", {"message": "via mcpctl"})
        assert "via mcpctl" in text_of(r)
        r = await c.session.call_tool("everything__get-sum", {"a": 2, "b": 40})
        assert "42" in text_of(r)
        r = await c.session.call_tool("fs__read_text_file", {"path": str(files / "hello.txt")})
        assert "hello from the filesystem server" in text_of(r)
        r = await c.session.call_tool("memory__create_entities", {"entities": [
            {"name": "mcpctl", "entityType": "tool", "observations": ["is a gateway"]}]})
        assert not r.is_error
        r = await c.session.call_tool("memory__read_graph", {})
        assert r.structured_content is not None and r.structured_content["entities"][0]["name"] == "mcpctl"
        r = await c.session.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not r.is_error and r.structured_content is not None
        assert r.structured_content["timezone"] == "UTC"
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert any(p.startswith("everything__") for p in prompts)
        resources = (await c.list_resources()).resources
        if resources:
            read = await c.read_resource(str(resources[0].uri))
            assert read.contents
    assert kit.leftovers() == []
