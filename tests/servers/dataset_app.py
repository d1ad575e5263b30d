"""The dataset server's MCP server (`dataset_server.py`), built from its options, so that it runs
as a process or in-process behind the gateway (`tests/gateway/inproc.py`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp.types as t
from mcp.server import Server, ServerRequestContext


def parse(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="dataset_server.py")
    p.add_argument("--tools-file", required=True, type=Path, help="dataset tools.jsonl")
    p.add_argument("--server", required=True, help="the dataset's `server` value to serve")
    return p.parse_args(list(argv))


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


def build(opts: argparse.Namespace) -> Server[Any]:
    """The server for `opts` (its tools read now); ValueError when the file has none of its tools."""
    tools = load_tools(opts.tools_file, opts.server)
    if not tools:
        raise ValueError(f"dataset_server: no tools of server {opts.server!r} in {opts.tools_file}")
    names = {tool.name for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any], params: t.PaginatedRequestParams | None
                         ) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        if params.name not in names:
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"unknown tool {params.name}")],
                                    is_error=True)
        return t.CallToolResult(content=[t.TextContent(type="text", text=f"{opts.server}/{params.name} called")])

    return Server(opts.server, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
