"""A stub upstream MCP server (official SDK, low-level `Server`, stdio) for one catalogue server.

    python -m mcpctl.bakeoff.stub --catalogue DIR --server NAME [--calls FILE]

Lists exactly the tools of `DIR/tools.jsonl` whose `server` is NAME, with their real name,
description and input schema (an empty schema becomes `{"type": "object"}`), and the server's
instructions from `DIR/servers.jsonl` if any. A call with arguments valid for the tool's schema
answers a canned success; invalid arguments get an `isError` result naming the problem (as a
real server would refuse them). Every call is appended to FILE as one JSON line
(`{"ts", "server", "tool", "ok", "arguments"}`), so the bake-off can show what reached upstreams.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _validator(schema: dict[str, Any]) -> Any:
    try:
        import jsonschema
    except ImportError:          # the SDK depends on it; without it only `required` is checked
        return None
    try:
        cls = jsonschema.validators.validator_for(schema)
        return cls(schema)
    except Exception:            # a schema the validator cannot read: accept any object
        return None


def problem(schema: dict[str, Any], validator: Any, args: dict[str, Any]) -> str | None:
    if validator is not None:
        try:
            error = next(iter(validator.iter_errors(args)), None)
        except Exception:
            return None
        return None if error is None else f"invalid arguments: {error.message}"
    missing = [k for k in schema.get("required") or [] if k not in args]
    return f"invalid arguments: missing {', '.join(missing)}" if missing else None


def main(argv: list[str] | None = None) -> None:
    import anyio
    import mcp.types as t
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server

    from mcpctl.bakeoff.data import load_catalogue

    p = argparse.ArgumentParser(prog="python -m mcpctl.bakeoff.stub")
    p.add_argument("--catalogue", required=True, type=Path)
    p.add_argument("--server", required=True)
    p.add_argument("--calls", type=Path, default=None)
    opts = p.parse_args(argv)
    cat = load_catalogue(opts.catalogue)
    rows = [r for r in cat.tools if r["server"] == opts.server]
    if not rows:
        sys.exit(f"stub: no tools of server {opts.server!r} in {opts.catalogue / 'tools.jsonl'}")
    tools = [t.Tool(name=r["name"], description=r.get("description"),
                    input_schema=r.get("inputSchema") or {"type": "object"}) for r in rows]
    schemas = {r["name"]: r.get("inputSchema") or {"type": "object"} for r in rows}
    validators = {name: _validator(s) for name, s in schemas.items()}

    def record(tool: str, ok: bool, args: dict[str, Any]) -> None:
        if opts.calls is None:
            return
        line = json.dumps({"ts": time.time(), "server": opts.server, "tool": tool, "ok": ok, "arguments": args},
                          ensure_ascii=False, default=str) + "\n"
        fd = os.open(opts.calls, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    async def list_tools(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext, params: t.CallToolRequestParams) -> t.CallToolResult:
        args = dict(params.arguments or {})
        if params.name not in schemas:
            record(params.name, False, args)
            return t.CallToolResult(content=[t.TextContent(type="text", text=f"unknown tool {params.name}")],
                                    is_error=True)
        bad = problem(schemas[params.name], validators[params.name], args)
        record(params.name, bad is None, args)
        text = bad or f"Done: {params.name} completed successfully."
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=bad is not None)

    server = Server(opts.server, version="1.0.0", instructions=cat.instructions.get(opts.server),
                    on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())

    anyio.run(serve)
    # Done (stdin closed): leave now. The stdio transport's worker threads are not daemons and
    # would hold the interpreter for a second or two after the client has gone; every call has
    # been written to --calls already (os.write, unbuffered), so nothing is lost.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
