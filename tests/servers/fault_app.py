"""The fault server's MCP server, built from its options (`fault_server.py`'s command line).

`build(opts, hooks)` makes one `Server` with its own state (the tools it grew, what it saw), so
the same server runs as a process (`fault_server.py`, over stdio or HTTP) or in-process behind
the gateway (`tests/gateway/inproc.py`, over memory streams). What only a process can do goes
through `Hooks`: `crash` (the process exits mid-call; in-process the connection closes),
`freeze` (the whole process blocks), `garbage` (junk on stdout), and the pid `state` reports.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged


def _exit_now() -> None:
    sys.stderr.write("fault_server: crashing now\n")
    sys.stderr.flush()
    os._exit(17)


async def _process_crash() -> None:
    _exit_now()


def _process_freeze() -> None:
    time.sleep(3600)   # blocks the event loop: the process stays alive and never answers


def _process_garbage() -> None:
    os.write(1, b"this is not json\n")


@dataclass
class Hooks:
    """What the server does that depends on where it runs (the defaults: a process of its own)."""

    crash: Callable[[], Awaitable[None]] = _process_crash
    freeze: Callable[[], None] = _process_freeze
    garbage: Callable[[], None] = _process_garbage
    pid: int = field(default_factory=os.getpid)
    seen: dict[str, Any] = field(default_factory=dict)    # what `state` reports, kept here
    changed: Callable[[], None] = lambda: None           # called when `seen` changes


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fault_server.py")
    p.add_argument("--name", default="fault")
    p.add_argument("--tools", type=int, default=0, help="extra synthetic tools")
    p.add_argument("--extra-tool", action="append", default=[], help="also serve a tool of this name; it answers "
                   "with this server's --name")
    p.add_argument("--describe", action="append", default=[], metavar="NAME=TEXT",
                   help="also serve a tool NAME whose description is TEXT (a poisoned one, say)")
    p.add_argument("--start-delay", type=float, default=0.0)
    p.add_argument("--stderr-flood", action="store_true")
    p.add_argument("--garbage", action="store_true", help="write junk lines to stdout at start")
    p.add_argument("--page-size", type=int, default=0)
    p.add_argument("--list-items", type=int, default=0, help="also list this many resources, templates and prompts")
    p.add_argument("--legacy-only", action="store_true")
    p.add_argument("--exit-at-start", action="store_true")
    p.add_argument("--exit-after-start-delay", action="store_true", help="sleep --start-delay, then exit 3")
    p.add_argument("--freeze-tool", action="store_true", help="also serve `freeze`, which blocks the process")
    p.add_argument("--start-marker", default=None, help="write started-<pid> here as the process starts")
    p.add_argument("--marker-dir", default=None, help="write cancelled-<n> markers here")
    p.add_argument("--http-port", type=int, default=0, help="serve streamable HTTP on this loopback port")
    p.add_argument("--http-fd", type=int, default=0, help="serve streamable HTTP on this listening socket (inherited)")
    p.add_argument("--require-token", default=None, help="HTTP: require the header X-Test-Token: <value>")
    p.add_argument("--ask-tools", action="store_true", help="serve sample/elicit/roots/log/touch/state")
    p.add_argument("--modern-only", action="store_true", help="refuse the initialize handshake")
    p.add_argument("--large-tools", action="store_true", help="serve large_text/large_json/image/large_structured")
    return p


def parse(argv: Sequence[str]) -> argparse.Namespace:
    return parser().parse_args(list(argv))


def build(opts: argparse.Namespace, hooks: Hooks | None = None) -> Server[Any]:
    """The fault server for these options (see `fault_server.py` for what each tool does)."""
    hooks = hooks or Hooks()
    BUS = InMemorySubscriptionBus()
    OBJ: dict[str, Any] = {"type": "object"}
    TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def _tool(name: str, desc: str, schema: dict[str, Any] | None = None, **kw: Any) -> t.Tool:
        return t.Tool(name=name, description=desc, input_schema=schema or OBJ, **kw)

    TOOLS: list[t.Tool] = [
        _tool("echo", "Echo text back", TEXT,
              annotations=t.ToolAnnotations(title="Echo", read_only_hint=True, destructive_hint=False,
                                            idempotent_hint=True, open_world_hint=False),
              _meta={"vendor/x": 1}),
        _tool("add", "Add two integers", {"type": "object", "properties": {"a": {"type": "integer"},
                                                                          "b": {"type": "integer"}}}),
        _tool("slow", "Sleep for `seconds` then answer", {"type": "object", "properties": {"seconds": {"type": "number"}}}),
        _tool("crash", "Exit the process in the middle of the call"),
        _tool("hang", "Never answer"),
        _tool("big", "Return a 5 MB text result"),
        _tool("progress", "Report three progress steps"),
        _tool("structured", "Return structured content",
              output_schema={"type": "object", "properties": {"square": {"type": "integer"}}, "required": ["square"]}),
        _tool("fail", "Always return an isError result"),
        _tool("add_tool", "Add a tool named extra_<n> and announce list_changed"),
        _tool("garbage", "Write junk to stdout, then answer"),
        _tool("leak", "Echo the arguments back in the result"),
        _tool("delete_all", "Delete everything (destructive)",
              annotations=t.ToolAnnotations(destructive_hint=True, read_only_hint=False)),
        _tool("odd.name/with:chars", "A tool whose name is not portable"),
    ]
    if opts.freeze_tool:
        TOOLS.append(_tool("freeze", "Block the whole process: no request is ever answered again"))
    TOOLS += [_tool(f"synthetic_{i:04d}", f"Synthetic tool number {i} that does task {i} for benchmarking")
              for i in range(opts.tools)]
    TOOLS += [_tool(n, f"Say which server answers {n}: returns the server's name") for n in opts.extra_tool]
    TOOLS += [_tool(n, d) for n, _, d in (x.partition("=") for x in opts.describe)]
    if opts.ask_tools:
        TOOLS += [_tool("sample", "Ask the client's model (sampling) for `text`", TEXT),
                  _tool("elicit", "Ask the user (elicitation) for a name; `mode: url` asks through a URL; "
                        "`progress: true` reports progress before and after asking"),
                  _tool("roots", "List the client's roots"),
                  _tool("log", "Emit `n` log messages at `level` during the call"),
                  _tool("touch", "Announce that resource `uri` was updated"),
                  _tool("state", "What the server saw: logging level, subscriptions, roots outside calls; its pid"),
                  _tool("ask_input", "2026-07-28: ask for a name through an input-required result")]
    if opts.large_tools:
        SIZE = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
        TOOLS += [_tool("large_text", "Return `size` characters of text", SIZE),
                  _tool("large_json", "Return a JSON array of about `size` characters", SIZE),
                  _tool("image", "Return an image block of `size` base64 characters", SIZE),
                  _tool("large_structured", "Return about `size` characters as a structured result", SIZE,
                        output_schema={"type": "object", "properties": {"items": {"type": "array"}},
                                       "required": ["items"]})]
    extra_count = 0
    SEEN = hooks.seen
    SEEN.update({"level": None, "subscribed": [], "roots_outside": [], "roots_changed": 0, "pid": hooks.pid})

    async def list_tools(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        if not opts.page_size:
            return t.ListToolsResult(tools=TOOLS)
        start = int(params.cursor) if params and params.cursor else 0
        end = start + opts.page_size
        return t.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)

    def _text(s: str, **kw: Any) -> t.CallToolResult:
        return t.CallToolResult(content=[t.TextContent(type="text", text=s)], **kw)

    async def call_tool(ctx: ServerRequestContext, params: t.CallToolRequestParams) -> Any:   # or input-required
        nonlocal extra_count
        args = params.arguments or {}
        name = params.name
        if name == "echo":
            SEEN["echo_meta"] = {k: v for k, v in (params.meta or {}).items() if k != "progress_token"}
            headers = getattr(ctx.request, "headers", None) or {}    # over HTTP: the W3C trace headers
            SEEN["echo_headers"] = {k: headers[k] for k in ("traceparent", "tracestate") if k in headers}
            hooks.changed()
            return _text(str(args.get("text", "")), _meta={"upstream/meta": "kept"})
        if name == "add":
            return _text(str(int(args.get("a", 0)) + int(args.get("b", 0))))
        if name == "slow":
            await anyio.sleep(float(args.get("seconds", 1)))
            return _text("slept")
        if name == "crash":
            await hooks.crash()
            return _text("unreachable")
        if name == "hang":
            SEEN["hanging"] = SEEN.get("hanging", 0) + 1
            hooks.changed()
            try:
                await anyio.sleep(3600)
            except BaseException:
                if opts.marker_dir:
                    Path(opts.marker_dir, f"cancelled-{hooks.pid}-{time.time_ns()}").touch()
                    hooks.changed()
                raise
            return _text("unreachable")
        if name == "freeze" and opts.freeze_tool:
            hooks.freeze()
            return _text("unreachable")
        if name == "big":
            return _text("x" * (5 * 1024 * 1024))
        if name == "progress":
            for i in range(1, 4):
                await ctx.session.report_progress(i, total=3, message=f"step {i}")
            return _text("done")
        if name == "structured":
            n = int(args.get("n", 7))
            return t.CallToolResult(content=[t.TextContent(type="text", text=str(n * n))],
                                    structured_content={"square": n * n})
        if name == "fail":
            return _text("this tool always fails", is_error=True)
        if name == "add_tool":
            extra_count += 1
            TOOLS.append(_tool(f"extra_{extra_count}", f"Extra tool {extra_count}"))
            if ctx.protocol_version.startswith("2026"):
                await BUS.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
            return _text(f"added extra_{extra_count}")
        if name == "garbage":
            hooks.garbage()
            return _text("after garbage")
        if name == "leak":
            return _text(f"you sent {args!r}", structured_content={"echo": args})
        if name == "delete_all":
            return _text("deleted nothing, this is a test")
        if name in opts.extra_tool:
            return _text(opts.name)
        if opts.large_tools and name in ("large_text", "large_json", "image", "large_structured"):
            return _large(name, int(args.get("size", 0)))
        if opts.ask_tools and name in ("sample", "elicit", "roots", "log", "touch", "state", "ask_input"):
            return await _ask_tool(ctx, name, args, params)
        if any(tl.name == name for tl in TOOLS):
            return _text(f"{name} ok {args!r}")
        return _text(f"unknown tool {name}", is_error=True)

    def _large(name: str, size: int) -> t.CallToolResult:
        import json

        import payloads

        if name == "large_text":
            return _text(payloads.large_text(size))
        if name == "large_json":
            return _text(payloads.large_json(size))
        if name == "image":
            return t.CallToolResult(content=[t.ImageContent(type="image", data=payloads.image_data(size),
                                                            mime_type="image/png"),
                                             t.TextContent(type="text", text="an image")])
        items = payloads.large_items(size)
        return _text(json.dumps({"items": items}, ensure_ascii=False), structured_content={"items": items})

    async def _ask_tool(ctx: ServerRequestContext, name: str, args: dict[str, Any], params: Any) -> Any:
        from mcp import MCPError
        from mcp.shared.message import ServerMessageMetadata

        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        try:
            if name == "sample":
                got = await ctx.session.send_request(t.CreateMessageRequest(params=t.CreateMessageRequestParams(
                    messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text=str(args.get("text"))))],
                    max_tokens=10)), t.CreateMessageResult, metadata=related)
                return _text(f"sampled: {getattr(got.content, 'text', '?')}")
            if name == "elicit":
                if args.get("mode") == "url":
                    req = t.ElicitRequest(params=t.ElicitRequestURLParams(message="open it", url="https://example.com/x",
                                                                          elicitation_id="e1"))
                else:
                    req = t.ElicitRequest(params=t.ElicitRequestFormParams(message=str(args.get("message", "name?")),
                                          requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}))
                if args.get("progress"):        # progress before and after asking
                    await ctx.session.report_progress(1, total=3, message="asking")
                res = await ctx.session.send_request(req, t.ElicitResult, metadata=related)
                if args.get("progress"):
                    for i in (2, 3):
                        await ctx.session.report_progress(i, total=3, message="answered")
                return _text(f"elicited: {res.action} {res.content}")
            if name == "roots":
                got_roots = await ctx.session.send_request(t.ListRootsRequest(), t.ListRootsResult, metadata=related)
                return _text("roots: " + ",".join(str(r.uri) for r in got_roots.roots))
        except MCPError as e:
            return _text(f"refused: {e.code} {e.message}", is_error=True)
        if name == "log":
            for i in range(int(args.get("n", 3))):
                await ctx.session.send_notification(t.LoggingMessageNotification(params=t.LoggingMessageNotificationParams(
                    level=args.get("level", "info"), data=f"{args.get('tag', 'log')} {i}")), related_request_id=ctx.request_id)
            return _text("logged")
        if name == "touch":
            for _ in range(int(args.get("n", 1))):       # n: a chatty upstream
                await ctx.session.send_notification(t.ResourceUpdatedNotification(
                    params=t.ResourceUpdatedNotificationParams(uri=str(args.get("uri")))))
            return _text("touched")
        if name == "state":
            return _text("state", structured_content=dict(SEEN))
        responses = params.input_responses or {}     # ask_input
        if "who" in responses:
            answer = responses["who"]
            return _text(f"hello {getattr(answer, 'content', None)} (state {params.request_state})")
        return t.InputRequiredResult(input_requests={"who": t.ElicitRequest(params=t.ElicitRequestFormParams(
            message="who are you?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}))},
            request_state="round-1")

    async def set_level(ctx: ServerRequestContext, params: t.SetLevelRequestParams) -> t.EmptyResult:
        SEEN["level"] = params.level
        hooks.changed()
        return t.EmptyResult()

    async def subscribe(ctx: ServerRequestContext, params: t.SubscribeRequestParams) -> t.EmptyResult:
        SEEN["subscribed"] = sorted({*SEEN["subscribed"], str(params.uri)})
        hooks.changed()
        return t.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext, params: t.UnsubscribeRequestParams) -> t.EmptyResult:
        SEEN["subscribed"] = [u for u in SEEN["subscribed"] if u != str(params.uri)]
        hooks.changed()
        return t.EmptyResult()

    async def complete(ctx: ServerRequestContext, params: t.CompleteRequestParams) -> t.CompleteResult:
        ref = params.ref
        where = f"prompt:{ref.name}" if isinstance(ref, t.PromptReference) else f"template:{ref.uri}"
        values = [v for v in (f"{opts.name}-a", f"{opts.name}-b", where) if v.startswith(params.argument.value)]
        return t.CompleteResult(completion=t.Completion(values=values, total=len(values), has_more=False))

    async def roots_changed(ctx: ServerRequestContext, params: Any) -> None:
        SEEN["roots_changed"] += 1
        try:
            got = await ctx.session.send_request(t.ListRootsRequest(), t.ListRootsResult)
            SEEN["roots_outside"] = [str(r.uri) for r in got.roots]
        except Exception as e:
            SEEN["roots_outside"] = [f"error: {e}"]
        if opts.marker_dir:         # what it got, for a test that cannot call this server
            Path(opts.marker_dir, f"roots-{opts.name}-{SEEN['roots_changed']}").write_text(
                "\n".join(SEEN["roots_outside"]))
        hooks.changed()
        # a log message outside any call
        await ctx.session.send_notification(t.LoggingMessageNotification(params=t.LoggingMessageNotificationParams(
            level="notice", data=f"{opts.name}: roots changed")))

    async def list_resources(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        return t.ListResourcesResult(resources=[t.Resource(name="readme", uri=f"file:///{opts.name}/readme.txt",
                                                           mime_type="text/plain")] + [
            t.Resource(name=f"doc_{i:04d}", uri=f"file:///{opts.name}/doc_{i:04d}.txt") for i in range(opts.list_items)])

    async def list_templates(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None
                             ) -> t.ListResourceTemplatesResult:
        return t.ListResourceTemplatesResult(resource_templates=[
            t.ResourceTemplate(name="note", uri_template=f"note://{opts.name}/{{id}}")] + [
            t.ResourceTemplate(name=f"t_{i:04d}", uri_template=f"t{i:04d}://{opts.name}/{{id}}")
            for i in range(opts.list_items)])

    async def read_resource(ctx: ServerRequestContext, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        reads = SEEN.setdefault("reads", {})
        reads[str(params.uri)] = reads.get(str(params.uri), 0) + 1
        return t.ReadResourceResult(contents=[t.TextResourceContents(uri=str(params.uri),
                                                                     text=f"content of {params.uri} from {opts.name}")])

    async def list_prompts(ctx: ServerRequestContext, params: t.PaginatedRequestParams | None) -> t.ListPromptsResult:
        return t.ListPromptsResult(prompts=[t.Prompt(name="greet", arguments=[t.PromptArgument(name="who", required=True)])]
                                   + [t.Prompt(name=f"p_{i:04d}") for i in range(opts.list_items)])

    async def get_prompt(ctx: ServerRequestContext, params: t.GetPromptRequestParams) -> t.GetPromptResult:
        who = (params.arguments or {}).get("who", "?")
        return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=t.TextContent(
            type="text", text=f"hello {who} from {opts.name}"))])

    server = Server(opts.name, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                    on_list_resources=list_resources, on_list_resource_templates=list_templates,
                    on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
                    on_subscriptions_listen=ListenHandler(BUS))
    if opts.ask_tools:
        server.add_request_handler("logging/setLevel", t.SetLevelRequestParams, set_level)
        server.add_request_handler("resources/subscribe", t.SubscribeRequestParams, subscribe)
        server.add_request_handler("resources/unsubscribe", t.UnsubscribeRequestParams, unsubscribe)
        server.add_request_handler("completion/complete", t.CompleteRequestParams, complete)
        server.add_notification_handler("notifications/roots/list_changed", t.NotificationParams, roots_changed)
    if opts.modern_only:
        async def _refuse_handshake(ctx: Any, call_next: Any) -> Any:
            from mcp import MCPError

            if ctx.method == "initialize":
                raise MCPError(code=t.UNSUPPORTED_PROTOCOL_VERSION, message="this server speaks 2026-07-28 only",
                               data={"supported": ["2026-07-28"]})
            return await call_next(ctx)

        server.middleware.append(_refuse_handshake)
    return server


async def serve(server: Server[Any], opts: argparse.Namespace, read: Any, write: Any) -> None:
    """Serve one connection over (read, write): a handshake-era-only server (`--legacy-only`, like
    today's Node servers) refuses `server/discover`; otherwise both eras."""
    from mcp.server import NotificationOptions

    init = server.create_initialization_options(NotificationOptions(tools_changed=True))
    if opts.legacy_only:
        from mcp.server.runner import _serve_legacy_stream

        try:
            await _serve_legacy_stream(server, read, write, lifespan_state={}, init_options=init,
                                       session_id=None, raise_exceptions=False)
        finally:
            await write.aclose()
    else:
        await server.run(read, write, init)
