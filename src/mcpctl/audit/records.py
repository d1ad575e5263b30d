"""The log's rows and aggregates, and `AuditLog`, the Protocol its backends implement (SQLite:
`log.py`, PostgreSQL: `pglog.py`, in memory: `memlog.py`), none inheriting from another."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, Protocol

OUTCOMES: Final = ("ok", "tool_error", "protocol_error", "timeout", "upstream_down", "denied", "limited")
SEARCH_TOOL_ID: Final = "mcpctl/search_tools"
SEARCH_TOOL_NAME: Final = "search_tools"
# Each search with the call its session made next, newest first (`search_evidence`, both backends;
# {p} is the backend's placeholder, {is_search} its search test on c2).
EVIDENCE_SQL: Final = """
    SELECT s.query, s.session_id, s.ts, c.canonical_id, c.outcome
    FROM invocations AS s
    JOIN invocations AS c ON c.id = (
        SELECT c2.id FROM invocations AS c2
        WHERE c2.session_id = s.session_id AND c2.project = s.project
          AND (c2.ts > s.ts OR (c2.ts = s.ts AND c2.id > s.id))
          AND c2.canonical_id IS NOT NULL AND NOT {is_search}
        ORDER BY c2.ts, c2.id LIMIT 1)
    WHERE s.project = {p} AND s.ts >= {p} AND s.query IS NOT NULL AND s.session_id IS NOT NULL
    ORDER BY s.ts DESC, s.id DESC LIMIT {p}
"""
# What `breakdown` can group by: a column of the log each.
BREAKDOWNS: Final = ("credential", "host", "project", "client_name", "profile", "outcome")


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One routed tool call. Field order is the column order of the `invocations` table."""

    ts: float                       # unix seconds, call start
    duration_ms: float
    project: str
    presented_name: str
    canonical_id: str | None
    outcome: str
    error_class: str | None = None
    client_name: str | None = None
    client_version: str | None = None
    session_id: str | None = None   # gateway-assigned id of the client session
    profile: str | None = None
    query: str | None = None        # search_tools query text; only set when the project opts in
    result_chars: int | None = None     # characters of the result's text and binary data (None: no result)
    result_sections: int | None = None  # sections its text was cut into (None: not cut)
    credential: str | None = None   # HTTP: the token's name (None: the project's own token, or stdio)
    host: str | None = None         # the gateway host that answered (MCPCTL_GATEWAY_HOST or the hostname)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r} is not one of: {', '.join(OUTCOMES)}")


# A record's values in column order: `dataclasses.astuple` copies every value deeply (~15 us a
# record, on the log writer's thread, which shares the GIL with the event loop); this reads them.
row: Final[Callable[[CallRecord], tuple[Any, ...]]] = attrgetter(*(f.name for f in fields(CallRecord)))


@dataclass(frozen=True, slots=True)
class SearchEvidence:
    """One recorded `search_tools` query and the call its session made next (`search_evidence`):
    what search learns from (`catalogue.learn`)."""

    query: str
    tool: str                       # canonical id of the next call
    session: str
    ts: float                       # when the search was made
    ok: bool                        # the next call answered without error (outcome ok)


@dataclass(frozen=True, slots=True)
class ToolStats:
    """Aggregates for one canonical tool id over a window of the log."""

    canonical_id: str
    calls: int
    errors: int                     # every outcome other than "ok"
    p50_ms: float
    p95_ms: float
    first_ts: float
    last_ts: float

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class Usage:
    """Calls under one (canonical id, presented name, session) in a window: the rows
    `favourites suggest` collapses onto canonical ids."""

    canonical_id: str | None        # None: the gateway could not name the tool when it was called
    presented_name: str
    session_id: str | None
    calls: int
    errors: int                     # every outcome other than "ok"
    last_ts: float


@dataclass(frozen=True, slots=True)
class Transition:
    """Calls under one (canonical id, presented name, profile) in a window, grouped by the call
    that came next in the same session when it started within `within` seconds of this one's
    end: the rows `mcpctl surface` measures "picked the neighbour" by."""

    canonical_id: str | None        # None: the gateway could not name the tool when it was called
    presented_name: str
    profile: str | None
    next_canonical_id: str | None   # the next call, when there was one soon enough (else both None)
    next_presented_name: str | None
    calls: int
    errors: int                     # every outcome other than "ok"
    last_ts: float


@dataclass(frozen=True, slots=True)
class LogSummary:
    path: Path | str                # the SQLite file, or the database URL (password hidden)
    rows: int
    size_bytes: int                 # the database file plus its WAL
    oldest_ts: float | None
    newest_ts: float | None
    migrations: tuple[str, ...]




@dataclass(frozen=True, slots=True)
class Breakdown:
    """Calls under one value of a column (credential, host, ...) in a window."""

    key: str | None
    calls: int
    errors: int                     # every outcome other than "ok"
    last_ts: float


class AuditLog(Protocol):
    """The invocation log, whatever keeps it: records and the queries over them.

    What only one backend has stays on it (SQLite's WAL checkpoints are its writer's business:
    `audit.writer.BackgroundWriter`). The documentation of each query is on `log.InvocationLog`."""

    def record(self, rec: CallRecord) -> None: ...
    def record_many(self, recs: Sequence[CallRecord]) -> None: ...
    def query(self, *, project: str | None = None, since: float | None = None, until: float | None = None,
              canonical_id: str | None = None, tool_glob: str | None = None, session_id: str | None = None,
              outcome: str | None = None, after_cursor: int | None = None, upto_cursor: int | None = None,
              limit: int | None = None) -> list[CallRecord]: ...
    def search_pairs(self, project: str, *, since: float | None = None) -> list[tuple[str, str]]: ...
    def search_evidence(self, project: str, *, since: float | None = None,
                        limit: int = 50_000) -> list[SearchEvidence]: ...
    def tool_stats(self, project: str | None = None, since: float | None = None) -> list[ToolStats]: ...
    def usage(self, project: str, *, since: float | None = None, until: float | None = None) -> list[Usage]: ...
    def transitions(self, project: str, *, since: float | None = None, until: float | None = None,
                    within: float = 60.0) -> list[Transition]: ...
    def breakdown(self, by: str, *, project: str | None = None, since: float | None = None,
                  until: float | None = None) -> list[Breakdown]: ...
    def cursor(self) -> int: ...
    def count(self, project: str | None = None, *, until: float | None = None) -> int: ...
    def summary(self) -> LogSummary: ...
    def delete_before(self, ts: float, *, project: str | None = None) -> int: ...
    def backup(self, dest: Path) -> int: ...
    def close(self) -> None: ...
