"""The tool surface of a project, priced and judged: what `mcpctl surface` reports.

Every tool in an agent's context costs tokens on every request, is one more distractor, and is a
permission. This module turns a project's catalogue (exactly what the gateway presents, through
the presentation pipeline of `presentation.view`) and the invocation log's call transitions
(`audit.log.InvocationLog.transitions`) into one `SurfaceReport`:

- price: per server, the tokens of its definitions as the client receives them, and its share;
  the project's total in every presentation mode (a `Catalogue` per mode, the real presented
  `tools` arrays; `catalogue.tokens` counts them and labels the count approximate);
- reach: which enabled tools can write, delete or send outward (`reach`), from annotations where
  the upstream gave them, else a labelled name heuristic;
- confusion: tool names on several servers, and cross-server pairs whose descriptions are nearly
  the same (`near_duplicates`);
- suspicion: descriptions carrying what tool poisoning uses (`catalogue.poison`), flagged only;
- use: calls per tool in the window, tools never called, and the calls that failed or were
  followed within a minute by a different tool of the same server (a proxy for "picked the
  neighbour");
- recommendations as runnable `mcpctl` lines (`presentation.advice`).

Profiles (per-credential views) plug in as names: each gets its own view of the catalogue
(`SessionKey(profile=...)`), the log says which profile made each call, and the report holds a
profile x tool matrix. No I/O here but the reading of the log the caller passes (`surface_of`); the
caller passes the catalogue, the log and the clock.
"""


from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Protocol

from mcpctl.catalogue.judge import (
    NEAR_DUPLICATE_THRESHOLD,
    Collision,
    NearDuplicate,
    Reach,
    collisions,
    near_duplicate_pairs,
    reach,
)
from mcpctl.catalogue.poison import scan_definitions
from mcpctl.catalogue.tokens import TokenCounter, definition_text
from mcpctl.presentation.advice import FLAT, MIN_CALLS_TO_JUDGE, notes, recommendations
from mcpctl.presentation.surface_report import (
    ModeCost,
    NeighbourPair,
    OverrideCost,
    ProfileSurface,
    Recommendation,
    ServerSurface,
    SurfaceReport,
    ToolSurface,
    TransitionRow,
)

if TYPE_CHECKING:
    from mcpctl.presentation.catalogue import CachedCatalogue, Catalogue
    from mcpctl.presentation.view import View

MODES: Final = ("flat", "favourite-index", "deferred")
NEIGHBOUR_WINDOW_S: Final = 60.0
# Near-duplicate pairs a report lists (best first) and counts beyond: a catalogue that registers
# one server many times has as many pairs as copies squared.
MAX_LISTED_PAIRS: Final = 1000


# -- pricing -----------------------------------------------------------------------------------------


def mode_catalogues(catalogue: Catalogue) -> dict[str, Catalogue]:
    """The same listings presented in each mode (the project's own catalogue for its own mode):
    favourites, names and built-ins exactly as the gateway would present them."""
    from mcpctl.presentation.catalogue import Catalogue

    project = catalogue.project
    out: dict[str, Catalogue] = {}
    for mode in MODES:
        if mode == project.presentation:
            out[mode] = catalogue
            continue
        spec = replace(project, presentation=mode,
                       favourite_index=replace(project.favourite_index, enabled=mode != FLAT))
        cat = Catalogue(catalogue.project_name, spec)
        cat.set_down(catalogue.down)
        cat.set_listings(catalogue.listings)
        out[mode] = cat
    return out


def _override_cost(catalogue: Catalogue, modes: Sequence[ModeCost], count: _Pricer) -> OverrideCost | None:
    """The project's own presentation priced without its `tools.overrides`, beside its price now."""
    from mcpctl.presentation.catalogue import Catalogue

    overridden = sum(t.override is not None for t in catalogue.tools)
    if not overridden:
        return None
    bare = Catalogue(catalogue.project_name, replace(catalogue.project, overrides=()))
    bare.set_down(catalogue.down)
    bare.set_listings(catalogue.listings)
    before = sum(count(definition_text(entry)) for entry in bare.view().tools)
    return OverrideCost(overridden, before, next(m.tokens for m in modes if m.current))


def _attribute(view: View) -> list[tuple[str | None, dict[str, object]]]:
    """(canonical id, or None for a built-in) of every entry a view lists."""
    out: list[tuple[str | None, dict[str, object]]] = []
    for entry in view.tools:
        hit = view.table.lookup(str(entry.get("name")))
        out.append((hit[1].canonical_id if hit is not None else None, entry))
    return out


# -- use ---------------------------------------------------------------------------------------------


@dataclass
class _Use:
    calls: int = 0
    failed: int = 0
    neighbour: int = 0
    flagged: int = 0
    last: float | None = None
    by_profile: Counter[str] = field(default_factory=Counter)


def _neighbour(first: str, then: str | None) -> bool:
    return then is not None and then != first and then.split("/", 1)[0] == first.split("/", 1)[0]


def _tally(transitions: Iterable[TransitionRow], current: View) -> tuple[dict[str, _Use], Counter[tuple[str, str]]]:
    """Calls per tool (by canonical id, else by the name called), and neighbour pairs (first, then)."""

    def resolve(cid: str | None, presented: str | None) -> str | None:
        if cid:
            return cid
        if presented is None:
            return None
        hit = current.table.lookup(presented)
        return hit[1].canonical_id if hit is not None else None

    uses: dict[str, _Use] = defaultdict(_Use)
    pairs: Counter[tuple[str, str]] = Counter()
    for row in transitions:
        cid = resolve(row.canonical_id, row.presented_name)
        key = cid or row.presented_name
        then = resolve(row.next_canonical_id, row.next_presented_name)
        u = uses[key]
        u.calls += row.calls
        u.failed += row.errors
        u.last = max(u.last or 0.0, row.last_ts)
        u.by_profile[row.profile or ""] += row.calls
        if cid is not None and then is not None and _neighbour(cid, then):
            u.neighbour += row.calls
            u.flagged += row.calls
            pairs[(cid, then)] += row.calls
        else:
            u.flagged += row.errors
    return uses, pairs


# -- the report --------------------------------------------------------------------------------------


class _Pricer:
    """Token counts of definition texts, each text counted once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self.cache.get(text)
        if n is None:
            n = self.cache[text] = self.counter.count(text)
        return n


def _mode_costs(cats: Mapping[str, Catalogue], views: Mapping[str, View], current_mode: str,
                count: _Pricer) -> list[ModeCost]:
    """Every mode's whole tools/list array."""
    modes: list[ModeCost] = []
    for mode in MODES:
        texts = [definition_text(entry) for entry in views[mode].tools]
        # Priced definition by definition (each text is counted once whatever mode lists it): the
        # sum is within 0.2 % of counting the whole array (237 real tools: 48,004 vs 47,929, as
        # `},{` merges across definitions). Bytes are exact: the definitions, commas and brackets.
        modes.append(ModeCost(mode, mode == current_mode, len(texts), sum(map(count, texts)),
                              sum(len(t.encode("utf-8")) for t in texts) + len(texts) + 1,
                              count(cats[mode].instructions)))
    return modes


@dataclass
class _Listed:
    """What the project's own presentation lists, priced: per server, and the built-ins."""

    tokens: Counter[str] = field(default_factory=Counter)
    entries: Counter[str] = field(default_factory=Counter)
    ids: set[str] = field(default_factory=set)
    builtins: int = 0
    builtins_tokens: int = 0


def _listed(current: View, count: _Pricer) -> _Listed:
    listed = _Listed()
    for cid, entry in _attribute(current):
        n = count(definition_text(entry))
        if cid is None:
            listed.builtins += 1
            listed.builtins_tokens += n
        else:
            listed.tokens[cid.split("/", 1)[0]] += n
            listed.entries[cid.split("/", 1)[0]] += 1
            listed.ids.add(cid)
    return listed


def _profile_rows(catalogue: Catalogue, profiles: Sequence[str], tools: list[ToolSurface]) -> list[ProfileSurface]:
    """Each profile's own view (the credential-view stage), in the project's presentation; marks
    each tool visible or not to it."""
    from mcpctl.presentation.view import SessionKey

    by_id = {t.id: t for t in tools}
    rows: list[ProfileSurface] = []
    for p in profiles:
        visible = {t.canonical_id for t in catalogue.view(SessionKey(profile=p)).searchable}
        for ts in tools:
            ts.profiles[p] = ts.id in visible
        rows.append(ProfileSurface(p, len(visible), sum(by_id[i].reach.can_write for i in visible if i in by_id), 0))
    return rows


def _apply_use(uses: Mapping[str, _Use], tools: list[ToolSurface]) -> dict[str, int]:
    """Copy each tool's use onto its row; returns the calls to names not in the catalogue now."""
    by_id = {t.id: t for t in tools}
    unknown: dict[str, int] = {}
    for key, u in uses.items():
        target = by_id.get(key)
        if target is None:
            unknown[key] = u.calls
            continue
        target.calls, target.failed, target.neighbour, target.flagged, target.last_call = \
            u.calls, u.failed, u.neighbour, u.flagged, u.last
        target.profile_calls = dict(u.by_profile)
    return unknown


def _server_rows(catalogue: Catalogue, missing: Mapping[str, str], tools: list[ToolSurface], listed: _Listed,
                 total: int) -> list[ServerSurface]:
    servers: list[ServerSurface] = []
    tools_of: dict[str, list[ToolSurface]] = defaultdict(list)      # once: servers x tools was quadratic
    for ts in tools:
        tools_of[ts.server].append(ts)
    for s in catalogue.project.servers:
        status = f"not registered: {missing[s]}" if s in missing else \
            "listed" if s in catalogue.listings else "never listed"
        mine = tools_of.get(s, [])
        servers.append(ServerSurface(
            s, status, len(mine), sum(t.enabled for t in mine), listed.entries[s], listed.tokens[s],
            sum(t.tokens for t in mine if t.enabled), listed.tokens[s] / total if total else 0.0,
            sum(t.calls for t in mine)))
    return servers


def build_report(catalogue: Catalogue, transitions: Iterable[TransitionRow], *, now: float, window_days: float,
                 counter: TokenCounter, profiles: Sequence[str] = (),
                 missing: Mapping[str, str] | None = None,
                 on_stage: Callable[[str], None] | None = None) -> SurfaceReport:
    """The surface of `catalogue`'s project. `transitions`: the log's calls in the window
    (`InvocationLog.transitions(project, since=now - window_days * 86400)`); `profiles`: the
    profiles to show (none: no profile matrix); `missing`: servers not registered -> why. Servers
    never listed have no tools to count: the report says it is incomplete. `on_stage` hears what
    the report is doing now (a sentence), for a long catalogue's progress."""
    stage = on_stage or (lambda _text: None)
    project = catalogue.project
    cats = mode_catalogues(catalogue)
    views = {mode: cat.view() for mode, cat in cats.items()}
    current = views[project.presentation]
    flat_table = cats[FLAT].table
    all_tools = list(catalogue.tools)
    enabled_ids = {t.canonical_id for t in current.searchable}

    # price: every mode's whole array, and each tool in full (its flat entry)
    count = _Pricer(counter)
    stage(f"pricing {len(all_tools):,} tools in {len(MODES)} presentations")
    modes = _mode_costs(cats, views, project.presentation, count)
    total = next(m.tokens for m in modes if m.current)
    listed = _listed(current, count)
    favourites = {f.canonical_id for f in current.favourites if f.listed}
    tools = [ToolSurface(t.canonical_id, t.server, t.name, t.description, t.canonical_id in enabled_ids,
                         t.canonical_id in listed.ids, t.canonical_id in favourites,
                         count(definition_text({**t.wire, "name": flat_table.name(FLAT, t.canonical_id)
                                                or t.canonical_id})), reach(t))
             for t in all_tools]
    profile_rows = _profile_rows(catalogue, profiles, tools)

    uses, pairs = _tally(transitions, current)
    unknown = _apply_use(uses, tools)
    profile_calls: Counter[str] = Counter()
    for u in uses.values():
        profile_calls.update(u.by_profile)
    profile_rows = [replace(p, calls=profile_calls.get(p.name, 0)) for p in profile_rows]

    servers = _server_rows(catalogue, dict(missing or {}), tools, listed, total)
    enabled_tools = [t for t in all_tools if t.canonical_id in enabled_ids]
    stage(f"comparing {len(enabled_tools):,} descriptions for near-duplicates")
    near, near_total = near_duplicate_pairs(enabled_tools, limit=MAX_LISTED_PAIRS)
    report = SurfaceReport(
        project=catalogue.project_name, presentation=project.presentation, gate=project.gate.enabled,
        tokenizer=counter, window_days=window_days, since=now - window_days * 86400.0, until=now, servers=servers,
        builtins_listed=listed.builtins, builtins_tokens=listed.builtins_tokens, modes=modes, tools=tools,
        collisions=collisions(enabled_tools), near_duplicates=near, near_duplicate_total=near_total,
        calls=sum(u.calls for u in uses.values()), failed=sum(u.failed for u in uses.values()),
        neighbour=sum(u.neighbour for u in uses.values()), flagged=sum(u.flagged for u in uses.values()),
        unknown_calls=unknown,
        neighbour_pairs=[NeighbourPair(a, b, n) for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))],
        profiles=profile_rows, recommendations=[], notes=[],
        suspicious=scan_definitions((t.canonical_id, t.own) for t in all_tools),   # what the servers wrote
        overrides=_override_cost(catalogue, modes, count))
    report.recommendations = recommendations(report, catalogue)
    report.notes = notes(report)
    return report


class TransitionLog(Protocol):
    """What `surface_of` reads of the invocation log (`audit.records.AuditLog`)."""

    def transitions(self, project: str, *, since: float | None = None, until: float | None = None,
                    within: float = 60.0) -> Sequence[TransitionRow]: ...


def surface_of(cached: CachedCatalogue, log: TransitionLog, *, window_days: float, now: float,
               counter: TokenCounter, on_stage: Callable[[str], None] | None = None) -> SurfaceReport:
    """The report of `cached`'s project (as `cached_catalogue` read it) with the calls `log` holds in
    the `window_days` before `now`. Profiles are shown only when the project declares some (then the
    built-in ones too)."""
    project = cached.catalogue.project_name
    rows = log.transitions(project, since=now - window_days * 86400.0, until=now, within=NEIGHBOUR_WINDOW_S)
    spec = cached.project
    profiles = spec.profile_names() if spec.profiles else []
    return build_report(cached.catalogue, rows, now=now, window_days=window_days, counter=counter,
                        profiles=profiles, missing=cached.missing, on_stage=on_stage)


__all__ = [
    "FLAT",
    "MIN_CALLS_TO_JUDGE",
    "MODES",
    "NEAR_DUPLICATE_THRESHOLD",
    "NEIGHBOUR_WINDOW_S",
    "Collision",
    "ModeCost",
    "NearDuplicate",
    "NeighbourPair",
    "ProfileSurface",
    "Reach",
    "Recommendation",
    "ServerSurface",
    "SurfaceReport",
    "ToolSurface",
    "TransitionRow",
    "build_report",
    "collisions",
    "mode_catalogues",
    "near_duplicate_pairs",
    "reach",
    "recommendations",
    "surface_of",
]
