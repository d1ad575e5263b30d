"""The data of a `mcpctl surface` report (`presentation.surface` builds it, `presentation.advice`
reads it for recommendations and notes)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Protocol

from mcpctl.catalogue.judge import NEAR_DUPLICATE_THRESHOLD, Collision, NearDuplicate, Reach
from mcpctl.catalogue.poison import Flag
from mcpctl.catalogue.tokens import TokenCounter


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
class OverrideCost:
    """What `tools.overrides` change in the project's own presentation: tokens of its tools/list
    array as the servers wrote the tools (`before`) and as the project rewords them (`after`)."""

    tools: int                      # overridden tools
    before: int
    after: int


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
    near_duplicates: list[NearDuplicate]        # the best surface.MAX_LISTED_PAIRS of them
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
    overrides: OverrideCost | None = None                     # None: the project overrides no tool

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
