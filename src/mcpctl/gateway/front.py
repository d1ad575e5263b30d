"""The MCP server clients talk to: the project's catalogue, routed to its upstreams.

One low-level `mcp.server.Server` serves both protocol eras (the `initialize` handshake and
2026-07-28). `tools/list` and `tools/call` take a lean path (a server middleware that answers
them directly): the list is pre-built, and a call's JSON is relayed to the upstream and back
without re-validating it into models on either hop, with the era envelope (`resultType`, the
`serverInfo` stamp) handled here. Everything else goes through ordinary handlers.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.abc
import mcp.types as t
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl import __version__
from mcpctl.catalogue import cache
from mcpctl.gateway.builtins import (
    SEARCH_CANONICAL_ID,
    SEARCH_TOOL,
    SearchError,
    ToolSearch,
    parse_arguments,
    search_result,
    search_tool_definition,
)
from mcpctl.gateway.catalogue import Catalogue, cached_listing, tools_list_json
from mcpctl.gateway.upstream import (
    SERVER_INFO_KEY,
    Listing,
    Upstream,
    UpstreamTimeout,
    UpstreamUnavailable,
    describe_error,
)
from mcpctl.resources.kinds import ProjectSpec, ServerSpec

log = logging.getLogger("mcpctl.gateway")

LIST_DEADLINE: Final = 0.3      # seconds a never-listed upstream may delay the first tools/list
_RESERVED_META_PREFIX: Final = "io.modelcontextprotocol/"
_LEGACY_ONLY_DROP: Final = ("resultType", "ttlMs", "cacheScope")
_MAX_TRACKED_SESSIONS: Final = 1024

Recorder = Callable[..., None]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass
class Caller:
    """Who is calling, for the invocation log, and where progress for this request goes."""

    session_id: str
    client_name: str | None = None
    client_version: str | None = None
    progress: Progress | None = None


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class Gateway:
    """The project's gateway: catalogue, upstream pool and the MCP server in front."""

    def __init__(self, project_name: str, project: ProjectSpec, servers: dict[str, ServerSpec | str], *,
                 record: Recorder | None = None, on_status: Callable[[str, dict[str, Any]], None] | None = None,
                 list_deadline: float = LIST_DEADLINE,
                 preloaded: Mapping[str, dict[str, Any] | None] | None = None) -> None:
        """`preloaded`: catalogue cache entries already read (server -> entry, None if never listed)."""
        self.project_name = project_name
        self.project = project
        self.catalogue = Catalogue(project)
        self.record = record
        self.on_status = on_status
        self.list_deadline = list_deadline
        self.bus = InMemorySubscriptionBus()
        self.search = ToolSearch(project.search.ranker) if project.search.enabled else None
        self.upstreams: dict[str, Upstream] = {}
        self.unavailable: dict[str, str] = {}       # server -> why it cannot start at all
        self._pending: set[str] = set()             # never-listed servers not settled yet
        self._settled = anyio.Event()
        self._started = time.monotonic()
        self._sessions: dict[Any, Any] = {}         # handshake-era connection -> session (for notifications)
        self._stateless_ids: dict[tuple[Any, ...], str] = {}   # 2026-era HTTP client -> session id
        self._clients: weakref.WeakKeyDictionary[Any, tuple[str, str | None, str | None]] = \
            weakref.WeakKeyDictionary()
        self._stamp: dict[str, Any] = {}
        self._list_json: dict[tuple[int, bool], str] = {}
        self._notifiers: list[Callable[[str], None]] = []
        self._disk = anyio.CapacityLimiter(1)       # one cache writer thread, not one per upstream
        if self.search is not None:
            self.catalogue.set_builtins([search_tool_definition(project.search.top_k)])
        for name in project.servers:
            spec = servers.get(name)
            if isinstance(spec, ServerSpec):
                self.upstreams[name] = Upstream(spec, on_listing=self._on_listing, on_state=self._on_state)
            else:
                self.unavailable[name] = spec or f"server {name!r} not found"
        self._load_cache(preloaded)
        self.server = self._build_server()
        self._stamp = self.server.server_info_stamp

    # -- setup ----------------------------------------------------------------------------------

    def _load_cache(self, preloaded: Mapping[str, dict[str, Any] | None] | None) -> None:
        for name in self.upstreams:
            entry = preloaded[name] if preloaded is not None and name in preloaded else cache.read_server_entry(name)
            if entry is None:
                self._pending.add(name)
                continue
            self.catalogue.set_listing(name, cached_listing(entry))
        if not self._pending:
            self._settled.set()

    def _instructions(self) -> str:
        text = (f"mcpctl gateway for project {self.project_name!r}. Tools are named "
                "<server>__<tool>.")
        if self.search is not None:
            text += (" When no listed tool obviously fits, call search_tools with a short description "
                     "of the task and then call the tool it returns.")
        return text

    def _build_server(self) -> Server[Any]:
        server: Server[Any] = Server(
            "mcpctl", version=__version__, title=f"mcpctl ({self.project_name})",
            instructions=self._instructions(),
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
            # Lists change whenever an upstream's does: never fresh for longer than the moment.
            cache_hints={m: CacheHint(ttl_ms=0, scope="private") for m in CACHEABLE_METHODS},
        )
        # The lean path answers tools/list and tools/call; OpenTelemetry spans are dropped (no exporter).
        server.middleware[:] = [self._fast_path]
        return server

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(
            NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True))

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start every upstream's supervisor in `tg` (they connect in parallel)."""
        self._started = time.monotonic()
        for name, why in self.unavailable.items():
            self._status(name, {"state": "down", "lastError": why, "tools": 0})
        for up in self.upstreams.values():
            self._status(up.name, {"state": "connecting", "lastError": None})
            tg.start_soon(self._supervise, up)

    def stopping(self) -> None:
        """The gateway is shutting down: keep each server's last known status as it is."""
        for up in self.upstreams.values():
            up.stopping = True

    async def watch_project(self, load: Callable[[], ProjectSpec | None], interval: float = 1.0) -> None:
        """Apply curation and search changes to the project while serving (polls `load`)."""
        while True:
            await anyio.sleep(interval)
            try:
                spec = await anyio.to_thread.run_sync(load)
            except Exception as e:
                log.warning("re-reading project %s failed: %s", self.project_name, e)
                continue
            if spec is None or spec == self.project:
                continue
            if spec.servers != self.project.servers:
                log.warning("project %s: server list changed; restart mcpctl serve to apply it", self.project_name)
            if spec.search != self.project.search:
                self.search = ToolSearch(spec.search.ranker) if spec.search.enabled else None
                self.catalogue.builtin_tools = [search_tool_definition(spec.search.top_k)] if self.search else []
            self.project = spec
            self.catalogue.project = spec
            self.catalogue.rebuild()
            log.info("project %s changed; catalogue updated", self.project_name)
            await self._notify({"tools"})

    async def _supervise(self, up: Upstream) -> None:
        try:
            await up.run()
        finally:
            self._settle(up.name)

    def _settle(self, name: str) -> None:
        self._pending.discard(name)
        if not self._pending:
            self._settled.set()

    # -- upstream events --------------------------------------------------------------------------

    def _status(self, name: str, status: dict[str, Any]) -> None:
        if self.on_status is not None:
            try:
                self.on_status(name, status)
            except Exception:
                log.exception("writing status of %s failed", name)

    def _on_state(self, up: Upstream) -> None:
        status: dict[str, Any] = {"state": up.state, "lastError": up.last_error}
        if up.state == "up":
            status.update(tools=up.tool_count, protocolVersion=up.protocol_version, serverInfo=up.server_info,
                          lastSeen=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self._status(up.name, status)
        if up.state == "down":
            self._settle(up.name)

    async def _on_listing(self, up: Upstream, listing: Listing) -> None:
        before = {s: self.catalogue.listings.get(up.name, {}).get(s) for s in listing}
        changed = {s for s, items in listing.items() if before.get(s) != items}
        if changed:
            self.catalogue.set_listing(up.name, listing)
            await anyio.to_thread.run_sync(cache.write_server_entry, up.name, dict(listing),
                                           limiter=self._disk)
        self._settle(up.name)
        if changed:
            log.info("catalogue of %s changed (%s); notifying clients", up.name, ", ".join(sorted(changed)))
            await self._notify(changed)

    async def _notify(self, sections: set[str]) -> None:
        events: list[tuple[Any, str]] = []
        if "tools" in sections:
            events.append((ToolsListChanged(), "send_tool_list_changed"))
        if "prompts" in sections:
            events.append((PromptsListChanged(), "send_prompt_list_changed"))
        if sections & {"resources", "resourceTemplates"}:
            events.append((ResourcesListChanged(), "send_resource_list_changed"))
        for event, method in events:
            await self.bus.publish(event)
            wire = {"send_tool_list_changed": "notifications/tools/list_changed",
                    "send_prompt_list_changed": "notifications/prompts/list_changed",
                    "send_resource_list_changed": "notifications/resources/list_changed"}[method]
            for notify in list(self._notifiers):
                try:
                    notify(wire)
                except Exception:
                    log.exception("sending %s failed", wire)
            for conn, session in list(self._sessions.items()):
                try:
                    with anyio.fail_after(2):
                        await getattr(session, method)()
                except Exception:
                    self._sessions.pop(conn, None)

    # -- client bookkeeping ------------------------------------------------------------------------

    def _client(self, ctx: ServerRequestContext[Any]) -> tuple[str, str | None, str | None]:
        conn = ctx.session._connection
        try:
            known = self._clients.get(conn)
        except TypeError:
            known = None
        if known is not None:
            return known
        name = version = None
        cp = ctx.session.client_params
        if cp is not None and cp.client_info is not None:
            name, version = cp.client_info.name, cp.client_info.version
        else:
            meta = (ctx.params or {}).get("_meta") or {}
            info = meta.get("io.modelcontextprotocol/clientInfo") if isinstance(meta, dict) else None
            if isinstance(info, dict):
                name, version = info.get("name"), info.get("version")
        known = (self._stateless_session_id(ctx, name, version) or uuid.uuid4().hex[:12], name, version)
        with contextlib.suppress(TypeError):
            self._clients[conn] = known
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and not self._notifiers:
            # (a transport that registered a notifier, like stdio, sends them itself)
            if len(self._sessions) >= _MAX_TRACKED_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[conn] = ctx.session
        return known

    def _stateless_session_id(self, ctx: ServerRequestContext[Any], name: str | None,
                              version: str | None) -> str | None:
        """A stable session id for 2026-era HTTP requests, which carry no session of their own.

        Each such request arrives on a fresh connection object, so the id is derived from what
        stays the same for one client: its credential, name, version and TCP connection (HTTP
        keep-alive). Without it every call would be its own session and (search → next call)
        pairs could never be mined from the log.
        """
        request = getattr(ctx, "request", None)
        if request is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        try:
            peer = request.client
            key = (request.headers.get("authorization"), name, version,
                   peer.host if peer else None, peer.port if peer else None)
        except AttributeError:
            return None
        sid = self._stateless_ids.pop(key, None) or uuid.uuid4().hex[:12]
        self._stateless_ids[key] = sid          # most recently used last
        if len(self._stateless_ids) > _MAX_TRACKED_SESSIONS:
            self._stateless_ids.pop(next(iter(self._stateless_ids)))
        return sid

    def _caller(self, ctx: ServerRequestContext[Any]) -> Caller:
        session_id, client_name, client_version = self._client(ctx)
        progress: Progress | None = None
        meta = (ctx.params or {}).get("_meta")
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            progress = ctx.session.report_progress
        return Caller(session_id, client_name, client_version, progress)

    def _log_call(self, caller: Caller, ts: float, t0: float, presented: str,
                  canonical: str | None, outcome: str, error_class: str | None = None,
                  query: str | None = None) -> None:
        if self.record is None:
            return
        try:
            self.record(ts=ts, duration_ms=(time.perf_counter() - t0) * 1000.0, project=self.project_name,
                        presented_name=presented, canonical_id=canonical, outcome=outcome,
                        error_class=error_class, client_name=caller.client_name,
                        client_version=caller.client_version, session_id=caller.session_id, query=query)
        except Exception:
            log.exception("recording a call failed")

    # -- the lean path -------------------------------------------------------------------------------

    async def _fast_path(self, ctx: ServerRequestContext[Any], call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        method = ctx.method
        if method == "tools/call" or method == "tools/list":
            if ctx.session._connection.initialize_accepted:
                self._client(ctx)
                if method == "tools/call":
                    result = await self.call_tool(self._caller(ctx), ctx.params or {})
                    return self.envelope(result, ctx.protocol_version)
                result: dict[str, Any] = {"tools": await self._tools()}
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    result.update(ttlMs=0, cacheScope="private")
                return self.envelope(result, ctx.protocol_version)
        elif method in ("resources/list", "prompts/list") and ctx.session._connection.initialize_accepted:
            self._client(ctx)
        return await call_next(ctx)

    def envelope(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        if version in MODERN_PROTOCOL_VERSIONS:
            result.setdefault("resultType", "complete")
            meta = result.get("_meta")
            result["_meta"] = {**meta, SERVER_INFO_KEY: self._stamp} if isinstance(meta, dict) else \
                {SERVER_INFO_KEY: self._stamp}
        else:
            for key in _LEGACY_ONLY_DROP:
                result.pop(key, None)
        return result

    async def tools_list_json(self, version: str) -> str:
        """The whole `tools/list` result as JSON text, serialized once per catalogue version."""
        tools = await self._tools()
        key = (self.catalogue.version, version in MODERN_PROTOCOL_VERSIONS)
        cached = self._list_json.get(key)
        if cached is None:
            cached = tools_list_json(tools, key[1], self._stamp)
            self._list_json = {key: cached, **{k: v for k, v in self._list_json.items()
                                               if k[0] == self.catalogue.version}}
        return cached

    def server_info_stamp(self) -> dict[str, Any]:
        """The 2026-07-28 `serverInfo` stamp (a copy)."""
        return dict(self._stamp)

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """Register a transport-level sender of list_changed notifications (method name)."""
        self._notifiers.append(notify)
        return lambda: self._notifiers.remove(notify) if notify in self._notifiers else None

    def new_session_id(self) -> str:
        return uuid.uuid4().hex[:12]

    async def _tools(self) -> list[dict[str, Any]]:
        if not self._settled.is_set():
            remaining = self.list_deadline - (time.monotonic() - self._started)
            if remaining > 0:
                with anyio.move_on_after(remaining):
                    await self._settled.wait()
        return self.catalogue.tools_payload

    async def call_tool(self, caller: Caller, params: Any) -> dict[str, Any]:
        """Route one tools/call (wire-format params) and return the result (no era envelope)."""
        ts, t0 = time.time(), time.perf_counter()
        name = params.get("name") if isinstance(params, dict) else None
        args = params.get("arguments") if isinstance(params, dict) else None
        if not isinstance(name, str) or (args is not None and not isinstance(args, dict)):
            self._log_call(caller, ts, t0, str(name), None, "protocol_error", "InvalidParams")
            raise MCPError(code=INVALID_PARAMS, message="tools/call needs params {name: string, arguments?: object}")
        if name == SEARCH_TOOL and self.search is not None:
            return await self._search(caller, ts, t0, args)
        entry = self._lookup(name)
        if entry is None and not self._settled.is_set():
            # a server never listed yet may bring this tool: wait for it like a call would
            wait = max((self.upstreams[n].spec.timeouts.connect for n in self._pending if n in self.upstreams),
                       default=0.0)
            with anyio.move_on_after(wait):
                await self._settled.wait()
            entry = self._lookup(name)
        if entry is None:
            self._log_call(caller, ts, t0, name, None, "protocol_error", "UnknownTool")
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        if not entry.enabled:
            self._log_call(caller, ts, t0, name, entry.canonical_id, "denied", "ToolDisabled")
            return error_result(f"tool {entry.canonical_id!r} is disabled in project {self.project_name!r} "
                                f"(tools.disabled); enable it with: mcpctl tools enable --project "
                                f"{self.project_name} {entry.canonical_id}")
        up = self.upstreams.get(entry.server)
        if up is None:
            why = self.unavailable.get(entry.server, "not configured")
            self._log_call(caller, ts, t0, name, entry.canonical_id, "upstream_down", "UpstreamUnavailable")
            return error_result(f"upstream server {entry.server!r} is unavailable: {why}")
        fwd: dict[str, Any] = {"name": entry.tool}
        if args is not None:
            fwd["arguments"] = args
        meta = params.get("_meta")
        if isinstance(meta, dict):
            extra = {k: v for k, v in meta.items()
                     if k != "progressToken" and not k.startswith(_RESERVED_META_PREFIX)}
            if extra:
                fwd["_meta"] = extra
        try:
            result = await up.request("tools/call", fwd, timeout=up.spec.timeouts.call, on_progress=caller.progress)
        except (UpstreamTimeout, UpstreamUnavailable) as e:
            self._log_call(caller, ts, t0, name, entry.canonical_id, e.outcome, type(e).__name__)
            return error_result(str(e))
        except MCPError as e:
            self._log_call(caller, ts, t0, name, entry.canonical_id, "protocol_error", f"MCPError{e.code}")
            raise
        except anyio.get_cancelled_exc_class():
            self._log_call(caller, ts, t0, name, entry.canonical_id, "protocol_error", "Cancelled")
            raise
        except Exception as e:
            log.exception("relaying %s failed", entry.canonical_id)
            self._log_call(caller, ts, t0, name, entry.canonical_id, "protocol_error", type(e).__name__)
            return error_result(f"mcpctl could not relay the call to {entry.server!r}: {describe_error(e)}")
        rt = result.get("resultType")
        if rt not in (None, "complete"):
            self._log_call(caller, ts, t0, name, entry.canonical_id, "protocol_error", "InputRequired")
            return error_result(f"upstream server {entry.server!r} asked for more input ({rt}), which mcpctl "
                                "does not relay yet")
        _strip_upstream_meta(result)
        self._log_call(caller, ts, t0, name, entry.canonical_id, "tool_error" if result.get("isError") else "ok",
                       "ToolError" if result.get("isError") else None)
        return result

    def _lookup(self, name: str) -> Any:
        entry = self.catalogue.by_presented.get(name)
        return entry if entry is not None else self.catalogue.by_canonical.get(name)   # canonical ids work too

    async def _search(self, caller: Caller, ts: float, t0: float, args: Any) -> dict[str, Any]:
        assert self.search is not None
        try:
            query, top_k = parse_arguments(args if args is not None else {}, self.project.search.top_k)
        except SearchError as e:
            self._log_call(caller, ts, t0, SEARCH_TOOL, SEARCH_CANONICAL_ID, "tool_error", "InvalidArguments")
            return error_result(str(e))
        payload = await self.search.search(self.catalogue, query, top_k)
        self._log_call(caller, ts, t0, SEARCH_TOOL, SEARCH_CANONICAL_ID, "ok",
                       query=query if self.project.search.record_queries else None)
        return search_result(payload)

    # -- ordinary handlers (the lean path normally answers tools/* first) -----------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return _era({"tools": await self._tools()}, ctx)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> dict[str, Any]:
        return _era(await self.call_tool(self._caller(ctx), params.model_dump(by_alias=True, exclude_none=True)),
                    ctx)

    async def _list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        await self._tools()
        return _era({"resources": self.catalogue.resource_list()}, ctx)

    async def _list_templates(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        await self._tools()
        return _era({"resourceTemplates": self.catalogue.template_list()}, ctx)

    async def _list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        await self._tools()
        return _era({"prompts": self.catalogue.prompt_list()}, ctx)

    async def _relay(self, server: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        up = self.upstreams.get(server)
        if up is None:
            raise MCPError(code=INTERNAL_ERROR, message=f"upstream server {server!r} is unavailable: "
                           f"{self.unavailable.get(server, 'not configured')}")
        try:
            result = await up.request(method, params, timeout=up.spec.timeouts.call)
        except (UpstreamTimeout, UpstreamUnavailable) as e:
            raise MCPError(code=INTERNAL_ERROR, message=str(e)) from None
        _strip_upstream_meta(result)
        for key in _LEGACY_ONLY_DROP:
            result.pop(key, None)
        return result

    async def _read_resource(self, ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams
                             ) -> dict[str, Any]:
        uri = str(params.uri)
        route = self.catalogue.route_resource(uri)
        if route is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {uri}")
        return _era(await self._relay(route[0], "resources/read", {"uri": route[1]}), ctx)

    async def _get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> dict[str, Any]:
        hit = self.catalogue.prompts.get(params.name)
        if hit is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        fwd: dict[str, Any] = {"name": hit[1]}
        if params.arguments:
            fwd["arguments"] = dict(params.arguments)
        return _era(await self._relay(hit[0], "prompts/get", fwd), ctx)


def _era(result: dict[str, Any], ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    """Results from ordinary handlers: the 2026 era requires `resultType`."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        result.setdefault("resultType", "complete")
    return result


def _strip_upstream_meta(result: dict[str, Any]) -> None:
    meta = result.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_KEY}
        if rest:
            result["_meta"] = rest
        else:
            del result["_meta"]
