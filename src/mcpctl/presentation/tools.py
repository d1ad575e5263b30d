"""A project's tools as `mcpctl tools list|enable|disable` reads and edits them, without the CLI.

`tool_rows` is one row per catalogue tool, named as the gateway presents it (the same pipeline),
with its state, hints, effect, pin changes and poisoning flags: the shape of `tools list -o json`.
`curate` enables or disables ids and globs in the project's spec, refusing (unless forced) those
that match no tool their server last listed. `flags_of` scans definitions for what tool poisoning
uses. Nothing heavy at load: the CLI imports this module at its start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.poison import Flag
    from mcpctl.catalogue.tool import CatalogueTool
    from mcpctl.presentation.catalogue import CachedCatalogue
    from mcpctl.resources.store import ResourceStore


def flags_of(tools: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[str, list[Flag]]:
    """tool id -> its flags, for each (id, wire definition) that carries any (None: nothing to scan)."""
    from mcpctl.catalogue.poison import scan_definition

    found: dict[str, list[Flag]] = {}
    for tool, wire in tools:
        flags = scan_definition(tool, wire) if wire is not None else []
        if flags:
            found[tool] = flags
    return found


def tool_rows(cached: CachedCatalogue, cache: CatalogueCache) -> list[dict[str, Any]]:
    """One row per catalogue tool, named as the gateway presents it (the same pipeline)."""
    from mcpctl.catalogue.effect import wire_effect
    from mcpctl.presentation.modes import FLAT
    from mcpctl.presentation.names import ALL
    from mcpctl.presentation.view import Refusal

    view = cached.view()
    listed = set(view.listed_names)
    table = view.table
    slot = FLAT if FLAT in table.presentation.slot_kinds else ALL
    favourites = {f.canonical_id: f.name for f in view.favourites if f.listed}
    rows: list[dict[str, Any]] = []
    pinned = pin_changes(cached.catalogue.tools, cache, cached.entries)
    # flags read what the server wrote (an override never hides a poisoned description)
    flagged = flags_of((t.canonical_id, t.own) for t in cached.catalogue.tools)
    for tool in cached.catalogue.tools:
        cid = tool.canonical_id
        name = table.name(slot, cid) or cid
        ann = tool.wire.get("annotations") or {}
        refused = view.resolve(cid)
        enabled = not isinstance(refused, Refusal)
        held = isinstance(refused, Refusal) and refused.error_class == "ToolHeld"
        effect = wire_effect(tool.wire)
        rows.append({
            "server": tool.server, "canonicalId": cid, "presentedName": name,
            "state": "enabled" if enabled else "held" if held else "disabled",
            "listed": name in listed,
            "favouriteName": favourites.get(cid),
            "readOnly": ann.get("readOnlyHint"), "destructive": ann.get("destructiveHint"),
            # what search reads the tool as doing (reads, records, changes, deletes, runs), and from what
            "effect": {"class": effect.effect, "source": effect.source or None, "evidence": effect.evidence},
            "description": tool.description,
            "pinned": pinned.get(cid),       # changed | new since its server was pinned (tools changes)
            "flags": [{"kind": f.kind, "why": f.why, "text": f.text} for f in flagged.get(cid, [])],
            "overridden": tool.override is not None,     # tools.overrides rewords it (tools show)
        })
    return rows


def pin_changes(tools: Iterable[CatalogueTool], cache: CatalogueCache,
                entries: Mapping[str, Mapping[str, Any] | None] | None = None) -> dict[str, str]:
    """canonical id -> changed | new, for the tools whose definition differs from its pin.
    `entries`: servers' cache entries already read (`CachedCatalogue.entries`); the others are read."""
    from mcpctl.catalogue.pins import REMOVED, changes

    def listing(server: str) -> list[Mapping[str, Any]]:
        if entries is not None and server in entries:
            entry = entries[server]
            return [] if entry is None else list(entry["tools"])
        return list(cache.read_server_tools(server) or [])

    servers = dict.fromkeys(t.server for t in tools)
    return {c.id: c.kind for s in servers for c in changes(s, listing(s)) if c.kind != REMOVED}


def curate(store: ResourceStore, cache: CatalogueCache, project: str, ids: list[str], *, enable: bool, force: bool = False,
           warn: Callable[[str], None] = lambda _message: None) -> bool:
    """`tools enable|disable`: whether the project's spec changed. An id or glob that matches no
    tool its server last listed is refused (InvalidResource, nothing stored) unless `force`, and
    `warn` hears it then (and, always first, each id whose server was never listed); an exact
    entry of the opposite list is a removal and always goes through."""
    from mcpctl.catalogue import curation
    from mcpctl.catalogue.idcheck import check_against_cache
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.edit import edit_spec
    from mcpctl.resources.schema import check_tool_id

    for ident in ids:
        problem = check_tool_id(ident)
        if problem:
            raise InvalidResource(f"ID_OR_GLOB: {problem}")
    spec = store.get("Project", project).get("spec") or {}
    opposite = set((spec.get("tools") or {}).get("disabled" if enable else "enabled") or [])
    findings = check_against_cache([i for i in ids if i not in opposite], list(spec.get("servers") or []),
                                   cache, where=f"project {project!r}")
    refused = [f for f in findings if not f.unchecked]
    for f in findings if force else [f for f in findings if f.unchecked]:
        warn(f.message)
    verb = "enable" if enable else "disable"
    if refused and not force:
        raise InvalidResource(refused[0].message + "".join(f"; {f.message}" for f in refused[1:]),
                              hint=f"check the ids (mcpctl tools list --project {project}), or store them "
                              f"anyway with mcpctl tools {verb} --project {project} --force …")
    change = curation.enable if enable else curation.disable
    try:
        edit = edit_spec(store, "Project", project, lambda spec: change(spec, ids), where=f"tools {verb}")
    except InvalidResource as e:
        raise InvalidResource(f"project {project!r}: {e.message}", hint=e.hint) from None
    return edit.changed


def tool_choices(store: ResourceStore, cache: CatalogueCache, servers: list[str], project: str | None,
                 incomplete: str) -> list[tuple[str, str]]:
    """Shell completions for a tool id: each canonical id `server/tool` starting with `incomplete`
    and the first line of its description, from the catalogue cache; of `servers`, else of
    `project`'s, else of every cached server. Nothing (not an error) when the store cannot say."""
    if not servers and project is not None:
        try:
            servers = list((store.get("Project", project).get("spec") or {}).get("servers") or [])
        except Exception:
            servers = []
    if not servers:
        try:
            servers = cache.servers()
        except OSError:
            return []
    out: list[tuple[str, str]] = []
    for server in servers:
        for tool in cache.read_server_tools(server) or []:
            name = tool.get("name") if isinstance(tool, dict) else None
            cid = f"{server}/{name}"
            if isinstance(name, str) and cid.startswith(incomplete):
                out.append((cid, (str(tool.get("description") or "").strip().splitlines() or [""])[0][:80]))
    return out
