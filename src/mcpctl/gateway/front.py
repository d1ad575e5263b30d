"""The gateway: a project's catalogue and upstreams behind one MCP server, wired here.

`Gateway` is the composition root: it builds each part and hands it only what it uses.

- `pool.Pool`: one supervised upstream per server (`upstream.supervisor.Upstream`) and first contact;
- `views.Views`: the project, its catalogue (`presentation.catalogue`) and search, and each
  session's view of them (the gate, the credential's profile);
- `listings.Listings`: the catalogue kept in step with the upstreams' listings and states and
  with project edits;
- `router.Router`: `tools/call` through the pipeline backwards to its upstream, the built-ins,
  results cut into sections, one log row per call (`calllog.CallLog`);
- `asks.Asks` and `relay.Relay`: what upstreams ask of clients during a call, and logging,
  subscriptions, completion and resources between them; `surfaces.Surfaces`: prompts,
  resources and templates through the pipeline;
- `lists.Lists` and `server.Handlers`: the SDK-facing server and its handlers, the lean path for
  `tools/*` and the era's envelope (`presentation.envelope`).

The transports (`stdio`, `early`, `http`) and `run` use the few methods below.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import anyio.abc
from mcp.types import ResourceUpdatedNotification
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl.catalogue.cache import CatalogueCache
from mcpctl.gateway.asks import Asks
from mcpctl.gateway.calllog import CallLog, Recorder
from mcpctl.gateway.knowledge import Knowledge
from mcpctl.gateway.listings import Listings, StatusWriter
from mcpctl.gateway.lists import Lists
from mcpctl.gateway.pool import FIRST_CONTACT_CAP, Pool
from mcpctl.gateway.relay import Relay
from mcpctl.gateway.router import Router
from mcpctl.gateway.server import Handlers
from mcpctl.gateway.sessions import Caller, Sessions, new_session_id
from mcpctl.gateway.surfaces import Surfaces
from mcpctl.gateway.views import Views
from mcpctl.presentation.builtins import error_result
from mcpctl.presentation.catalogue import Catalogue
from mcpctl.presentation.envelope import envelope
from mcpctl.presentation.search import Evidence
from mcpctl.presentation.sections import Sections, SectionStore
from mcpctl.resources.kinds import ProjectSpec, ServerSpec
from mcpctl.upstream.supervisor import Upstream

__all__ = ["FIRST_CONTACT_CAP", "Caller", "Gateway", "error_result"]

OpenTransport = Callable[..., Any]


def _token_count() -> Callable[[str], int]:
    """The project's token estimator, loaded when a result first needs counting (cl100k loads in ~0.1 s)."""
    from mcpctl.catalogue.tokens import token_counter

    return token_counter().count


class Gateway:
    """The project's gateway: catalogue, upstream pool and the MCP server in front."""

    def __init__(self, project_name: str, project: ProjectSpec, servers: dict[str, ServerSpec | str], *,
                 record: Recorder | None = None, on_status: StatusWriter | None = None,
                 first_contact_cap: float = FIRST_CONTACT_CAP, failed_before: Collection[str] = (),
                 stdio_profile: str | None = None,
                 preloaded: Mapping[str, dict[str, Any] | None] | None = None,
                 catalogue: Catalogue | None = None,
                 known_capabilities: Mapping[str, dict[str, Any]] | None = None,
                 page_size: int = 0, open_transport: OpenTransport | None = None,
                 evidence: Evidence | None = None, cache: CatalogueCache) -> None:
        """`preloaded`: catalogue cache entries already read (server -> entry, None if never listed);
        `catalogue`: the catalogue the early front built from them (reused, not rebuilt);
        `known_capabilities`: each server's capabilities when it was last connected (its status);
        `page_size`: items per page of the four lists (0: one page; `presentation.paging`);
        `open_transport`: how an upstream is reached (default `upstream.transport.open_transport`;
        tests connect in-memory servers); `evidence`: how search reads what the log teaches
        (`log.search_evidence`; None: search learns nothing); `cache`: where listings are kept."""
        self.project_name = project_name
        self.stdio_profile = stdio_profile                # `serve --profile`: the stdio client's view
        self.sessions = sessions = Sessions()
        self.views = views = Views(project, catalogue if catalogue is not None else Catalogue(project_name, project),
                                   sessions, cache=cache, evidence=evidence)
        self.pool = pool = Pool(first_contact_cap, failed_before)
        self.log_call = log_call = CallLog(record, project_name)
        self.surfaces = surfaces = Surfaces(views, log_call)
        self.asks = asks = Asks(pool, views)
        self.relay = relay = Relay(pool, views, asks, surfaces, known_capabilities)
        sessions.on_listen_resources = relay.listen_resources
        keep = project.results
        self.sections = Sections(keep.max_tokens, SectionStore(keep.keep_megabytes * 2**20, keep.keep_minutes * 60.0),
                                 _token_count)
        self.knowledge = Knowledge(views, lambda server, uri: relay.request(
            None, server, "resources/read", {"uri": uri}))
        self.router = router = Router(views, pool, asks, self.sections, log_call, self.knowledge)
        self.listings = listings = Listings(project_name, views, pool, sessions, on_status=on_status,
                                            stdio_profile=stdio_profile)
        transport: dict[str, Any] = {} if open_transport is None else {"open_transport": open_transport}
        for name in project.servers:
            spec = servers.get(name)
            if isinstance(spec, ServerSpec):
                pool.add(Upstream(spec, on_listing=self._on_listing, on_state=listings.on_state,
                                  era="legacy", on_event=self._on_upstream_event,
                                  client_kw={**asks.hooks(name), **relay.hooks(name)}, **transport))
            else:
                pool.unavailable[name] = spec or f"server {name!r} not found"
        views.catalogue.set_down(pool.unavailable)
        listings.load_cache(preloaded)
        self.lists = Lists(views, pool, surfaces, page_size)
        self.server = Handlers(views, pool, sessions, self.lists, router, surfaces, relay).build(project_name)
        self.lists.stamp = self.server.server_info_stamp
        listings.on_instructions = self._set_instructions

    # -- what the parts share, by name (the transports, `run` and tests read these) -------------------

    @property
    def catalogue(self) -> Catalogue:
        return self.views.catalogue

    @property
    def upstreams(self) -> dict[str, Upstream]:
        return self.pool.upstreams

    @property
    def unavailable(self) -> dict[str, str]:
        return self.pool.unavailable

    def _set_instructions(self, text: str) -> None:
        self.server.instructions = text

    async def _on_listing(self, up: Upstream, listing: Any) -> None:
        await self.listings.on_listing(up, listing)
        self.knowledge.listing_changed(up.name)

    async def _on_upstream_event(self, up: Upstream, event: Any) -> None:
        if isinstance(event, ResourceUpdatedNotification):
            self.knowledge.updated(up.name, str(event.params.uri))
        if event == "up":
            await self.relay.upstream_up(up)
        else:
            await self.relay.upstream_message(up, event)

    # -- life ----------------------------------------------------------------------------------------

    def initialization_options(self) -> Any:
        """For `Server.run`: None, so that each handshake builds its own (the capabilities follow
        the upstreams as they connect; `server.GatewayServer`)."""
        return None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start every upstream's supervisor in `tg` (they connect in parallel)."""
        self.pool.start(tg, self.listings.status)
        tg.start_soon(self.knowledge.run)
        self.listings.index_soon()

    def stopping(self) -> None:
        """The gateway is shutting down: keep each server's last known status as it is, and stop
        embedding tools for search."""
        self.pool.stopping()
        self.views.close()

    async def watch_project(self, load: Callable[[], ProjectSpec | None], interval: float = 1.0) -> None:
        """Apply curation, presentation and search changes to the project while serving (polls `load`)."""
        await self.listings.watch_project(load, interval)

    # -- sessions and the stdio transports ------------------------------------------------------------

    def envelope(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        return envelope(result, version in MODERN_PROTOCOL_VERSIONS, self.lists.stamp)

    async def tools_list_json(self, version: str, caller: Caller, cursor: Any = None) -> str:
        """The session's `tools/list` result as JSON text (`lists.Lists.tools_json`)."""
        return await self.lists.tools_json(version in MODERN_PROTOCOL_VERSIONS, caller, cursor)

    def server_info_stamp(self) -> dict[str, Any]:
        """The 2026-07-28 `serverInfo` stamp (a copy)."""
        return dict(self.lists.stamp)

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """Register a transport-level sender of list_changed notifications (method name)."""
        return self.sessions.add_notifier(notify)

    def bind_stdio(self, caller: Caller) -> None:
        """Over stdio there is one session: the client at the other end of the pipe."""
        self.sessions.stdio = caller

    def new_session_id(self) -> str:
        return new_session_id()

    async def call_tool(self, caller: Caller, params: Any) -> dict[str, Any]:
        """Route one tools/call (wire-format params) and return the result (no era envelope)."""
        return await self.router.call_tool(caller, params)
