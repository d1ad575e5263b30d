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
- recommendations as runnable `mcpctl` lines.

Profiles (per-credential views) plug in as names: each gets its own view of the catalogue
(`SessionKey(profile=...)`), the log says which profile made each call, and the report holds a
profile x tool matrix. No I/O here: the caller passes the catalogue, the log rows and the clock.
"""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Protocol

from mcpctl.catalogue.judge import (
    ANNOTATION_NOTE,
    DELETE,
    NEAR_DUPLICATE_THRESHOLD,
    SEND,
    WRITE,
    Collision,
    NearDuplicate,
    Reach,
    collisions,
    near_duplicate_pairs,
    reach,
)
from mcpctl.catalogue.poison import Flag, scan_definitions
from mcpctl.catalogue.tokens import TokenCounter, definition_text

if TYPE_CHECKING:
    from mcpctl.presentation.catalogue import Catalogue
    from mcpctl.presentation.view import View

FLAT: Final = "flat"
MODES: Final = ("flat", "favourite-index", "deferred")
NEIGHBOUR_WINDOW_S: Final = 60.0
# Near-duplicate pairs a report lists (best first) and counts beyond: a catalogue that registers
# one server many times has as many pairs as copies squared.
MAX_LISTED_PAIRS: Final = 1000
# Disabling tools because they were never called needs some use to judge by: below this many calls
# in the window the report lists the never-called tools but recommends no `tools disable` line.
MIN_CALLS_TO_JUDGE: Final = 20
MAX_FAVOURITE_SUGGESTIONS: Final = 5
MOSTLY_FAILS: Final = 0.5


class TransitionRow(Protocol):
    """`audit.log.Transition`: calls of one tool grouped by the call that came next soon enough."""

    @property
    def canonical_id(self) -> str | None: ...
    @property
    def presented_name(self) -> str: ...
    @property
    def profile(self) -> str | None: ...
    @property
    def next_canonical_id(self) -> str | None: ...
    @property
    def next_presented_name(self) -> str | None: ...
    @property
    def calls(self) -> int: ...
    @property
    def errors(self) -> int: ...
    @property
    def last_ts(self) -> float: ...


# -- the report ----------------------------------------------------------------------------------------


@dataclass
class ToolSurface:
    id: str
    server: str
    name: str
    description: str
    enabled: bool                   # passes curation (tools.enabled / tools.disabled)
    listed: bool                    # in the project's own presentation's tools/list
    favourite: bool                 # a listed favourite
    tokens: int                     # its definition in full (as the flat presentation lists it)
    reach: Reach
    calls: int = 0
    failed: int = 0                 # any outcome but ok (denials included)
    neighbour: int = 0              # followed within a minute by a different tool of the same server
    flagged: int = 0                # failed or followed by a neighbour (each call once)
    last_call: float | None = None
    profiles: dict[str, bool] = field(default_factory=dict)          # profile -> visible to it
    profile_calls: dict[str, int] = field(default_factory=dict)      # profile ("" = none) -> calls


@dataclass
class ServerSurface:
    name: str
    status: str                     # listed | never listed | not registered: ...
    tools: int = 0
    enabled: int = 0
    listed: int = 0                 # its entries in the presentation's tools/list (a listed favourite
                                    # has two: in full under favourite, and its pointer under all)
    tokens: int = 0                 # its entries in the project's presentation, as presented
    full_tokens: int = 0            # its enabled tools in full (what it costs listed flat)
    share: float = 0.0              # of the project's total in its presentation
    calls: int = 0


@dataclass(frozen=True)
class ModeCost:
    mode: str
    current: bool
    listed: int                     # entries in tools/list (built-ins included)
    tokens: int
    bytes: int
    instructions_tokens: int


@dataclass(frozen=True)
class NeighbourPair:
    first: str
    then: str
    calls: int


@dataclass(frozen=True)
class Recommendation:
    kind: str
    reason: str
    argv: tuple[str, ...]
    saves_tokens: int | None = None

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class ProfileSurface:
    name: str
    tools: int                      # enabled tools it sees
    write_reach: int
    calls: int


@dataclass
class SurfaceReport:
    project: str
    presentation: str
    gate: bool
    tokenizer: TokenCounter
    window_days: float
    since: float
    until: float
    servers: list[ServerSurface]
    builtins_listed: int
    builtins_tokens: int
    modes: list[ModeCost]
    tools: list[ToolSurface]
    collisions: list[Collision]
    near_duplicates: list[NearDuplicate]        # the best MAX_LISTED_PAIRS of them
    near_duplicate_total: int                   # how many pairs there are in all
    calls: int
    failed: int
    neighbour: int
    flagged: int                    # failed or followed by a neighbour
    unknown_calls: dict[str, int]   # calls to names/ids not in the catalogue now -> count
    neighbour_pairs: list[NeighbourPair]
    profiles: list[ProfileSurface]
    recommendations: list[Recommendation]
    notes: list[str]
    threshold: float = NEAR_DUPLICATE_THRESHOLD
    suspicious: list[Flag] = field(default_factory=list)      # descriptions carrying tool-poisoning marks

    @property
    def current(self) -> ModeCost:
        return next(m for m in self.modes if m.current)

    @property
    def enabled(self) -> list[ToolSurface]:
        return [t for t in self.tools if t.enabled]

    @property
    def write_reach(self) -> list[ToolSurface]:
        return [t for t in self.tools if t.enabled and t.reach.can_write]

    @property
    def never_called(self) -> list[ToolSurface]:
        return [t for t in self.tools if t.enabled and t.calls == 0]

    @property
    def flagged_share(self) -> float | None:
        return self.flagged / self.calls if self.calls else None


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


# -- the report --------------------------------------------------------------------------------------


def build_report(catalogue: Catalogue, transitions: Iterable[TransitionRow], *, now: float, window_days: float,
                 counter: TokenCounter, profiles: Sequence[str] = (),
                 missing: Mapping[str, str] | None = None,
                 on_stage: Callable[[str], None] | None = None) -> SurfaceReport:
    """The surface of `catalogue`'s project. `transitions`: the log's calls in the window
    (`InvocationLog.transitions(project, since=now - window_days * 86400)`); `profiles`: the
    profiles to show (none: no profile matrix); `missing`: servers not registered -> why. Servers
    never listed have no tools to count: the report says it is incomplete. `on_stage` hears what
    the report is doing now (a sentence), for a long catalogue's progress."""
    from mcpctl.presentation.view import SessionKey

    stage = on_stage or (lambda _text: None)
    missing = dict(missing or {})
    project = catalogue.project
    name = catalogue.project_name
    cats = mode_catalogues(catalogue)
    views = {mode: cat.view() for mode, cat in cats.items()}
    current = views[project.presentation]
    flat_table = cats[FLAT].table
    all_tools = list(catalogue.tools)
    enabled_ids = {t.canonical_id for t in current.searchable}

    # price: every mode's whole array, and each tool in full (its flat entry)
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        n = cache.get(text)
        if n is None:
            n = cache[text] = counter.count(text)
        return n

    stage(f"pricing {len(all_tools):,} tools in {len(MODES)} presentations")
    modes: list[ModeCost] = []
    for mode in MODES:
        texts = [definition_text(entry) for entry in views[mode].tools]
        # Priced definition by definition (each text is counted once whatever mode lists it): the
        # sum is within 0.2 % of counting the whole array (237 real tools: 48,004 vs 47,929, as
        # `},{` merges across definitions). Bytes are exact: the definitions, commas and brackets.
        modes.append(ModeCost(mode, mode == project.presentation, len(texts), sum(map(count, texts)),
                              sum(len(t.encode("utf-8")) for t in texts) + len(texts) + 1,
                              count(cats[mode].instructions)))
    total = next(m.tokens for m in modes if m.current)
    per_server_tokens: Counter[str] = Counter()
    per_server_entries: Counter[str] = Counter()
    listed_ids: set[str] = set()
    builtins_listed = builtins_tokens = 0
    for cid, entry in _attribute(current):
        n = count(definition_text(entry))
        if cid is None:
            builtins_listed += 1
            builtins_tokens += n
        else:
            per_server_tokens[cid.split("/", 1)[0]] += n
            per_server_entries[cid.split("/", 1)[0]] += 1
            listed_ids.add(cid)
    favourites = {f.canonical_id for f in current.favourites if f.listed}

    tools: list[ToolSurface] = []
    by_id: dict[str, ToolSurface] = {}
    for t in all_tools:
        flat_name = flat_table.name(FLAT, t.canonical_id) or t.canonical_id
        ts = ToolSurface(t.canonical_id, t.server, t.name, t.description, t.canonical_id in enabled_ids,
                         t.canonical_id in listed_ids, t.canonical_id in favourites,
                         count(definition_text({**t.wire, "name": flat_name})), reach(t))
        tools.append(ts)
        by_id[ts.id] = ts

    # profiles: each one's own view (the credential-view stage), in the project's presentation
    profile_rows: list[ProfileSurface] = []
    for p in profiles:
        visible = {t.canonical_id for t in catalogue.view(SessionKey(profile=p)).searchable}
        for ts in tools:
            ts.profiles[p] = ts.id in visible
        profile_rows.append(ProfileSurface(p, len(visible), sum(by_id[i].reach.can_write for i in visible
                                                                 if i in by_id), 0))

    # use
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
    unknown: dict[str, int] = {}
    for key, u in uses.items():
        target = by_id.get(key)
        if target is None:
            unknown[key] = u.calls
            continue
        target.calls, target.failed, target.neighbour, target.flagged, target.last_call = \
            u.calls, u.failed, u.neighbour, u.flagged, u.last
        target.profile_calls = dict(u.by_profile)
    profile_calls: Counter[str] = Counter()
    for u in uses.values():
        profile_calls.update(u.by_profile)
    profile_rows = [replace(p, calls=profile_calls.get(p.name, 0)) for p in profile_rows]

    # servers
    servers: list[ServerSurface] = []
    tools_of: dict[str, list[ToolSurface]] = defaultdict(list)      # once: servers x tools was quadratic
    for ts in tools:
        tools_of[ts.server].append(ts)
    for s in project.servers:
        status = f"not registered: {missing[s]}" if s in missing else \
            "listed" if s in catalogue.listings else "never listed"
        mine = tools_of.get(s, [])
        servers.append(ServerSurface(
            s, status, len(mine), sum(t.enabled for t in mine), per_server_entries[s], per_server_tokens[s],
            sum(t.tokens for t in mine if t.enabled), per_server_tokens[s] / total if total else 0.0,
            sum(t.calls for t in mine)))

    enabled_tools = [t for t in all_tools if t.canonical_id in enabled_ids]
    calls = sum(u.calls for u in uses.values())
    stage(f"comparing {len(enabled_tools):,} descriptions for near-duplicates")
    near, near_total = near_duplicate_pairs(enabled_tools, limit=MAX_LISTED_PAIRS)
    report = SurfaceReport(
        project=name, presentation=project.presentation, gate=project.gate.enabled, tokenizer=counter,
        window_days=window_days, since=now - window_days * 86400.0, until=now, servers=servers,
        builtins_listed=builtins_listed, builtins_tokens=builtins_tokens, modes=modes, tools=tools,
        collisions=collisions(enabled_tools), near_duplicates=near, near_duplicate_total=near_total,
        calls=calls, failed=sum(u.failed for u in uses.values()), neighbour=sum(u.neighbour for u in uses.values()),
        flagged=sum(u.flagged for u in uses.values()), unknown_calls=unknown,
        neighbour_pairs=[NeighbourPair(a, b, n) for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))],
        profiles=profile_rows, recommendations=[], notes=[],
        suspicious=scan_definitions((t.canonical_id, t.wire) for t in all_tools))
    report.recommendations = recommendations(report, catalogue)
    report.notes = _notes(report)
    return report


# -- recommendations ---------------------------------------------------------------------------------


def recommendations(report: SurfaceReport, catalogue: Catalogue) -> list[Recommendation]:
    """Runnable lines, from use in the window: disable what was never called (given at least
    MIN_CALLS_TO_JUDGE calls; whole servers as `server/*`, tools that can write apart), unpin
    favourites never called, pin the most called tools. Profile lines are not made yet."""
    p = report.project
    out: list[Recommendation] = []
    if report.calls == 0:
        return out
    evidence = f"{report.calls} call(s) in the last {report.window_days:g} days"
    pinned = set(catalogue.project.favourite_index.tools)
    by_server: dict[str, list[ToolSurface]] = defaultdict(list)
    for t in report.enabled:
        by_server[t.server].append(t)
    judge = report.calls >= MIN_CALLS_TO_JUDGE
    idle_servers = [s for s, ts in by_server.items() if judge and ts and all(t.calls == 0 for t in ts)
                    and not any(t.id in pinned for t in ts)]
    if idle_servers:
        saved = sum(t.tokens for s in idle_servers for t in by_server[s])
        out.append(Recommendation(
            "disable-idle-servers", f"no tool of {', '.join(idle_servers)} was called ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(f"{s}/*" for s in idle_servers)), saved))
    idle = set(idle_servers)
    unused = [t for t in report.never_called if judge and t.server not in idle and t.id not in pinned]
    writers = [t for t in unused if t.reach.can_write]
    if writers:
        out.append(Recommendation(
            "disable-unused-writers", f"never called and can {'/'.join(_kinds(writers))} ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(t.id for t in writers)), sum(t.tokens for t in writers)))
    readers = [t for t in unused if not t.reach.can_write]
    if readers:
        out.append(Recommendation(
            "disable-unused", f"never called ({evidence})",
            ("mcpctl", "tools", "disable", "--project", p, *(t.id for t in readers)), sum(t.tokens for t in readers)))
    fav = catalogue.project.favourite_index
    pinned_idle = [cid for cid in fav.tools if judge and cid in {t.id for t in report.never_called}]
    if pinned_idle:
        out.append(Recommendation("unpin-unused", f"pinned as favourites but never called ({evidence})",
                                  ("mcpctl", "favourites", "remove", "--project", p, *pinned_idle)))
    room = max(0, fav.max_favourites - (len(fav.tools) - len(pinned_idle)))
    used = sorted((t for t in report.enabled if t.calls >= 2 and t.id not in pinned
                   and t.failed / t.calls <= MOSTLY_FAILS), key=lambda t: (-t.calls, t.id))
    picks = used[:min(room, MAX_FAVOURITE_SUGGESTIONS)]
    if picks:
        why = "most called, not pinned"
        if report.presentation == FLAT:
            why += ("; favourites are presented by the favourite index, which this turns on unless the project "
                    "sets presentation: flat")
        out.append(Recommendation("favourites", f"{why} ({evidence})",
                                  ("mcpctl", "favourites", "add", "--project", p, *(t.id for t in picks))))
    return out


def _kinds(tools: Iterable[ToolSurface]) -> list[str]:
    seen = {k for t in tools for k in t.reach.kinds}
    return [k for k in (WRITE, DELETE, SEND) if k in seen]


def _notes(report: SurfaceReport) -> list[str]:
    notes = [f"Token counts are approximate: {report.tokenizer.label}, of the compact JSON of each definition's "
             "name, description, inputSchema and annotations as presented.", ANNOTATION_NOTE]
    if report.gate:
        notes.append("The session gate is on: until begin_session a session lists only begin_session; the "
                     "prices are of the list it gets after that.")
    gone = [s.name for s in report.servers if s.status != "listed"]
    if gone:
        notes.append(f"Incomplete: {', '.join(gone)} not listed, so their tools are not counted.")
    if report.calls == 0:
        notes.append(f"No calls in the last {report.window_days:g} days: use-based recommendations need the "
                     "invocation log (serve the project to an agent and let it work).")
    elif report.calls < MIN_CALLS_TO_JUDGE and report.never_called:
        notes.append(f"Only {report.calls} call(s) in the last {report.window_days:g} days: too few to recommend "
                     f"disabling the tools never called (at least {MIN_CALLS_TO_JUDGE}); widen --window or let "
                     "agents work first.")
    return notes


__all__ = [
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
    "build_report",
    "collisions",
    "mode_catalogues",
    "near_duplicate_pairs",
    "reach",
    "recommendations",
]
