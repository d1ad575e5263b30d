"""Favourites: pinning tools in a project's spec, and suggesting favourites from real use.

No I/O and no `mcp`: the CLI hands in a spec dict to edit, or the invocation log's usage rows
(`audit.log.Usage`) together with the presentation pipeline's reverse map (`resolve`, for any
presented name the gateway logged without a canonical id) and a judge of which tools can be
favourites now (`ineligible`). Every presented form of one tool (`favourite__x`, `all__s__x`,
`s__x`, `favourite/x`, the canonical id) collapses onto its canonical id before counting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mcpctl.resources.kinds import DEFAULT_MAX_FAVOURITES

MOSTLY_FAILS: Final = 0.5        # an error rate above this is flagged, not suggested


# -- pinning -------------------------------------------------------------------------------------------


def _index(spec: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    fav = spec.get("favouriteIndex")
    if not isinstance(fav, MutableMapping):
        fav = {}
        spec["favouriteIndex"] = fav
    return fav


def pin(spec: MutableMapping[str, Any], ids: Iterable[str]) -> list[str]:
    """Append `ids` to `favouriteIndex.tools` (in order, skipping those already pinned); return
    the ones added."""
    fav = _index(spec)
    tools = list(fav.get("tools") or [])
    added = [i for i in dict.fromkeys(ids) if i not in tools]
    if added:
        fav["tools"] = tools + added
    return added


def unpin(spec: MutableMapping[str, Any], ids: Iterable[str]) -> list[str]:
    """Remove `ids` from `favouriteIndex.tools`; return the ones that were pinned."""
    fav = _index(spec)
    tools = list(fav.get("tools") or [])
    drop = set(ids)
    removed = [t for t in tools if t in drop]
    if removed:
        fav["tools"] = [t for t in tools if t not in drop]
    if not fav.get("tools"):
        fav.pop("tools", None)
    if not fav:
        spec.pop("favouriteIndex", None)
    return removed


def set_favourites(spec: MutableMapping[str, Any], ids: Sequence[str], max_favourites: int | None = None) -> None:
    """Make `ids` the favourites (in order) and the favourite index on. `maxFavourites` becomes
    `max_favourites` when given, else it is raised only as far as `ids` need. Nothing else in the
    spec changes, apart from an explicit `presentation: flat` (which would hide the favourites)."""
    fav = _index(spec)
    fav["tools"] = list(dict.fromkeys(ids))
    fav["enabled"] = True
    current = fav.get("maxFavourites")
    limit = current if isinstance(current, int) else DEFAULT_MAX_FAVOURITES
    if max_favourites is not None:
        fav["maxFavourites"] = max_favourites
    elif len(fav["tools"]) > limit:
        fav["maxFavourites"] = len(fav["tools"])
    if spec.get("presentation") == "flat":
        del spec["presentation"]          # the favourite index on means favourites are presented


# -- suggesting ----------------------------------------------------------------------------------------


class UsageRow(Protocol):
    @property
    def canonical_id(self) -> str | None: ...

    @property
    def presented_name(self) -> str: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def calls(self) -> int: ...

    @property
    def errors(self) -> int: ...

    @property
    def last_ts(self) -> float: ...


@dataclass(frozen=True)
class ToolUse:
    """One tool's use in the window, every presented form collapsed onto its canonical id."""

    canonical_id: str
    calls: int
    sessions: int
    errors: int
    last_ts: float
    names: tuple[str, ...] = ()          # the presented names it was called by

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


def collapse(rows: Iterable[UsageRow], resolve: Callable[[str], str | None]) -> list[ToolUse]:
    """Group usage rows by canonical id (rows the gateway logged without one are resolved by
    their presented name; those still unknown are dropped)."""
    acc: dict[str, dict[str, Any]] = {}
    for r in rows:
        cid = r.canonical_id or resolve(r.presented_name)
        if cid is None:
            continue
        a = acc.setdefault(cid, {"calls": 0, "errors": 0, "last": 0.0, "sessions": set(), "names": {}})
        a["calls"] += r.calls
        a["errors"] += r.errors
        a["last"] = max(a["last"], r.last_ts)
        a["sessions"].add(r.session_id)
        a["names"][r.presented_name] = None
    return [ToolUse(cid, a["calls"], len(a["sessions"]), a["errors"], a["last"], tuple(a["names"]))
            for cid, a in acc.items()]


@dataclass(frozen=True)
class Floor:
    """The least use that earns a favourite: a tool called once, or in one session only, costs
    its whole definition in every request and has not shown it will be called again."""

    calls: int = 3
    sessions: int = 2

    def below(self, use: ToolUse) -> str | None:
        if use.calls >= self.calls and use.sessions >= self.sessions:
            return None
        return (f"below the floor: {use.calls} call(s) in {use.sessions} session(s) "
                f"(--min-calls {self.calls}, --min-sessions {self.sessions})")


DEFAULT_FLOOR: Final = Floor()


@dataclass(frozen=True)
class Candidate:
    use: ToolUse
    pinned: bool
    suggested: bool
    flag: str | None                     # why a used tool is not suggested (it fails, is disabled, ...)
    below: str | None = None             # why it is not suggested yet: under the floor of use


@dataclass
class Suggestions:
    candidates: list[Candidate]          # every tool used in the window, most used first
    suggested: list[str]                 # canonical ids, best first (at most `top`)
    pinned_unused: list[str]             # pinned, not called in the window
    calls: int
    sessions: int
    flagged: list[Candidate] = field(default_factory=list)


def suggest(rows: Iterable[UsageRow], *, pinned: Sequence[str], top: int,
            resolve: Callable[[str], str | None] = lambda name: None,
            ineligible: Callable[[str], str | None] = lambda cid: None,
            floor: Floor = DEFAULT_FLOOR) -> Suggestions:
    """Rank the tools used in the window: calls, then distinct sessions, then the most recent
    use. The first `top` that are eligible, do not mostly fail and reach the `floor` of use are
    suggested."""
    rows = list(rows)
    uses = sorted(collapse(rows, resolve), key=lambda u: (-u.calls, -u.sessions, -u.last_ts, u.canonical_id))
    pinned_set = set(pinned)
    candidates: list[Candidate] = []
    suggested: list[str] = []
    for use in uses:
        flag = ineligible(use.canonical_id)
        if flag is None and use.error_rate > MOSTLY_FAILS:
            flag = f"mostly fails ({use.errors} of {use.calls} calls failed)"
        below = floor.below(use) if flag is None else None
        ok = flag is None and below is None and len(suggested) < top
        if ok:
            suggested.append(use.canonical_id)
        candidates.append(Candidate(use, use.canonical_id in pinned_set, ok, flag, below))
    used = {u.canonical_id for u in uses}
    sessions = {r.session_id for r in rows if r.canonical_id or resolve(r.presented_name)}
    return Suggestions(candidates, suggested, [p for p in pinned if p not in used],
                       sum(u.calls for u in uses), len(sessions), [c for c in candidates if c.flag])
