"""A project's favourite index as `mcpctl favourites` reads and edits it, without the CLI.

`favourites_report` is what the gateway presents of the favourites (the shape of `list -o json`);
`pin`, `unpin` and `set_favourites_of` edit the project's spec through `resources.edit` (validated
like `apply`), with the messages a person typing ids and flags understands; `suggestions` ranks the
tools by their calls in the invocation log (`catalogue.favourites.suggest`) against the catalogue
as the gateway would present it, and `set_command` is the shell line that applies them, so the
printed line and `suggest --apply` cannot drift apart. `list_cost` and `spec_diff` say what an
applied suggestion changed. Nothing here prints.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.audit.records import AuditLog
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.favourites import Floor, Suggestions
    from mcpctl.presentation.catalogue import CachedCatalogue
    from mcpctl.resources.edit import Edit
    from mcpctl.resources.store import ResourceStore


def favourites_report(cached: CachedCatalogue, project_name: str) -> dict[str, Any]:
    """What the gateway presents of the project's favourites (the JSON/YAML shape of `list`)."""
    from mcpctl.presentation.names import ALL

    project = cached.project
    view = cached.view()
    table = view.table
    pinned = list(project.favourite_index.tools)
    if project.favourite_index.enabled:
        rows = [{"id": f.canonical_id, "pinned": True, "name": f.name,
                 "state": "listed" if f.listed else "pending" if f.pending else "not listed",
                 "reason": f.reason, "description": f.description} for f in view.favourites]
    else:
        rows = [{"id": cid, "pinned": True, "name": None, "state": "not presented",
                 "reason": "the favourite index is off (flat presentation)", "description": ""} for cid in pinned]
    listed = set(view.listed_names)
    under_all = [t for t in view.searchable if table.name(ALL, t.canonical_id) is not None]
    return {
        "project": project_name,
        "presentation": project.presentation,
        "names": project.names.style,
        "maxFavourites": project.favourite_index.max_favourites,
        "gate": project.gate.enabled,
        "favourites": rows,
        "all": {"count": len(under_all), "pattern": table.namer.pattern(ALL) if under_all else None,
                "listed": any(table.name(ALL, t.canonical_id) in listed for t in under_all)},
        "instructions": cached.catalogue.instructions,
    }


# -- edits ---------------------------------------------------------------------------------------------


def check_ids(ids: list[str]) -> None:
    """Raise InvalidResource for the first id that is not a favourite's SERVER/TOOL."""
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.kinds import check_favourite_id

    for ident in ids:
        problem = check_favourite_id(ident)
        if problem:
            raise InvalidResource(f"SERVER/TOOL: {problem}")


def _flagged(message: str) -> str:
    """Validation speaks in manifest paths; here the user typed ids and flags."""
    return (message.split(": ", 1)[1] if message.startswith("favourites ") and ": " in message else message) \
        .replace("spec.favouriteIndex.maxFavourites", "maxFavourites (--max-favourites)") \
        .replace("spec.favouriteIndex.tools", "the favourites")


def _edit(store: ResourceStore, project: str, change: Callable[[dict[str, Any]], Any], verb: str) -> Edit:
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.edit import edit_spec

    try:
        return edit_spec(store, "Project", project, change, where=f"favourites {verb}")
    except InvalidResource as e:
        raise InvalidResource(f"project {project!r}: {_flagged(e.message)}", hint=e.hint) from None


def set_favourites_of(store: ResourceStore, project: str, ids: list[str], max_favourites: int | None = None) -> Edit:
    """`favourites set` and `suggest --apply`: `ids` become the project's favourites (the index
    on); nothing else in the spec changes."""
    from mcpctl.catalogue import favourites as fv

    check_ids(ids)
    return _edit(store, project, lambda spec: fv.set_favourites(spec, ids, max_favourites), "set")


def set_command(project: str, ids: list[str]) -> str:
    """The shell line that runs `set_favourites_of(project, ids)`, each word quoted for a POSIX shell."""
    return shlex.join(["mcpctl", "favourites", "set", "--project", project, *ids])


def pin(store: ResourceStore, project: str, ids: list[str], max_favourites: int | None = None
        ) -> tuple[Edit, list[str]]:
    """`favourites add`: pin `ids` (appended in order), turning the index on when the project left
    it unsaid; with what the user should know (nothing when the spec did not change)."""
    from mcpctl.catalogue import favourites as fv

    check_ids(ids)
    notes: list[str] = []

    def change(spec: dict[str, Any]) -> None:
        fv.pin(spec, ids)
        fav = spec["favouriteIndex"]
        if max_favourites is not None:
            fav["maxFavourites"] = max_favourites
        if spec.get("presentation") is None and fav.get("enabled") is None:
            fav["enabled"] = True
            notes.append("favourite index turned on (favourite-index presentation)")
        elif spec.get("presentation") == "flat" or fav.get("enabled") is False:
            notes.append("the favourite index is off in this project, so favourites are not presented: "
                         "remove spec.presentation: flat / set favouriteIndex.enabled: true "
                         f"(mcpctl edit project {project})")

    result = _edit(store, project, change, "add")
    return result, notes if result.changed else []


def unpin(store: ResourceStore, project: str, ids: list[str]) -> tuple[Edit, list[str]]:
    """`favourites remove`: unpin `ids`; with the ones that were not pinned."""
    from mcpctl.catalogue import favourites as fv

    check_ids(ids)
    removed: list[str] = []
    result = _edit(store, project, lambda spec: removed.extend(fv.unpin(spec, ids)), "remove")
    return result, [ident for ident in ids if ident not in removed]


def unknown_ids(store: ResourceStore, cache: CatalogueCache, project: str, ids: list[str]) -> list[str]:
    """Why each of `ids` that the cached listings of the project's servers do not hold is unknown."""
    from mcpctl.catalogue.idcheck import check_against_cache

    servers = list((store.get("Project", project).get("spec") or {}).get("servers") or [])
    return [f.message for f in check_against_cache(ids, servers, cache, where=f"project {project!r}")]


# -- suggest -------------------------------------------------------------------------------------------


def suggestions(project: str, store: ResourceStore, cache: CatalogueCache, log: AuditLog, top: int, since: float,
                floor: Floor | None = None) -> tuple[Suggestions, CachedCatalogue, int]:
    """Favourites suggested from the calls of `project` since `since` (unix seconds), the cached
    catalogue they were judged against, and (when there were none) how many calls the log holds."""
    from mcpctl.catalogue import favourites as fv
    from mcpctl.presentation.catalogue import cached_catalogue
    from mcpctl.presentation.view import Refusal

    cached = cached_catalogue(project, store, cache)
    rows = log.usage(project, since=since)
    ever = log.count(project) if not rows else -1
    view = cached.view()

    def resolve(name: str) -> str | None:
        hit = view.table.lookup(name)
        return hit[1].canonical_id if hit is not None else None

    def ineligible(cid: str) -> str | None:
        server = cid.split("/", 1)[0]
        if server not in cached.project.servers:
            return f"server {server!r} is no longer in the project"
        hit = view.resolve(cid)
        if hit is None:
            return "not in the catalogue now" if server not in cached.unlisted else "server not listed yet"
        if isinstance(hit, Refusal):
            return "disabled in the project" if hit.error_class == "ToolDisabled" else hit.message
        return None

    pinned = list(cached.project.favourite_index.tools)
    return fv.suggest(rows, pinned=pinned, top=top, resolve=resolve, ineligible=ineligible,
                      floor=floor or fv.DEFAULT_FLOOR), cached, ever


def suggest_json(project: str, s: Suggestions, window: float, since: float, command: str | None) -> dict[str, Any]:
    """`favourites suggest -o json` (its keys never depend on the values)."""
    return {
        "project": project, "windowDays": window, "since": since, "calls": s.calls, "sessions": s.sessions,
        "suggested": s.suggested,
        "tools": [{"id": c.use.canonical_id, "calls": c.use.calls, "sessions": c.use.sessions,
                   "errors": c.use.errors, "errorRate": round(c.use.error_rate, 4), "lastUse": c.use.last_ts,
                   "pinned": c.pinned, "suggested": c.suggested, "flag": c.flag, "belowFloor": c.below,
                   "names": list(c.use.names)}
                  for c in s.candidates],
        "pinnedUnused": s.pinned_unused,
        "command": command,
    }


def list_cost(cached: CachedCatalogue) -> tuple[tuple[int, int], tuple[int, int]]:
    """(listed, ≈tokens) of the project's tools/list as presented, and of the flat list."""
    from mcpctl.catalogue.tokens import definition_text, token_counter
    from mcpctl.presentation.surface import FLAT, mode_catalogues

    count = token_counter().count
    cats = mode_catalogues(cached.catalogue)
    costs = []
    for cat in (cats[cached.project.presentation], cats[FLAT]):
        tools = cat.view().tools
        costs.append((len(tools), sum(count(definition_text(t)) for t in tools)))
    return costs[0], costs[1]


def cost_change(project: str, before: CachedCatalogue, after: CachedCatalogue) -> tuple[str, str | None]:
    """What a change of favourites did to the list's size (a line), and a warning when the favourites
    now cost more than they save (each is listed in full: past a point the list outgrows the flat one)."""
    (n0, t0), _ = list_cost(before)
    (n1, t1), (nf, tf) = list_cost(after)
    mode = after.project.presentation
    said = f"{mode} list: {n0} tools ≈{t0:,} tokens -> {n1} tools ≈{t1:,} tokens (flat: {nf} tools ≈{tf:,} tokens)"
    if mode != "flat" and t1 > tf:
        return said, (f"the favourites now cost more than they save: the {mode} list is {t1 / tf:.0%} of flat; pin "
                      f"fewer (--top, or mcpctl favourites remove --project {project} …) or present deferred")
    return said, None


def spec_diff(before: dict[str, Any], after: dict[str, Any], ref: str) -> str:
    """A unified diff of two objects' specs, as YAML (`live/REF` -> `suggested/REF`)."""
    import difflib

    from mcpctl.resources.yamlio import to_yaml

    return "".join(difflib.unified_diff(to_yaml({"spec": before.get("spec", {})}).splitlines(keepends=True),
                                        to_yaml({"spec": after.get("spec", {})}).splitlines(keepends=True),
                                        fromfile=f"live/{ref}", tofile=f"suggested/{ref}"))
