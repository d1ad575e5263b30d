"""The SDK-facing server: one low-level `mcp.server.Server` for both protocol eras, and its handlers.

`tools/list` and `tools/call` take a lean path (a server middleware that answers them directly):
the list is the session's pre-built view, and a call's JSON is relayed to the upstream and back
without re-validating it into models on either hop, with the era's envelope
(`presentation.envelope`). Everything else goes through ordinary handlers: prompts, resources and
templates (`surfaces`), logging, subscriptions, completion and roots (`relay`). `initialize` and
`server/discover` wait for first contact (the capabilities follow the upstreams') and answer each
credential with its own view's instructions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp.types as t
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl import __version__
from mcpctl.presentation.envelope import envelope, era
from mcpctl.sdk import initialize_accepted, set_middleware

if TYPE_CHECKING:
    from mcpctl.gateway.lists import Lists
    from mcpctl.gateway.pool import Pool
    from mcpctl.gateway.relay import Relay
    from mcpctl.gateway.router import Router
    from mcpctl.gateway.sessions import Sessions
    from mcpctl.gateway.surfaces import Surfaces
    from mcpctl.gateway.views import Views


class GatewayServer(Server[Any]):
    """The SDK's low-level server, advertising what the gateway can relay (`Relay.advertise`) and
    its list_changed notifications in every handshake (the streamable-HTTP session manager asks
    for options without arguments)."""

    def __init__(self, relay: Relay, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.relay = relay

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      *args: Any, **kwargs: Any) -> Any:
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=True, prompts_changed=True,
                                                       resources_changed=True)
        return super().create_initialization_options(notification_options, *args, **kwargs)

    def get_capabilities(self, *args: Any, **kwargs: Any) -> t.ServerCapabilities:
        return self.relay.advertise(super().get_capabilities(*args, **kwargs))


def modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


class Handlers:
    """The requests a client makes of the gateway, each handed to the part that answers it."""

    def __init__(self, views: Views, pool: Pool, sessions: Sessions, lists: Lists, router: Router,
                 surfaces: Surfaces, relay: Relay) -> None:
        self.views = views
        self.pool = pool
        self.sessions = sessions
        self.lists = lists
        self.router = router
        self.surfaces = surfaces
        self.relay = relay

    def build(self, project_name: str) -> GatewayServer:
        server = GatewayServer(
            self.relay,
            "mcpctl", version=__version__, title=f"mcpctl ({project_name})",
            instructions=self.views.catalogue.instructions,
            on_list_tools=self._list_tools,     # the handlers answer wire dicts
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=self.sessions.listen,
            # Lists change whenever an upstream's does: never fresh for longer than the moment.
            cache_hints={m: CacheHint(ttl_ms=0, scope="private") for m in CACHEABLE_METHODS},
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

    # -- the lean path -------------------------------------------------------------------------------

    async def _fast_path(self, ctx: ServerRequestContext[Any], call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        method = ctx.method
        if method == "tools/call" or method == "tools/list":
            if initialize_accepted(ctx.session):
                caller = self.sessions.caller(ctx)
                is_modern = modern(ctx)
                if method == "tools/call":
                    result = await self.router.call_tool(caller, ctx.params or {})
                    return envelope(result, is_modern, self.lists.stamp)
                listed = await self.lists.tools_page(caller, ctx.params)
                if is_modern:
                    listed.update(ttlMs=0, cacheScope="private")
                return envelope(listed, is_modern, self.lists.stamp)
        elif method in ("resources/list", "prompts/list") and initialize_accepted(ctx.session):
            self.sessions.identify(ctx)
        elif method == "initialize" or method == "server/discover":
            await self.pool.first_contact()     # capabilities follow the upstreams': wait as tools/list does
            result = await call_next(ctx)
            profile = self.sessions.request_profile(ctx)
            if profile is not None and isinstance(result, dict) and "instructions" in result:
                result["instructions"] = self.views.catalogue.instructions_for(profile)   # its own view's
            return result
        return await call_next(ctx)

    # -- ordinary handlers (the lean path normally answers tools/* first) -----------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return era(await self.lists.tools_page(self.sessions.caller(ctx), params), modern(ctx))

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> dict[str, Any]:
        return era(await self.router.call_tool(self.sessions.caller(ctx),
                                               params.model_dump(by_alias=True, exclude_none=True)), modern(ctx))

    async def _list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return era(await self.lists.surface_page(self.sessions.caller(ctx), "resources", params), modern(ctx))

    async def _list_templates(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return era(await self.lists.surface_page(self.sessions.caller(ctx), "resourceTemplates", params), modern(ctx))

    async def _list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        return era(await self.lists.surface_page(self.sessions.caller(ctx), "prompts", params), modern(ctx))

    async def _read_resource(self, ctx: ServerRequestContext[Any], params: t.ReadResourceRequestParams
                             ) -> dict[str, Any]:
        caller = self.sessions.caller(ctx)
        server, fwd = self.surfaces.read_request(caller, params)
        return era(await self.relay.request(caller, server, "resources/read", fwd), modern(ctx))

    async def _get_prompt(self, ctx: ServerRequestContext[Any], params: t.GetPromptRequestParams) -> dict[str, Any]:
        caller = self.sessions.caller(ctx)
        server, fwd = self.surfaces.prompt_request(caller, params)
        return era(await self.relay.request(caller, server, "prompts/get", fwd), modern(ctx))

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
        return era(await self.relay.complete(self.sessions.caller(ctx), wire), modern(ctx))

    async def _roots_changed(self, ctx: ServerRequestContext[Any], params: Any) -> None:
        await self.pool.roots_changed(t.RootsListChangedNotification())
