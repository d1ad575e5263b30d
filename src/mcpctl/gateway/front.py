"""The MCP server clients talk to: the project's catalogue, routed to its upstreams.

One low-level `mcp.server.Server` serves both protocol eras (the `initialize` handshake and
2026-07-28). `tools/list` and `tools/call` take a lean path (a server middleware that answers
them directly): the list is the session's pre-built view (`presentation.view`), and a call's JSON is
relayed to the upstream and back without re-validating it into models on either hop, with the
era envelope (`resultType`, the `serverInfo` stamp) handled here. Every tool name a client
calls walks the presentation pipeline backwards to its canonical `server/tool`, every filter
checked again, before it is routed; mcpctl's built-ins (`search_tools`, `begin_session`,
`call_tool`) are answered here. Everything else goes through ordinary handlers; what upstreams
ask of clients during a call is in `asks`, logging, subscriptions and completion in `relay`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Final

import anyio
import anyio.abc
import mcp.types as t
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.types.jsonrpc import INVALID_PARAMS
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl import __version__
from mcpctl.catalogue import cache
from mcpctl.gateway.asks import Asks
from mcpctl.gateway.relay import LEGACY_ONLY_DROP, Relay
from mcpctl.gateway.router import Router
from mcpctl.gateway.sessions import NOTIFIED_SECTIONS, Caller, Sessions, new_session_id
from mcpctl.gateway.surfaces import Surfaces
from mcpctl.presentation import paging
from mcpctl.presentation.builtins import (
    error_result,
)
from mcpctl.presentation.catalogue import Catalogue, cached_listing, tools_list_json
from mcpctl.presentation.search import ToolSearch
from mcpctl.presentation.sections import Sections, SectionStore
from mcpctl.presentation.view import GATED_SESSION, OPEN_SESSION, SessionKey, View
from mcpctl.resources.kinds import ProjectSpec, ServerSpec
from mcpctl.sdk import initialize_accepted, set_middleware
from mcpctl.upstream.supervisor import SERVER_INFO_KEY, Listing, Upstream

log = logging.getLogger("mcpctl.gateway")

# First contact: a server never listed has nothing to show, and many clients list once, so the
# first tools/list waits for it (its connect timeout, at most this long). A cached server never
# delays a list, nor does one that failed on an earlier start (`failed_before`).
FIRST_CONTACT_CAP: Final = 15.0

Recorder = Callable[..., None]
__all__ = ["Caller", "Gateway", "error_result"]


def _token_count() -> Callable[[str], int]:
    """The project's token estimator, loaded when a result first needs counting (cl100k loads in ~0.1 s)."""
    from mcpctl.catalogue.tokens import token_counter

    return token_counter().count


class Gateway:
    """The project's gateway: catalogue, upstream pool and the MCP server in front."""

    def __init__(self, project_name: str, project: ProjectSpec, servers: dict[str, ServerSpec | str], *,
                 record: Recorder | None = None, on_status: Callable[[str, dict[str, Any]], None] | None = None,
                 first_contact_cap: float = FIRST_CONTACT_CAP, failed_before: Collection[str] = (),
                 stdio_profile: str | None = None,
                 preloaded: Mapping[str, dict[str, Any] | None] | None = None,
                 catalogue: Catalogue | None = None,
                 known_capabilities: Mapping[str, dict[str, Any]] | None = None,
                 page_size: int = 0) -> None:
        """`preloaded`: catalogue cache entries already read (server -> entry, None if never listed);
        `catalogue`: the catalogue the early front built from them (reused, not rebuilt);
        `known_capabilities`: each server's capabilities when it was last connected (its status);
        `page_size`: items per page of the four lists (0: one page; `presentation.paging`)."""
        self.project_name = project_name
        self.project = project
        self.catalogue = catalogue if catalogue is not None else Catalogue(project_name, project)
        self.record = record
        self.on_status = on_status
        self.first_contact_cap = first_contact_cap
        self.page_size = page_size
        self.stdio_profile = stdio_profile                # `serve --profile`: the stdio client's view
        self.failed_before = frozenset(failed_before)     # never listed, down on an earlier start
        self.sessions = Sessions()
        self.asks = Asks(self)
        self.relay = Relay(self, known_capabilities)
        self.surfaces = Surfaces(self)
        self.sessions.on_listen_resources = self.relay.listen_resources
        self.search = ToolSearch(project.search.ranker) if project.search.enabled else None
        keep = project.results
        self.sections = Sections(keep.max_tokens, SectionStore(keep.keep_megabytes * 2**20, keep.keep_minutes * 60.0),
                                 _token_count)
        self.upstreams: dict[str, Upstream] = {}
        self.unavailable: dict[str, str] = {}       # server -> why it cannot start at all
        self._pending: set[str] = set()             # never-listed servers worth waiting for, not settled yet
        self._first_contact = 0.0                   # how long the first lists wait for them (s)
        self._settled = anyio.Event()
        self._started = time.monotonic()
        self._stamp: dict[str, Any] = {}
        self._list_json: dict[tuple[int, bool, SessionKey], str] = {}
        self._disk = anyio.CapacityLimiter(1)       # one cache writer thread, not one per upstream
        self._background: set[Any] = set()         # notification tasks started from callbacks
        for name in project.servers:
            spec = servers.get(name)
            if isinstance(spec, ServerSpec):
                self.upstreams[name] = Upstream(spec, on_listing=self._on_listing, on_state=self._on_state,
                                                era="legacy", on_event=self._on_upstream_event,
                                                client_kw={**self.asks.hooks(name), **self.relay.hooks(name)})
            else:
                self.unavailable[name] = spec or f"server {name!r} not found"
        self.catalogue.set_down(self.unavailable)
        self._load_cache(preloaded)
        self.server = self._build_server()
        self._stamp = self.server.server_info_stamp
        self.router = Router(self)

    # -- setup ----------------------------------------------------------------------------------

    def _load_cache(self, preloaded: Mapping[str, dict[str, Any] | None] | None) -> None:
        listings = {}
        for name in self.upstreams:
            entry = preloaded[name] if preloaded is not None and name in preloaded else cache.read_server_entry(name)
            if entry is None:
                if name not in self.failed_before:
                    self._pending.add(name)
                continue
            listings[name] = cached_listing(entry)
        self.catalogue.set_listings(listings)
        self._first_contact = min(self.first_contact_cap, max(
            (self.upstreams[n].spec.timeouts.connect for n in self._pending), default=0.0))
        if not self._pending:
            self._settled.set()

    def _build_server(self) -> Server[Any]:
        server: Server[Any] = _GatewayServer(
            self,
            "mcpctl", version=__version__, title=f"mcpctl ({self.project_name})",
            instructions=self.catalogue.instructions,
            on_list_tools=self._list_tools,     # the handlers answer wire dicts
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=self.sessions.listen,
            # Lists change whenever an upstream's does: never fresh for longer than the moment.
            cache_hints={m: CacheHint(ttl_ms=0, scope="private")
                         for m in CACHEABLE_METHODS},
        )
        # Registered here rather than as constructor slots: those warn that the methods are
        # deprecated in 2026-07-28 (the handshake era still has them).
        server.add_request_handler("logging/setLevel", t.SetLevelRequestParams, self._set_level)
        server.add_request_handler("resources/subscribe", t.SubscribeRequestParams, self._subscribe)
        server.add_request_handler("resources/unsubscribe", t.UnsubscribeRequestParams, self._unsubscribe)
        server.add_request_handler("completion/complete", t.CompleteRequestParams, self._complete)
        server.add_notification_handler("notifications/roots/list_changed", t.NotificationParams,
                                        self._roots_changed)
        # The lean path answers tools/list and tools/call; OpenTelemetry spans are dropped (no exporter).
        set_middleware(server, [self._fast_path])
        return server

    def initialization_options(self) -> Any:
        """For `Server.run`: None, so that each handshake builds its own (the capabilities follow
        the upstreams as they connect; `_GatewayServer`)."""
        return None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start every upstream's supervisor in `tg` (they connect in parallel)."""
        self._started = time.monotonic()
        for name, why in self.unavailable.items():
            self._status(name, {"state": "down", "lastError": why, "tools": 0})
        for up in self.upstreams.values():
            self._status(up.name, {"state": "connecting", "lastError": None})
            tg.start_soon(self._supervise, up)
        self._index_soon()

    def stopping(self) -> None:
        """The gateway is shutting down: keep each server's last known status as it is."""
        for up in self.upstreams.values():
            up.stopping = True

    async def watch_project(self, load: Callable[[], ProjectSpec | None], interval: float = 1.0) -> None:
        """Apply curation, presentation and search changes to the project while serving (polls `load`)."""
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
                spec = dataclasses.replace(spec, servers=self.project.servers)
            if spec.search != self.project.search:
                self.search = ToolSearch(spec.search.ranker) if spec.search.enabled else None
            self.project = spec
            self._catalogue_changed(functools.partial(self.catalogue.set_project, spec))
            log.info("project %s changed; catalogue updated", self.project_name)
            await self.sessions.notify({"tools"})

    def _catalogue_changed(self, change: Callable[[], Any]) -> Any:
        """Apply a change to the catalogue and keep the server instructions in step (sessions
        that initialize from now on get the new text)."""
        result = change()
        self.server.instructions = self.catalogue.instructions
        return result

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
                          capabilities=up.capabilities, lastSeen=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self._status(up.name, status)
        if up.state == "down":
            self._settle(up.name)
            if up.fatal and up.name not in self.catalogue.down:
                # misconfigured (never retried): its favourites leave the list, with the reason
                down = {**self.catalogue.down, up.name: up.last_error or "cannot start"}
                if self._catalogue_changed(lambda: self.catalogue.set_down(down)):
                    self._notify_soon({"tools"})

    def _notify_soon(self, sections: set[str]) -> None:
        """Notify from a synchronous callback: the upstream supervisor runs in our event loop."""
        import asyncio

        with contextlib.suppress(RuntimeError):     # no loop: nobody to notify
            task = asyncio.get_running_loop().create_task(self.sessions.notify(sections))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _on_upstream_event(self, up: Upstream, event: Any) -> None:
        if event == "up":
            await self.relay.upstream_up(up)
        else:
            await self.relay.upstream_message(up, event)

    async def _on_listing(self, up: Upstream, listing: Listing) -> None:
        before = {s: self.catalogue.listings.get(up.name, {}).get(s) for s in listing}
        changed = {s for s, items in listing.items() if before.get(s) != items}
        if changed:
            # the cache first: search reads each server's about text from it for the new version
            await anyio.to_thread.run_sync(cache.write_server_entry, up.name, dict(listing),
                                           limiter=self._disk)
            if "tools" in changed:
                await self._report_pins(up.name, listing["tools"])
            self._catalogue_changed(lambda: self.catalogue.set_listing(up.name, listing))
        self._settle(up.name)
        if changed:
            told = "; notifying clients" if changed & NOTIFIED_SECTIONS else ""
            log.info("catalogue of %s changed (%s)%s", up.name, ", ".join(sorted(changed)), told)
            if "tools" in changed:
                self._index_soon()
            await self.sessions.notify(changed)

    async def _report_pins(self, server: str, tools: list[dict[str, Any]]) -> None:
        """Log the tool definitions that differ from those pinned at the server's first listing."""
        from mcpctl.catalogue.pins import changes

        mode = self.catalogue.project.pinning
        found = [] if mode == "off" else await anyio.to_thread.run_sync(changes, server, tools, limiter=self._disk)
        if found:
            log.warning("server %s: %d tool definition(s) differ from those pinned (%s): %s; read them with "
                        "mcpctl tools changes --project %s", server, len(found),
                        ", ".join(f"{c.tool} {c.kind}" for c in found[:5]) + (" …" if len(found) > 5 else ""),
                        "withheld until approved" if mode == "hold" else "served", self.project_name)

    def _index_soon(self) -> None:
        """Index the catalogue for search_tools now, in the background, not at the first search
        (`ToolSearch.warm`: its tool vectors are computed meanwhile)."""
        import asyncio

        search = self.search
        if search is None:
            return
        with contextlib.suppress(RuntimeError):     # no loop: nothing to index for
            task = asyncio.get_running_loop().create_task(search.warm(
                self.catalogue.version, self.catalogue.view(SessionKey(profile=self.stdio_profile))))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    # -- sessions ----------------------------------------------------------------------------------

    def session_key(self, caller: Caller) -> SessionKey:
        gated = self.project.gate.enabled and not self.sessions.begun(caller.session_id)
        if caller.profile is not None:
            return SessionKey(gated, caller.profile)
        return GATED_SESSION if gated else OPEN_SESSION

    def view_for(self, caller: Caller) -> View:
        """The pipeline's view for this caller's session and credential (cached per catalogue
        version and session key)."""
        if caller.profile is None:
            if self.project.gate.enabled and not self.sessions.begun(caller.session_id):
                return self.catalogue.view(GATED_SESSION)
            return self.catalogue.view(OPEN_SESSION)
        return self.catalogue.view(self.session_key(caller))

    # -- the lean path -------------------------------------------------------------------------------

    async def _fast_path(self, ctx: ServerRequestContext[Any], call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        method = ctx.method
        if method == "tools/call" or method == "tools/list":
            if initialize_accepted(ctx.session):
                caller = self.sessions.caller(ctx)
                if method == "tools/call":
                    result = await self.call_tool(caller, ctx.params or {})
                    return self.envelope(result, ctx.protocol_version)
                listed = await self._tools_page(caller, ctx.params)
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    listed.update(ttlMs=0, cacheScope="private")
                return self.envelope(listed, ctx.protocol_version)
        elif method in ("resources/list", "prompts/list") and initialize_accepted(ctx.session):
            self.sessions.identify(ctx)
        elif method == "initialize" or method == "server/discover":
            if not self._settled.is_set():
                # capabilities follow the upstreams': wait for those never seen, as tools/list does
                await self._wait_settled(self._first_contact - (time.monotonic() - self._started))
            result = await call_next(ctx)
            profile = self.sessions.request_profile(ctx)
            if profile is not None and isinstance(result, dict) and "instructions" in result:
                result["instructions"] = self.catalogue.instructions_for(profile)   # its own view's
            return result
        return await call_next(ctx)

    def envelope(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        if version in MODERN_PROTOCOL_VERSIONS:
            result.setdefault("resultType", "complete")
            meta = result.get("_meta")
            result["_meta"] = {**meta, SERVER_INFO_KEY: self._stamp} if isinstance(meta, dict) else \
                {SERVER_INFO_KEY: self._stamp}
        else:
            for key in LEGACY_ONLY_DROP:
                result.pop(key, None)
        return result

    async def tools_list_json(self, version: str, caller: Caller, cursor: Any = None) -> str:
        """The session's `tools/list` result (the page `cursor` asks for) as JSON text; the first
        page is serialized once per catalogue version, era and session key. A bad cursor raises
        MCPError -32602."""
        tools = await self._tools(caller)
        if cursor is not None:
            items, after = self._page(tools, "tools", cursor)
            return tools_list_json(items, version in MODERN_PROTOCOL_VERSIONS, self._stamp, after)
        key = (self.catalogue.version, version in MODERN_PROTOCOL_VERSIONS, self.session_key(caller))
        cached = self._list_json.get(key)
        if cached is None:
            items, after = self._page(tools, "tools", None)
            cached = tools_list_json(items, key[1], self._stamp, after)
            self._list_json = {key: cached, **{k: v for k, v in self._list_json.items()
                                               if k[0] == self.catalogue.version}}
        return cached

    def server_info_stamp(self) -> dict[str, Any]:
        """The 2026-07-28 `serverInfo` stamp (a copy)."""
        return dict(self._stamp)

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """Register a transport-level sender of list_changed notifications (method name)."""
        return self.sessions.add_notifier(notify)

    def bind_stdio(self, caller: Caller) -> None:
        """Over stdio there is one session: the client at the other end of the pipe."""
        self.sessions.stdio = caller

    def new_session_id(self) -> str:
        return new_session_id()

    async def _wait_settled(self, deadline: float) -> None:
        if not self._settled.is_set() and deadline > 0:
            with anyio.move_on_after(deadline):
                await self._settled.wait()

    async def wait_for_unlisted(self) -> None:
        """A call for a tool not listed yet: wait for the servers never listed (bounded by their
        connect timeout), as the call itself would."""
        wait = max((self.upstreams[n].spec.timeouts.connect for n in self._pending if n in self.upstreams),
                   default=0.0)
        await self._wait_settled(wait)

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    async def call_tool(self, caller: Caller, params: Any) -> dict[str, Any]:
        """Route one tools/call (wire-format params) and return the result (no era envelope)."""
        return await self.router.call_tool(caller, params)

    async def _tools(self, caller: Caller) -> list[dict[str, Any]]:
        await self._wait_settled(self._first_contact - (time.monotonic() - self._started))
        return self.view_for(caller).tools

    def _page(self, items: list[dict[str, Any]], section: str, cursor: Any) -> tuple[Any, str | None]:
        try:
            return paging.page(items, section, cursor, self.page_size, self.catalogue.version)
        except paging.CursorError as e:
            raise MCPError(code=INVALID_PARAMS, message=str(e)) from None

    def _listed(self, section: str, items: list[dict[str, Any]], params: Any) -> dict[str, Any]:
        """One page of a list result (`params`: the request's params, a model or a dict)."""
        cursor = params.get("cursor") if isinstance(params, dict) else getattr(params, "cursor", None)
        if cursor is None and self.page_size <= 0:
            return {section: items}
        page, after = self._page(items, section, cursor)
        result: dict[str, Any] = {section: list(page)}
        if after is not None:
            result["nextCursor"] = after
        return result

    async def _tools_page(self, caller: Caller, params: Any) -> dict[str, Any]:
        return self._listed("tools", await self._tools(caller), params)

    # -- ordinary handlers (the lean path normally answers tools/* first) -----------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return _era(await self._tools_page(self.sessions.caller(ctx), params), ctx)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> dict[str, Any]:
        return _era(await self.call_tool(self.sessions.caller(ctx),
                                         params.model_dump(by_alias=True, exclude_none=True)), ctx)

    async def _list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return await self._list_surface(ctx, "resources", params)

    async def _list_templates(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return await self._list_surface(ctx, "resourceTemplates", params)

    async def _list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return await self._list_surface(ctx, "prompts", params)

    async def _list_surface(self, ctx: ServerRequestContext[Any], section: str, params: Any) -> dict[str, Any]:
        await self._wait_settled(self._first_contact - (time.monotonic() - self._started))
        return _era(self._listed(section, self.surfaces.lists(self.sessions.caller(ctx), section), params), ctx)

    async def _read_resource(self, ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams
                             ) -> dict[str, Any]:
        return _era(await self.surfaces.read_resource(self.sessions.caller(ctx), params), ctx)

    async def _get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> dict[str, Any]:
        return _era(await self.surfaces.get_prompt(self.sessions.caller(ctx), params), ctx)

    # -- logging, subscriptions, completion, roots (`relay`) ---------------------------------------------

    async def _set_level(self, ctx: ServerRequestContext[Any], params: t.SetLevelRequestParams) -> dict[str, Any]:
        await self.relay.set_level(self.sessions.caller(ctx), params.level)
        return {}

    async def _subscribe(self, ctx: ServerRequestContext[Any], params: t.SubscribeRequestParams) -> dict[str, Any]:
        await self.relay.subscribe(self.sessions.caller(ctx), str(params.uri))
        return {}

    async def _unsubscribe(self, ctx: ServerRequestContext[Any], params: t.UnsubscribeRequestParams
                           ) -> dict[str, Any]:
        await self.relay.unsubscribe(self.sessions.caller(ctx).session_id, str(params.uri))
        return {}

    async def _complete(self, ctx: ServerRequestContext[Any], params: t.CompleteRequestParams) -> dict[str, Any]:
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        return _era(await self.relay.complete(self.sessions.caller(ctx), wire), ctx)

    async def _roots_changed(self, ctx: ServerRequestContext[Any], params: Any) -> None:
        await self.roots_changed()

    async def roots_changed(self) -> None:
        """A client's roots changed: tell every upstream (their next roots/list asks again)."""
        for up in self.upstreams.values():
            if up.state == "up":
                await up.notify(t.RootsListChangedNotification())


class _GatewayServer(Server[Any]):
    """The SDK's low-level server, advertising what the gateway can relay (`Relay.advertise`) and
    its list_changed notifications in every handshake (the streamable-HTTP session manager asks
    for options without arguments)."""

    def __init__(self, gw: Gateway, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gw = gw

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      *args: Any, **kwargs: Any) -> Any:
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=True, prompts_changed=True,
                                                       resources_changed=True)
        return super().create_initialization_options(notification_options, *args, **kwargs)

    def get_capabilities(self, *args: Any, **kwargs: Any) -> t.ServerCapabilities:
        return self.gw.relay.advertise(super().get_capabilities(*args, **kwargs))


def _era(result: dict[str, Any], ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    """Results from ordinary handlers: the 2026 era requires `resultType`."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        result.setdefault("resultType", "complete")
    return result
