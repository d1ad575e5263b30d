"""The merged catalogue: every upstream's tools, resources and prompts under one namespace.

Canonical ids are `server/tool`; presented names come from `naming` (a separate, swappable
step). The catalogue keeps wire-format (camelCase) dicts exactly as upstreams sent them,
applies curation, routes presented names, prompt names and resource URIs back to their
upstream, and pre-builds the `tools/list` answer so listing costs no serialization work.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, unquote

from mcpctl.catalogue.curation import is_enabled
from mcpctl.gateway.naming import Presentation, portable_name, presentation_for
from mcpctl.resources.kinds import ProjectSpec

RESOURCE_SCHEME: Final = "mcpctl"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
CACHE_SECTIONS: Final = ("tools", "resources", "resourceTemplates", "prompts")


def cached_listing(entry: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The sections of a catalogue cache entry (`mcpctl.catalogue.cache`) a listing is made of."""
    return {k: entry[k] for k in CACHE_SECTIONS if isinstance(entry.get(k), list)}


def tools_list_json(tools: list[dict[str, Any]], modern: bool, stamp: Mapping[str, Any]) -> str:
    """The whole `tools/list` result as JSON text: bare in the handshake era; in 2026-07-28 with
    the cache hints, `resultType` and the `serverInfo` stamp (`stamp`)."""
    body = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
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


@dataclass(frozen=True)
class ToolEntry:
    canonical_id: str
    server: str
    tool: str                      # the upstream's own name
    presented: str
    enabled: bool
    wire: dict[str, Any]           # the tool as the upstream listed it (camelCase)


class Catalogue:
    """The project's merged view of its upstreams, rebuilt whenever a listing changes."""

    def __init__(self, project: ProjectSpec, presentation: Presentation | None = None) -> None:
        self.project = project
        self.presentation = presentation or presentation_for(project)
        self.order = list(project.servers)
        self.listings: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self.entries: list[ToolEntry] = []
        self.by_presented: dict[str, ToolEntry] = {}
        self.by_canonical: dict[str, ToolEntry] = {}
        self.prompts: dict[str, tuple[str, str, dict[str, Any]]] = {}    # presented -> (server, name, wire)
        self.resources: dict[str, tuple[str, str, dict[str, Any]]] = {}  # presented uri -> (server, uri, wire)
        self.raw_uris: dict[str, str] = {}                               # upstream uri -> server
        self.templates: list[tuple[str, dict[str, Any]]] = []            # (server, wire)
        self.builtin_tools: list[dict[str, Any]] = []
        self.version = 0
        self._tools_payload: list[dict[str, Any]] = []

    # -- updates ------------------------------------------------------------------------------

    def set_listing(self, server: str, listing: Mapping[str, list[dict[str, Any]]]) -> bool:
        """Replace sections of one server's listing; True if the presented catalogue changed."""
        current = self.listings.setdefault(server, {})
        changed = False
        for section, items in listing.items():
            if current.get(section) != items:
                current[section] = list(items)
                changed = True
        if changed:
            self.rebuild()
        return changed

    def set_builtins(self, tools: Iterable[dict[str, Any]]) -> None:
        self.builtin_tools = list(tools)
        self.rebuild()

    def rebuild(self) -> None:
        entries: list[ToolEntry] = []
        by_presented: dict[str, ToolEntry] = {}
        prompts: dict[str, tuple[str, str, dict[str, Any]]] = {}
        resources: dict[str, tuple[str, str, dict[str, Any]]] = {}
        raw_uris: dict[str, str] = {}
        templates: list[tuple[str, dict[str, Any]]] = []
        reserved = {tool["name"] for tool in self.builtin_tools}
        for server in self.order:
            listing = self.listings.get(server) or {}
            for wire in listing.get("tools") or []:
                tool = wire["name"]
                cid = f"{server}/{tool}"
                presented = self.presentation.tool_name(server, tool)
                if presented in by_presented or presented in reserved:
                    presented = portable_name(presented + "_", cid, self._max_length())
                entry = ToolEntry(cid, server, tool, presented, is_enabled(cid, self.project), wire)
                entries.append(entry)
                by_presented[presented] = entry
            for wire in listing.get("prompts") or []:
                prompts[self.presentation.prompt_name(server, wire["name"])] = (server, wire["name"], wire)
            for wire in listing.get("resources") or []:
                uri = wire["uri"]
                resources[namespaced_uri(server, uri)] = (server, uri, wire)
                raw_uris.setdefault(uri, server)
            for wire in listing.get("resourceTemplates") or []:
                templates.append((server, wire))
        self.entries = entries
        self.by_presented = by_presented
        self.by_canonical = {e.canonical_id: e for e in entries}
        self.prompts = prompts
        self.resources = resources
        self.raw_uris = raw_uris
        self.templates = templates
        self._tools_payload = [
            *self.builtin_tools,
            *({**e.wire, "name": e.presented} for e in entries if e.enabled),
        ]
        self.version += 1

    def _max_length(self) -> int:
        return getattr(self.presentation, "max_length", 48)

    # -- views ----------------------------------------------------------------------------------

    @property
    def tools_payload(self) -> list[dict[str, Any]]:
        """The presented `tools` array (built-ins first), shared: do not mutate."""
        return self._tools_payload

    def enabled_entries(self) -> list[ToolEntry]:
        return [e for e in self.entries if e.enabled]

    def prompt_list(self) -> list[dict[str, Any]]:
        return [{**wire, "name": name} for name, (_, _, wire) in self.prompts.items()]

    def resource_list(self) -> list[dict[str, Any]]:
        return [{**wire, "uri": uri} for uri, (_, _, wire) in self.resources.items()]

    def template_list(self) -> list[dict[str, Any]]:
        return [wire for _, wire in self.templates]

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
