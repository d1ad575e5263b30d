"""The merged catalogue: every upstream's tools, resources and prompts under one namespace.

Canonical ids are `server/tool`. The catalogue keeps wire-format (camelCase) dicts exactly as
upstreams sent them and routes prompt names and resource URIs back to their upstream; what a
session sees of the tools, and how a tool name routes, comes from the presentation pipeline
(`presentation.view`), whose views it builds once per catalogue version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote

from mcpctl.catalogue.cache import SECTIONS
from mcpctl.errors import NotFound
from mcpctl.presentation.envelope import SERVER_INFO_KEY
from mcpctl.presentation.names import Namer, assign, prompt_key, shared_names
from mcpctl.presentation.overrides import reworded
from mcpctl.presentation.view import (
    OPEN_SESSION,
    CatalogueTool,
    NameTable,
    SessionKey,
    View,
    build_view,
    instructions,
)
from mcpctl.resources.kinds import ProjectSpec, ServerSpec

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.resources.store import ResourceStore

RESOURCE_SCHEME: Final = "mcpctl"


def cached_listing(entry: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The sections of a catalogue cache entry (`mcpctl.catalogue.cache`) a listing is made of."""
    return {k: entry[k] for k in SECTIONS if isinstance(entry.get(k), list)}


def tools_list_json(tools: Sequence[dict[str, Any]], modern: bool, stamp: Mapping[str, Any],
                    next_cursor: str | None = None) -> str:
    """A `tools/list` result as JSON text: bare in the handshake era; in 2026-07-28 with the
    cache hints, `resultType` and the `serverInfo` stamp (`stamp`); `nextCursor` when given."""
    body = json.dumps(tools if isinstance(tools, list) else list(tools), ensure_ascii=False, separators=(",", ":"))
    if next_cursor is not None:
        body += ',"nextCursor":' + json.dumps(next_cursor)
    if not modern:
        return '{"tools":' + body + "}"
    tail = json.dumps({"ttlMs": 0, "cacheScope": "private", "resultType": "complete",
                       "_meta": {SERVER_INFO_KEY: stamp}}, separators=(",", ":"))
    return '{"tools":' + body + "," + tail[1:]


def namespaced_uri(server: str, uri: str) -> str:
    return f"{RESOURCE_SCHEME}://{server}/{quote(uri, safe='')}"


def split_namespaced_uri(uri: str) -> tuple[str, str] | None:
    prefix = f"{RESOURCE_SCHEME}://"
    if not uri.startswith(prefix):
        return None
    server, _, rest = uri[len(prefix):].partition("/")
    return (server, unquote(rest)) if server and rest else None


class Catalogue:
    """The project's merged view of its upstreams, rebuilt whenever a listing changes.

    Tools are kept in canonical form (`catalogue.tool.CatalogueTool`); what a session sees of them comes
    from the presentation pipeline (`view(session)`), built once per catalogue version and
    session key.
    """

    def __init__(self, project_name: str, project: ProjectSpec) -> None:
        self.project_name = project_name
        self.project = project
        self.order = list(project.servers)
        self.listings: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self.down: dict[str, str] = {}                                   # server -> why it cannot serve
        self.tools: list[CatalogueTool] = []
        self.table = NameTable([], project)
        self.prompts: dict[str, tuple[str, str, dict[str, Any]]] = {}    # presented -> (server, name, wire)
        self.resources: dict[str, tuple[str, str, dict[str, Any]]] = {}  # presented uri -> (server, uri, wire)
        self.raw_uris: dict[str, str] = {}                               # upstream uri -> server
        self.templates: list[tuple[str, dict[str, Any]]] = []            # (server, wire)
        self.version = 0
        self.held: dict[str, str] = {}          # pinning: hold -> tools withheld until approved (`pins.held`)
        self._views: dict[SessionKey, View] = {}
        self._open: View | None = None
        self._instructions: dict[SessionKey, str] = {}

    # -- updates ------------------------------------------------------------------------------

    def set_listing(self, server: str, listing: Mapping[str, list[dict[str, Any]]]) -> bool:
        """Replace sections of one server's listing; True if the catalogue changed."""
        return self.set_listings({server: listing})

    def set_listings(self, listings: Mapping[str, Mapping[str, list[dict[str, Any]]]]) -> bool:
        """Replace sections of several servers' listings at once (one rebuild); True if changed."""
        changed = False
        for server, listing in listings.items():
            current = self.listings.setdefault(server, {})
            for section, items in listing.items():
                if current.get(section) != items:
                    current[section] = list(items)
                    changed = True
        if changed:
            self.rebuild()
        return changed

    def set_down(self, down: Mapping[str, str]) -> bool:
        """Servers that cannot serve at all (not registered, misconfigured); True if changed."""
        if dict(down) == self.down:
            return False
        self.down = dict(down)
        self.rebuild()
        return True

    def recheck_held(self) -> bool:
        """Read the pins again (`pinning: hold`: an approval releases a tool); True if what is
        withheld changed (the views are rebuilt)."""
        if self.project.pinning != "hold" or self._held() == self.held:
            return False
        self.rebuild()
        return True

    def set_project(self, project: ProjectSpec) -> None:
        self.project = project
        self.rebuild()

    def rebuild(self) -> None:
        tools: list[CatalogueTool] = []
        seen: set[str] = set()
        prompt_requests: dict[str, str] = {}
        prompt_items: dict[str, tuple[str, str, dict[str, Any]]] = {}
        resources: dict[str, tuple[str, str, dict[str, Any]]] = {}
        raw_uris: dict[str, str] = {}
        templates: list[tuple[str, dict[str, Any]]] = []
        listed_prompts = [(server, str(wire.get("name"))) for server in self.order
                        for wire in (self.listings.get(server) or {}).get("prompts") or []]
        namer = Namer(self.project.names.style, self.project.names.max_length, shared_names(listed_prompts))
        overrides = {o.tool: o for o in self.project.overrides}
        for server in self.order:
            listing = self.listings.get(server) or {}
            for wire in listing.get("tools") or []:
                name = wire.get("name")
                cid = f"{server}/{name}"
                if not isinstance(name, str) or cid in seen:     # an upstream listing one name twice
                    continue
                seen.add(cid)
                # the overrides stage: every stage after this one sees the project's wording
                tools.append(reworded(CatalogueTool(cid, server, name, wire), overrides.get(cid)))
            for wire in listing.get("prompts") or []:
                name = wire.get("name")
                if not isinstance(name, str):
                    continue
                key = prompt_key(server, name)
                if key not in prompt_items:
                    prompt_requests[key] = namer.prompt(server, name)
                    prompt_items[key] = (server, name, wire)
            for wire in listing.get("resources") or []:
                uri = wire["uri"]
                resources[namespaced_uri(server, uri)] = (server, uri, wire)
                raw_uris.setdefault(uri, server)
            for wire in listing.get("resourceTemplates") or []:
                templates.append((server, wire))
        prompt_names = assign(prompt_requests, namer.max_length, namer.style)
        self.tools = tools
        self.table = NameTable(tools, self.project)
        self.prompts = {prompt_names[key]: item for key, item in prompt_items.items()}
        self.resources = resources
        self.raw_uris = raw_uris
        self.templates = templates
        self.held = self._held()
        self._views = {}
        self._open = None
        self._instructions = {}
        self.version += 1

    # -- views ----------------------------------------------------------------------------------

    def _held(self) -> dict[str, str]:
        """The tools `pinning: hold` withholds (reads the servers' pins; none under warn or off)."""
        if self.project.pinning != "hold":
            return {}
        from mcpctl.catalogue.pins import held

        return held({s: (self.listings.get(s) or {}).get("tools") or [] for s in self.order})

    def view(self, session: SessionKey = OPEN_SESSION) -> View:
        """What a session with this key sees (built once per catalogue version)."""
        if session is OPEN_SESSION and self._open is not None:     # the hot path: no key hashing
            return self._open
        v = self._views.get(session)
        if v is not None:
            return v
        if session.gated and not self.project.gate.enabled:
            session = SessionKey(False, session.profile)
            v = self._views.get(session)
        if v is None:
            v = self._views[session] = build_view(self.project_name, self.project, self.table, session, self.down,
                                                  self.held)
        if session == OPEN_SESSION:
            self._open = v
        return v

    @property
    def instructions(self) -> str:
        """The server instructions for this catalogue (every stage's text), for the full view."""
        return self.instructions_for(None)

    def instructions_for(self, profile: str | None) -> str:
        """The instructions a session of this credential profile gets: they name only what its
        view lists (a gated session gets those of its view once begun, with the gate's text)."""
        key = SessionKey(False, profile)
        text = self._instructions.get(key)
        if text is None:
            text = self._instructions[key] = instructions(self.project_name, self.project, self.view(key))
        return text

    # The three other lists, each through the view's filters (by server: `View.servers`).

    def prompt_list(self, view: View | None = None) -> list[dict[str, Any]]:
        return [{**wire, "name": name} for name, (server, _, wire) in self.prompts.items() if _sees(view, server)]

    def resource_list(self, view: View | None = None) -> list[dict[str, Any]]:
        return [{**wire, "uri": uri} for uri, (server, _, wire) in self.resources.items() if _sees(view, server)]

    def template_list(self, view: View | None = None) -> list[dict[str, Any]]:
        return [wire for server, wire in self.templates if _sees(view, server)]

    def template_owner(self, uri_template: str) -> str | None:
        """The server that lists the template `uri_template`, if any."""
        return next((s for s, wire in self.templates if wire.get("uriTemplate") == uri_template), None)

    def route_resource(self, uri: str) -> tuple[str, str] | None:
        """(server, upstream uri) for a presented or upstream URI, or None."""
        hit = self.resources.get(uri)
        if hit is not None:
            return hit[0], hit[1]
        split = split_namespaced_uri(uri)
        if split is not None and split[0] in self.listings:
            return split
        if uri in self.raw_uris:
            return self.raw_uris[uri], uri
        for server, wire in self.templates:   # URIs produced from an upstream's template
            prefix = str(wire.get("uriTemplate", "")).split("{", 1)[0]
            if prefix and uri.startswith(prefix):
                return server, uri
        return None


def _sees(view: View | None, server: str) -> bool:
    return view is None or server in view.servers


# -- a project's catalogue without a gateway (the CLI, the early stdio front) -----------------------


def load_gateway_config(project_name: str, store: ResourceStore
                        ) -> tuple[ProjectSpec, dict[str, ServerSpec | str]]:
    """The project and its servers; a missing server is reported by name, not raised."""
    project = ProjectSpec.from_resource(store.get("Project", project_name))
    servers: dict[str, ServerSpec | str] = {}
    for name in project.servers:
        try:
            servers[name] = ServerSpec.from_resource(store.get("Server", name))
        except NotFound as e:
            servers[name] = f"{e.message} ({e.hint})" if e.hint else e.message
    return project, servers


def catalogue_from(project_name: str, project: ProjectSpec, servers: Mapping[str, ServerSpec | str],
                   entries: Mapping[str, dict[str, Any] | None]) -> Catalogue:
    """The catalogue a gateway starts from: the cached listings, unregistered servers down."""
    cat = Catalogue(project_name, project)
    cat.set_down({name: spec for name, spec in servers.items() if isinstance(spec, str)})
    cat.set_listings({name: cached_listing(entry) for name, entry in entries.items() if entry is not None})
    return cat


@dataclass
class CachedCatalogue:
    """A project's catalogue as the gateway would start serving it, read from the cache."""

    project: ProjectSpec
    catalogue: Catalogue
    unlisted: list[str] = field(default_factory=list)       # registered servers never listed
    missing: dict[str, str] = field(default_factory=dict)   # servers not registered -> why
    # the cache entries it was read from (server -> entry, None: never listed): what else reads the
    # listings (pins) reads them here rather than parse every server's file again
    entries: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def view(self, session: SessionKey = OPEN_SESSION) -> View:
        return self.catalogue.view(session)


def cached_catalogue(project_name: str, store: ResourceStore, cache: CatalogueCache) -> CachedCatalogue:
    """What `mcpctl serve --project P` would present right now, from the catalogue cache, so the
    CLI (`tools list`, `tools search`, `favourites list`) shows exactly what a client gets."""
    project, servers = load_gateway_config(project_name, store)
    entries = {name: cache.read_server_entry(name) for name, spec in servers.items() if isinstance(spec, ServerSpec)}
    cat = catalogue_from(project_name, project, servers, entries)
    return CachedCatalogue(project, cat, [n for n, e in entries.items() if e is None],
                           {n: s for n, s in servers.items() if isinstance(s, str)}, entries)
