"""The presentation pipeline: what a session's `tools/list` shows and where a call goes (no `mcp`).

One pipeline, in DESIGN §4's order, for `tools/list`, `search_tools`, `call_tool`, the router,
the early stdio front and the CLI (`tools list`, `favourites list`) alike:

    upstream listings -> overrides -> curation -> credential view -> session gate -> presentation -> names
    -> built-ins

Each stage is a small object with one job; `build_view` here runs them in that order. Where
each stage lives:

- overrides: `presentation.overrides`, applied once per catalogue version as the catalogue makes
  its tools (`Catalogue.rebuild`), so every stage below reads the project's wording of a tool and
  routes by its upstream name; backwards, the router turns a call's arguments into the server's.

- curation, credential view, session gate: the filters `Curation`, `CredentialView` and `Gate`
  (`presentation.filters`). They answer `check(tool)`: forward they drop what they refuse, in reverse
  they refuse the call with the reason.
- presentation: `presentation.modes` (`PRESENTATIONS` picks one from the project spec)
  decides which slots a tool takes (`favourite`, `all`, `flat`) and whether a slot is listed or
  only reachable (the deferred mode's long tail).
- names: `NameTable` here (per catalogue version, over `presentation.names`) names every slot of
  every catalogue tool, unique by construction and independent of curation, so enabling or
  disabling a tool never renames another.
- built-ins: mcpctl's own tools at top level, defined in `presentation.builtins`, added here.

A call walks it backwards: presented name (any style or slot form, or the canonical id) ->
canonical `server/tool` -> every filter checked again -> route. `View` is computed once per
catalogue version and session key (gated or not, and the credential's profile).

Prompts, resources and resource templates go through the same filters, by server: a server's
items go by the id `server/*` (`server_items`), so the rules that cover the whole server (`vault/*`,
`*`) decide them and a rule naming some of its tools (`vault/read_doc`) does not. The read-only
profile admits them (reading a resource or getting a prompt changes nothing); the gate hides them
until the session has begun. `View.servers` are the servers whose items a session sees,
`View.uses(server)` whether anything passes between the session and that server at all.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcpctl.catalogue.tool import CatalogueTool
from mcpctl.presentation import names as nm
from mcpctl.presentation.builtins import (
    ALWAYS_LOAD,
    BEGIN_SESSION,
    BUILTIN_NAMES,
    CALL_TOOL,
    GATEWAY_META,
    SEARCH_TOOL,
    ask_definition,
    begin_session_definition,
    call_tool_definition,
    read_result_definition,
    search_tool_definition,
)
from mcpctl.presentation.filters import (
    GATED,
    CredentialView,
    Curation,
    Filter,
    Gate,
    Pinning,
    Refusal,
    read_only,
    server_items,
)
from mcpctl.presentation.modes import DEFERRED, FLAT, presentation_for
from mcpctl.resources.kinds import ProjectSpec


@dataclass(frozen=True, slots=True)
class SessionKey:
    """What a view depends on besides the catalogue: the session's gate state (and, with
    credential profiles, the profile)."""

    gated: bool = False
    profile: str | None = None


OPEN_SESSION: Final = SessionKey()
GATED_SESSION: Final = SessionKey(gated=True)


@dataclass(frozen=True, slots=True)
class Route:
    tool: CatalogueTool
    presented: str                  # the name the call used


# -- names: every slot of every catalogue tool, once per catalogue version ------------------------------


class NameTable:
    """Presented names of every catalogue tool in the project's style and mode, and the reverse
    map from any name a client may use (either style, any slot form, the canonical id)."""

    def __init__(self, tools: Sequence[CatalogueTool], project: ProjectSpec) -> None:
        self.namer = nm.Namer(project.names.style, project.names.max_length,
                              nm.shared_names((t.server, t.label) for t in tools), reserved=BUILTIN_NAMES,
                              servers=frozenset(project.servers) | {t.server for t in tools})
        self.presentation = presentation_for(project.presentation, instruction=project.favourite_index.instruction)
        self.by_cid = {t.canonical_id: t for t in tools}
        pinned = [cid for cid in project.favourite_index.tools if cid in self.by_cid] \
            if project.favourite_index.enabled else []
        self.pinned = pinned
        self._qualified = _shared_tool_names([self.by_cid[c] for c in pinned])
        requests: dict[str, str] = {}
        self._slot_of: dict[str, tuple[str, str]] = {}           # key -> (slot kind, cid)
        for kind, key, raw, cid in self._requests(self.namer, tools, pinned):
            requests[key] = raw
            self._slot_of[key] = (kind, cid)
        # A presented name must not be another tool's canonical id (names route before ids). A
        # flat name is its own tool's id or clashes in `assign`; `all`/`favourite` names can be
        # another's id only in spec style with a server named `all` or `favourite`: reserve them.
        reserved = BUILTIN_NAMES if FLAT in self.presentation.slot_kinds else BUILTIN_NAMES | self.by_cid.keys()
        assigned = nm.assign(requests, self.namer.max_length, self.namer.style, reserved=reserved)
        self.names: dict[tuple[str, str], str] = {}              # (slot kind, cid) -> name
        self.primary: dict[str, tuple[str, CatalogueTool]] = {}  # name -> (slot kind, tool)
        for key, name in assigned.items():
            kind, cid = self._slot_of[key]
            self.names[(kind, cid)] = name
            self.primary[name] = (kind, self.by_cid[cid])
        self._aliases: dict[str, tuple[str, CatalogueTool] | None] | None = None

    def _requests(self, namer: nm.Namer, tools: Sequence[CatalogueTool], pinned: Sequence[str]
                  ) -> Iterable[tuple[str, str, str, str]]:
        """(slot kind, key, raw name, canonical id) for every slot this mode names."""
        kinds = self.presentation.slot_kinds
        for t in tools:
            if FLAT in kinds:
                yield FLAT, nm.flat_key(t.canonical_id), namer.flat(t.server, t.label), t.canonical_id
            if nm.ALL in kinds:
                yield nm.ALL, nm.all_key(t.canonical_id), namer.all(t.server, t.label), t.canonical_id
        if nm.FAVOURITE in kinds:
            for cid in pinned:
                t = self.by_cid[cid]
                yield (nm.FAVOURITE, nm.favourite_key(cid),
                       namer.favourite(t.server, t.label, qualified=t.label in self._qualified), cid)

    def name(self, kind: str, cid: str) -> str | None:
        return self.names.get((kind, cid))

    def lookup(self, name: str) -> tuple[str, CatalogueTool] | None:
        """(slot kind, tool) that `name` stands for, or None."""
        hit = self.primary.get(name)
        if hit is not None:
            return hit
        tool = self.by_cid.get(name)
        if tool is not None:
            return "canonical", tool
        if self._aliases is None:
            self._aliases = self._build_aliases()
        return self._aliases.get(name)

    def _build_aliases(self) -> dict[str, tuple[str, CatalogueTool] | None]:
        """Names of the other style and the other modes' slot forms, so a client that listed under
        another configuration still reaches the same tool. An alias two tools could claim maps to
        None (unknown): it never routes to a guess."""
        aliases: dict[str, tuple[str, CatalogueTool] | None] = {}
        pinned = set(self.pinned)
        for style in nm.STYLES:
            namer = dataclasses.replace(self.namer, style=style)
            for t in self.by_cid.values():
                cid = t.canonical_id
                forms = [(FLAT, namer.flat(t.server, t.label), nm.flat_key(cid)),
                         (nm.ALL, namer.all(t.server, t.label), nm.all_key(cid))]
                if cid in pinned:
                    forms += [(nm.FAVOURITE, namer.favourite(t.server, t.label), nm.favourite_key(cid)),
                              (nm.FAVOURITE, namer.favourite(t.server, t.label, qualified=True), nm.favourite_key(cid))]
                for kind, raw, key in forms:
                    name = nm.fit(raw, key, namer.max_length, style)
                    if name in self.primary or name in self.by_cid or name in BUILTIN_NAMES:
                        continue
                    prev = aliases.get(name, ...)
                    if prev is ...:
                        aliases[name] = (kind, t)
                    elif prev is not None and prev[1].canonical_id != cid:
                        aliases[name] = None
        return aliases


def _shared_tool_names(tools: Sequence[CatalogueTool]) -> frozenset[str]:
    seen: dict[str, int] = {}
    for t in tools:
        seen[t.label] = seen.get(t.label, 0) + 1
    return frozenset(n for n, count in seen.items() if count > 1)


# -- the view -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Favourite:
    """One pinned favourite as a session sees it: listed under `name`, or why not."""

    canonical_id: str
    name: str | None
    listed: bool
    reason: str | None
    description: str = ""
    pending: bool = False           # its server has not been listed yet: expected, not known


@dataclass
class View:
    """What one session key sees: the `tools/list` payload, the names it may call, the
    favourites with their reasons, and what `search_tools` ranks."""

    mode: str
    session: SessionKey
    tools: list[dict[str, Any]]                   # the tools/list array: shared, do not mutate
    favourites: list[Favourite]
    searchable: list[CatalogueTool]               # visible upstream tools (ranked by search_tools)
    builtins: frozenset[str]                      # built-ins this session may call
    table: NameTable
    filters: tuple[Filter, ...]
    _present: dict[str, str] = field(default_factory=dict)    # cid -> the name to call it by
    _visible: frozenset[str] = frozenset()                    # ids every content filter passed
    servers: frozenset[str] = frozenset()     # servers whose prompts, resources, templates it sees
    _uses: frozenset[str] = frozenset()       # servers it sees anything of

    @property
    def listed_names(self) -> list[str]:
        return [t["name"] for t in self.tools]

    def present(self, canonical_id: str) -> str | None:
        """The name a session calls `canonical_id` by: its favourite name when it is a listed
        favourite, else its `all`/flat name (None when not visible)."""
        return self._present.get(canonical_id)

    def resolve(self, name: str) -> Route | Refusal | None:
        """Walk the pipeline backwards: the tool `name` stands for, with every filter checked
        again (a `Refusal` says which and why), or None when no tool has that name."""
        hit = self.table.lookup(name)
        if hit is None:
            return None
        tool = hit[1]
        if self.session.gated:                      # the gate: walking backwards, the first filter met
            gate = self.filters[0].check(tool)
            if gate is not None:
                return gate
        if tool.canonical_id in self._visible:      # passed the same filters when this view was built
            return Route(tool, name)
        for f in self.filters[1:]:
            refusal = f.check(tool)
            if refusal is not None:
                return refusal
        return Route(tool, name)

    def admit(self, server: str, what: str) -> Refusal | None:
        """Whether the session may reach `server`'s prompt, resource or template `what` (its
        list, read, get, completion or subscription): None, or the refusal, as for a tool."""
        if server in self.servers:
            return None
        return next((r for f in self.filters if (r := f.check_server(server, what)) is not None),
                    Refusal("denied", "NotPermitted", f"{what} is not served in this project"))

    def uses(self, server: str) -> bool:
        """Whether anything passes between this session and `server`: its requests to the
        client (roots, sampling, elicitation), log messages and resource updates."""
        return server in self._uses


def build_view(project_name: str, project: ProjectSpec, table: NameTable, session: SessionKey,
               down: Mapping[str, str] | None = None, held: Mapping[str, str] | None = None) -> View:
    """The view of one session key over a named catalogue. `down`: servers that cannot serve
    (not registered, misconfigured) -> why; their favourites are left out with that reason. `held`:
    tools withheld by `pinning: hold` (canonical id -> changed | new)."""
    down = down or {}
    # the gate first: walking backwards, it is the first filter a call meets
    filters: tuple[Filter, ...] = (Gate(project.gate.enabled and session.gated),
                                   Curation(project_name, project),
                                   Pinning(project_name, held or {}),
                                   CredentialView(project_name, project, session.profile))
    content_filters = filters[1:]                 # what the session may see once it has begun
    searchable = [t for t in table.by_cid.values() if all(f.check(t) is None for f in content_filters)]
    visible_ids = {t.canonical_id for t in searchable}
    favourites = _favourites(project, table, content_filters, visible_ids, down)
    listed_favs = [table.by_cid[f.canonical_id] for f in favourites if f.listed]
    pres = table.presentation
    gated = project.gate.enabled and session.gated
    before, after = ([], []) if gated else pres.arrange(searchable, listed_favs)
    present: dict[str, str] = {}
    payload: list[dict[str, Any]] = []
    for slot in before:
        name = table.name(slot.kind, slot.tool.canonical_id)
        if name is None:              # pragma: no cover - every arranged slot was named
            continue
        present.setdefault(slot.tool.canonical_id, name)
        payload.append(_listed(slot.tool, name, always_load=slot.kind == nm.FAVOURITE))
    builtins, callable_builtins = _builtins(project, gated)
    payload.extend(builtins)
    for slot in after:
        name = table.name(slot.kind, slot.tool.canonical_id)
        if name is None:              # pragma: no cover
            continue
        present.setdefault(slot.tool.canonical_id, name)
        if slot.pointer:
            payload.append(_pointer(slot.tool, name, present[slot.tool.canonical_id]))
        elif slot.listed:
            payload.append(_listed(slot.tool, name, always_load=False))
    servers = frozenset() if gated else \
        frozenset(s for s in project.servers if all(f.check_server(s, "") is None for f in content_filters))
    uses = frozenset() if gated else servers | {t.server for t in searchable}
    return View(pres.mode, session, payload, favourites, searchable, callable_builtins, table, filters, present,
                frozenset(visible_ids), servers, uses)


def _favourites(project: ProjectSpec, table: NameTable, filters: Sequence[Filter], visible: set[str],
                down: Mapping[str, str]) -> list[Favourite]:
    out: list[Favourite] = []
    if not project.favourite_index.enabled:
        return out
    servers = set(project.servers)
    listed = 0
    for cid in project.favourite_index.tools:
        server = cid.split("/", 1)[0]
        tool = table.by_cid.get(cid)
        name = table.name(nm.FAVOURITE, cid)
        reason: str | None = None
        if server not in servers:
            reason = f"server {server!r} is not one of the project's servers"
        elif server in down:
            reason = f"server {server!r} is down: {down[server]}"
        elif tool is None:
            if any(t.server == server for t in table.by_cid.values()):
                reason = f"no tool {cid!r} in the catalogue"
            else:
                reason = f"server {server!r} has not been listed yet"
                out.append(Favourite(cid, _expected_name(table, project, cid), False, reason, "", pending=True))
                continue
        else:
            refusal = next((r for f in filters if (r := f.check(tool)) is not None), None)
            if refusal is not None:
                reason = "disabled in the project (tools.disabled)" if refusal.error_class == "ToolDisabled" \
                    else refusal.message
            elif cid not in visible:          # pragma: no cover - filters decide visibility
                reason = "not visible"
        if reason is None and listed >= project.favourite_index.max_favourites:   # pragma: no cover
            reason = f"over favouriteIndex.maxFavourites ({project.favourite_index.max_favourites})"
        ok = reason is None
        listed += ok
        out.append(Favourite(cid, name, ok, reason, tool.description if tool else ""))
    return out


def _expected_name(table: NameTable, project: ProjectSpec, cid: str) -> str:
    """The favourite name a pinned tool of a server not listed yet will most likely get (the
    names stage decides for good once the server lists it)."""
    renamed = {o.tool: o.name for o in project.overrides if o.name}     # tools.overrides names it
    pinned_names = [renamed.get(c) or c.split("/", 1)[1] for c in project.favourite_index.tools if "/" in c]
    server, _, tool = cid.partition("/")
    tool = renamed.get(cid) or tool
    raw = table.namer.favourite(server, tool, qualified=pinned_names.count(tool) > 1)
    return nm.fit(raw, nm.favourite_key(cid), table.namer.max_length, table.namer.style)


def _listed(tool: CatalogueTool, name: str, *, always_load: bool) -> dict[str, Any]:
    """A tool as listed under `name`; the `_meta` keys the gateway itself sets (`GATEWAY_META`:
    `anthropic/alwaysLoad`) are the gateway's only: an upstream's own are never passed on, so an
    approved server cannot later make its tools always loaded in the client without review."""
    item = {**tool.wire, "name": name}
    meta = item.get("_meta")
    if isinstance(meta, dict) and not GATEWAY_META.isdisjoint(meta):
        meta = {k: v for k, v in meta.items() if k not in GATEWAY_META}
        if meta:
            item["_meta"] = meta
        else:
            del item["_meta"]
    if always_load:
        item["_meta"] = {**meta, ALWAYS_LOAD: True} if isinstance(meta, dict) else {ALWAYS_LOAD: True}
    return item


def _pointer(tool: CatalogueTool, name: str, favourite: str) -> dict[str, Any]:
    """The `all` entry of a listed favourite: the same tool, described once (under `favourite`)."""
    item: dict[str, Any] = {"name": name, "description": f"Same tool as {favourite} (a favourite, listed above): "
                            "call it by that name.", "inputSchema": {"type": "object"}}
    annotations = tool.wire.get("annotations")
    if isinstance(annotations, dict):
        item["annotations"] = annotations
    return item


def _builtins(project: ProjectSpec, gated: bool) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """(built-ins listed, built-ins callable). Once a session has begun, `begin_session` is no
    longer listed but still answers (it repeats the briefing for a new task)."""
    if gated:
        return [begin_session_definition()], frozenset({BEGIN_SESSION})
    deferred = project.presentation == DEFERRED
    out: list[dict[str, Any]] = []
    if project.search.enabled:
        out.append(search_tool_definition(project.search.top_k, deferred=deferred))
    if deferred:
        out.append(call_tool_definition())
    if project.results.max_tokens:
        out.append(read_result_definition(always_load=project.presentation != FLAT))
    if project.ask.enabled:
        out.append(ask_definition(project.ask.top_k, always_load=project.presentation != FLAT))
    callable_ = {b["name"] for b in out} | ({BEGIN_SESSION} if project.gate.enabled else set())
    return out, frozenset(callable_)


def instructions(project_name: str, project: ProjectSpec, view: View) -> str:
    """The server instructions: every stage's text, concatenated (both protocol eras send it)."""
    parts = [f"mcpctl gateway for project {project_name!r}."]
    if project.gate.enabled:
        parts.append(f"Call {BEGIN_SESSION} with your task before anything else: until then it is your only "
                     "tool. It returns this project's instructions, its favourite tools and the best matches "
                     "for the task, and then unlocks the full list.")
    # favourites of servers not listed yet are named too (the instructions are sent once, at
    # initialize, often before a first start has listed anything) when the view could list them
    fav_names = [f.name for f in view.favourites if f.name and (f.listed or (f.pending and _may_list(view, f)))]
    parts.append(view.table.presentation.instructions(view.table.namer, fav_names, project.search.enabled))
    return " ".join(parts)


def _may_list(view: View, fav: Favourite) -> bool:
    """Whether a favourite of a server not listed yet could be listed in this view (its annotations
    are not known: the read-only profile admits it only when allowed by name)."""
    server, _, name = fav.canonical_id.partition("/")
    tool = CatalogueTool(fav.canonical_id, server, name, {})
    return all(f.check(tool) is None for f in view.filters[1:])


__all__ = [
    "CALL_TOOL",
    "GATED",
    "SEARCH_TOOL",
    "CatalogueTool",
    "CredentialView",
    "Curation",
    "Favourite",
    "Filter",
    "Gate",
    "NameTable",
    "Refusal",
    "Route",
    "SessionKey",
    "View",
    "build_view",
    "instructions",
    "read_only",
    "server_items",
]
