"""An SSE-only upstream MCP server (official SDK: low-level Server over `SseServerTransport`).

The legacy HTTP+SSE transport (protocol 2024-11-05): a GET on `/sse` opens the event stream whose
first event, `endpoint`, says where to POST messages (`/messages/?session_id=…`). A POST to `/sse`
gets 405, the signal a client uses to fall back from streamable HTTP to SSE.

`--port 0` binds a free loopback port; the bound port is printed on stdout (one line) once the
server listens. `--port N` binds N (SO_REUSEADDR, as asyncio sets it: a test can restart it on a
known port).
`--require-header NAME=VALUE` answers 401 unless the request carries that header.

Tools: echo(text), progress (three progress notifications, then "done"), slow(seconds: one
progress notification, then the sleep).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio
import mcp.types as t
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from mcpctl import heap

heap.at_exit()   # the process ends without the collector's last walk of the SDK's models

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--name", default="sse")
p.add_argument("--require-header", default="")
opts = p.parse_args()

_OBJ = {"type": "object", "properties": {"text": {"type": "string"}, "seconds": {"type": "number"}}}
TOOLS = [t.Tool(name=n, description=d, input_schema=_OBJ) for n, d in (
    ("echo", "Echo text back"), ("progress", "Report three progress steps"), ("slow", "Sleep a while"))]


def _text(s: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=s)])


async def list_tools(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: t.CallToolRequestParams) -> t.CallToolResult:
    args: dict[str, Any] = params.arguments or {}
    if params.name == "echo":
        return _text(f"{opts.name}: {args.get('text', '')}")
    if params.name == "progress":
        for i in range(1, 4):
            await ctx.session.report_progress(i, total=3, message=f"step {i}")
        return _text("done")
    if params.name == "slow":     # says it started (a progress step), then sleeps
        await ctx.session.report_progress(0, total=1, message="sleeping")
        await anyio.sleep(float(args.get("seconds", 1)))
        return _text("slept")
    return t.CallToolResult(content=[t.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True)


server = Server(opts.name, version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
sse = SseServerTransport("/messages/")


async def handle_sse(request: Request) -> Response:
    async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
        await server.run(read, write, server.create_initialization_options())
    return Response()


app = Starlette(routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]),
                        Mount("/messages/", app=sse.handle_post_message)])


async def guarded(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "http" and opts.require_header:
        name, _, value = opts.require_header.partition("=")
        got = dict(scope.get("headers") or []).get(name.lower().encode(), b"").decode()
        if got != value:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
    await app(scope, receive, send)


def main() -> None:
    # uvicorn binds (asyncio's create_server: SO_REUSEADDR, TCP_NODELAY on each connection); a
    # socket bound here and handed over with serve(sockets=…) answered keep-alive POSTs ~40 ms late
    config = uvicorn.Config(guarded, host="127.0.0.1", port=opts.port, log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(srv.serve)
            with anyio.fail_after(30):      # uvicorn sets `started` and has no event for it: poll, bounded
                while not srv.started:
                    await anyio.sleep(0.01)
            print(srv.servers[0].sockets[0].getsockname()[1], flush=True)

    anyio.run(run)
    sys.exit(0)


main()
