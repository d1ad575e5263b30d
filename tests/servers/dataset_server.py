"""An upstream MCP server (official SDK, low-level Server, stdio) that serves one dataset server's tools.

    python tests/servers/dataset_server.py --tools-file PATH --server NAME

`PATH` is a tool-retrieval dataset in the normalised JSON Lines format (one
`{"server", "name", "description", "inputSchema"}` object a line, e.g. LiveMCPBench's
`tools.jsonl`). The server lists exactly the tools whose `server` field equals `NAME`, with
their real name, description and input schema (an empty `{}` schema becomes
`{"type": "object"}`); a call answers with a short text naming the tool. Used by
`benchmarks/bench_presentation.py` to put real tool definitions behind real MCP servers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

p = argparse.ArgumentParser()
p.add_argument("--tools-file", required=True, type=Path, help="dataset tools.jsonl")
p.add_argument("--server", required=True, help="the dataset's `server` value to serve")
opts = p.parse_args()


def load_tools(path: Path, server: str) -> list[t.Tool]:
    tools: list[t.Tool] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row: dict[str, Any] = json.loads(line)
        if row.get("server") != server:
            continue
        schema = row.get("inputSchema") or {"type": "object"}
        tools.append(t.Tool(name=row["name"], description=row.get("description"), input_schema=schema))
    return tools


TOOLS = load_tools(opts.tools_file, opts.server)
if not TOOLS:
    sys.exit(f"dataset_server: no tools of server {opts.server!r} in {opts.tools_file}")
NAMES = {tool.name for tool in TOOLS}


async def list_tools(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: t.CallToolRequestParams) -> t.CallToolResult:
    if params.name not in NAMES:
        return t.CallToolResult(content=[t.TextContent(type="text", text=f"unknown tool {params.name}")],
                                is_error=True)
    return t.CallToolResult(content=[t.TextContent(type="text", text=f"{opts.server}/{params.name} called")])


server = Server(opts.server, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())


anyio.run(main)
