"""The invocation log: one row per tool call the gateway routes, in SQLite (or, with a database URL
in effect, in PostgreSQL: `mcpctl.audit.pglog`, the same queries; both are an
`mcpctl.audit.records.AuditLog`, and which one a process uses is decided where its
`mcpctl.storage.Storage` is opened).

What is recorded: when, how long, which project, client, session and profile, the presented
name and canonical `server/tool` id, the outcome and an error class, and the size of the result
(characters) and into how many sections it was cut, if it was. Never arguments or results; the text of a `search_tools` query only when the project opts in (`recordQueries`).

Several gateway processes write to one file at once: WAL, a busy timeout, `BEGIN IMMEDIATE`
writes and a bounded retry on SQLITE_BUSY make sure no row is lost. All SQL of the log lives
in this module (and its migrations), the seam through which a PostgreSQL backend will come.

Conventions the gateway follows when it records built-in calls: `search_tools` is logged with
`canonical_id = "mcpctl/search_tools"` (`SEARCH_TOOL_ID`); a call that names no known tool has
`canonical_id = None`.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Final, TypeVar

from mcpctl import paths
from mcpctl.audit import migrations
from mcpctl.audit.records import (
    BREAKDOWNS,
    EVIDENCE_SQL,
    OUTCOMES,
    SEARCH_TOOL_ID,
    SEARCH_TOOL_NAME,
    Breakdown,
    CallRecord,
    LogSummary,
    SearchEvidence,
    ToolStats,
    Transition,
    Usage,
    row,
)

log = logging.getLogger(__name__)


BUSY_TIMEOUT_S: Final = 10.0
MEMORY: Final = ":memory:"      # the path of a log in memory (`audit.memlog`)
RETRY_DEADLINE_S: Final = 30.0

T = TypeVar("T")


_COLUMNS: Final = tuple(f.name for f in fields(CallRecord))
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM invocations"
_INSERT_HEAD: Final = f"INSERT INTO invocations ({', '.join(_COLUMNS)}) VALUES "
_ROW_VALUES: Final = f"({', '.join('?' for _ in _COLUMNS)})"
# The most rows one INSERT statement takes (the BackgroundWriter's batches are at most 512); fewer
# where the SQLite build allows fewer parameters (999 before 3.32).
MAX_ROWS_PER_INSERT: Final = 512
# A row is a search when it carries a query or is the search_tools built-in.
_IS_SEARCH: Final = "({t}.query IS NOT NULL OR {t}.canonical_id = ? OR {t}.presented_name = ?)"


def _is_busy(e: sqlite3.OperationalError) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(e) or "busy" in str(e)


def _int(value: object) -> int:
    """A COUNT/MAX column: sqlite returns an int (the rows are typed `object`)."""
    assert isinstance(value, int), value
    return value


def _conditions(*filters: tuple[str, object]) -> tuple[list[str], list[object]]:
    """WHERE clauses and their parameters for the filters whose value is given (not None).

    A clause takes its value once per `?` it holds.
    """
    where = [clause for clause, value in filters if value is not None]
    params = [value for clause, value in filters if value is not None for _ in range(clause.count("?"))]
    return where, params


class InvocationLog:
    """The SQLite invocation log. Thread-safe; every process opens its own."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else paths.invocation_log_path()
        if str(self.path) != MEMORY:
            paths.private_file(self.path)     # before SQLite: its -wal and -shm take the db's mode
            for companion in ("-wal", "-shm"):
                paths.tighten(f"{self.path}{companion}")
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        variables = self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self.rows_per_insert = max(1, min(MAX_ROWS_PER_INSERT, variables // len(_COLUMNS)))
        try:
            self._db.create_function("mcpctl_glob", 2, _glob, deterministic=True)
            self._retrying(lambda: self._db.execute("PRAGMA journal_mode=WAL").fetchone())
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._retrying(lambda: migrations.migrate(self._db))
        except BaseException:
            self._db.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------

    def _retrying(self, fn: Callable[[], T]) -> T:
        """Run `fn`, retrying with jittered backoff while the database is busy (bounded)."""
        deadline = time.monotonic() + RETRY_DEADLINE_S
        delay = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if not _is_busy(e) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.25)

    def _immediate(self, work: Callable[[], T]) -> T:
        """Run `work` in one `BEGIN IMMEDIATE` transaction, retried as a whole while busy."""

        def tx() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = work()
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            return result

        with self._lock:
            return self._retrying(tx)

    def _fetch(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        return self._db.execute(sql, params).fetchall()

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            return self._retrying(lambda: self._fetch(sql, params))

    def _snapshot(self, work: Callable[[], T]) -> T:
        """Run several reads in one read transaction, so they all see the same committed rows
        (WAL: writers go on meanwhile; the snapshot ignores what they commit after it began)."""

        def tx() -> T:
            self._db.execute("BEGIN")
            try:
                result = work()
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

        with self._lock:
            return self._retrying(tx)

    # -- writing ----------------------------------------------------------------------------

    def record(self, rec: CallRecord) -> None:
        self.record_many((rec,))

    def record_many(self, recs: Sequence[CallRecord]) -> None:
        """Insert all records in one transaction (all or none).

        The rows go in multi-row INSERTs of up to `rows_per_insert`, and a batch that fits one is
        that statement alone (a statement is its own transaction), not BEGIN, a statement a row and
        COMMIT: each statement's step gives up the GIL and has to win it back from a busy event
        loop, which on a loaded machine made a batch of a dozen calls take tens of milliseconds to
        commit (docs/internals.md, "Guarantees: the invocation log and manifests")."""
        statements = []
        for start in range(0, len(recs), self.rows_per_insert):
            chunk = recs[start:start + self.rows_per_insert]
            params = [value for rec in chunk for value in row(rec)]
            statements.append((_INSERT_HEAD + ", ".join([_ROW_VALUES] * len(chunk)), params))
        if len(statements) == 1:
            sql, params = statements[0]
            with self._lock:
                self._retrying(lambda: self._db.execute(sql, params))
            return

        def insert() -> None:
            for sql, params in statements:
                self._db.execute(sql, params)

        if statements:
            self._immediate(insert)

    # -- reading ----------------------------------------------------------------------------

    def query(
        self,
        *,
        project: str | None = None,
        since: float | None = None,
        until: float | None = None,
        canonical_id: str | None = None,
        tool_glob: str | None = None,
        session_id: str | None = None,
        outcome: str | None = None,
        after_cursor: int | None = None,
        upto_cursor: int | None = None,
        limit: int | None = None,
    ) -> list[CallRecord]:
        """Records matching every filter given, oldest first; `limit` keeps the newest N.

        `since` is inclusive and `until` exclusive (unix seconds). `tool_glob` is an fnmatch
        pattern matched against the canonical id or, failing that, the presented name.
        `after_cursor`/`upto_cursor` bound the insertion order (see `cursor()`), which is how
        a follower sees every new row exactly once, whatever its `ts`.
        """
        where, params = _conditions(
            ("project = ?", project), ("ts >= ?", since), ("ts < ?", until), ("canonical_id = ?", canonical_id),
            ("(mcpctl_glob(?, canonical_id) OR mcpctl_glob(?, presented_name))", tool_glob),
            ("session_id = ?", session_id), ("outcome = ?", outcome),
            ("id > ?", after_cursor), ("id <= ?", upto_cursor),
        )
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "")
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must be >= 0")
            sql += " ORDER BY ts DESC, id DESC LIMIT ?"
            params.append(limit)
            rows = self._read(sql, params)[::-1]
        else:
            rows = self._read(sql + " ORDER BY ts, id", params)
        return [CallRecord(*row) for row in rows]  # type: ignore[arg-type]

    def search_pairs(self, project: str, *, since: float | None = None) -> list[tuple[str, str]]:
        """(query, canonical id called next) for each recorded search in `project`.

        "Next" is the first later call in the same session that is not itself a search and
        names a known tool. Searches without a session or without a following call are left
        out. Oldest search first; `since` keeps searches made at or after that time.
        """
        is_search_c = _IS_SEARCH.format(t="c")
        sql = f"""
            SELECT s.query, (
                SELECT c.canonical_id FROM invocations AS c
                WHERE c.session_id = s.session_id AND c.project = s.project
                  AND (c.ts > s.ts OR (c.ts = s.ts AND c.id > s.id))
                  AND c.canonical_id IS NOT NULL AND NOT {is_search_c}
                ORDER BY c.ts, c.id LIMIT 1
            ) AS next_id
            FROM invocations AS s
            WHERE s.project = ? AND s.ts >= ? AND s.query IS NOT NULL AND s.session_id IS NOT NULL
            ORDER BY s.ts, s.id
        """
        rows = self._read(sql, (SEARCH_TOOL_ID, SEARCH_TOOL_NAME, project, since if since is not None else -math.inf))
        return [(str(q), str(nxt)) for q, nxt in rows if nxt is not None]

    def search_evidence(self, project: str, *, since: float | None = None,
                        limit: int = 50_000) -> list[SearchEvidence]:
        """Each recorded search in `project` with the call its session made next (the first later
        call in the same session that is not itself a search and names a known tool), whether that
        call answered without error, and when the search was made: what search learns from. Oldest
        first; `since` keeps searches made at or after that time; at most `limit`, the newest."""
        rows = self._read(EVIDENCE_SQL.format(is_search=_IS_SEARCH.format(t="c2"), p="?"),
                          (SEARCH_TOOL_ID, SEARCH_TOOL_NAME, project, since if since is not None else -math.inf, limit))
        return [SearchEvidence(str(q), str(t), str(s), float(ts), o == "ok")  # type: ignore[arg-type]
                for q, s, ts, t, o in rows][::-1]

    def tool_stats(self, project: str | None = None, since: float | None = None) -> list[ToolStats]:
        """Per canonical id: calls, errors, p50/p95 duration, first/last call. Most called first.

        Aggregates and percentile ranks are computed in SQL, so only a handful of rows per
        tool reach Python however long the log is.
        """
        where, params = _conditions(("project = ?", project), ("ts >= ?", since))
        cond = " AND ".join(["canonical_id IS NOT NULL", *where])
        quantiles = (0.50, 0.95)
        rank_terms = ", ".join(f"CAST((n - 1) * {q} AS INTEGER), CAST((n - 1) * {q} AS INTEGER) + 1"
                               for q in quantiles)
        agg_sql = ("SELECT canonical_id, COUNT(*), SUM(outcome != 'ok'), MIN(ts), MAX(ts) FROM invocations "
                   f"WHERE {cond} GROUP BY canonical_id")
        ranked_sql = f"""
            SELECT canonical_id, rn, duration_ms FROM (
                SELECT canonical_id, duration_ms,
                       ROW_NUMBER() OVER (PARTITION BY canonical_id ORDER BY duration_ms) - 1 AS rn,
                       COUNT(*) OVER (PARTITION BY canonical_id) AS n
                FROM invocations WHERE {cond}
            ) WHERE rn IN ({rank_terms})
            """
        # Both queries must see the same rows: a call committed between them would change a
        # tool's count, and with it the ranks the percentiles need (the KeyError of defect 6).
        agg, ranked = self._snapshot(lambda: (self._fetch(agg_sql, params), self._fetch(ranked_sql, params)))
        at: dict[str, dict[int, float]] = {}
        for cid, rn, dur in ranked:
            at.setdefault(str(cid), {})[int(rn)] = float(dur)  # type: ignore[call-overload, arg-type]

        def pct(cid: str, n: int, q: float) -> float:
            k = (n - 1) * q
            lo = math.floor(k)
            hi = min(lo + 1, n - 1)
            values = at[cid]
            return values[lo] + (values[hi] - values[lo]) * (k - lo)

        stats = [
            ToolStats(
                canonical_id=str(cid),
                calls=int(n),  # type: ignore[call-overload]
                errors=int(errors or 0),  # type: ignore[call-overload]
                p50_ms=pct(str(cid), int(n), 0.50),  # type: ignore[call-overload]
                p95_ms=pct(str(cid), int(n), 0.95),  # type: ignore[call-overload]
                first_ts=float(first),  # type: ignore[arg-type]
                last_ts=float(last),  # type: ignore[arg-type]
            )
            for cid, n, errors, first, last in agg
        ]
        stats.sort(key=lambda s: (-s.calls, s.canonical_id))
        return stats

    def usage(self, project: str, *, since: float | None = None, until: float | None = None) -> list[Usage]:
        """Calls per (canonical id, presented name, session) in `project` in [since, until),
        built-ins (`mcpctl/...`) left out. One aggregate row per group reaches Python, however
        long the log is."""
        where, params = _conditions(("project = ?", project), ("ts >= ?", since), ("ts < ?", until))
        rows = self._read(
            "SELECT canonical_id, presented_name, session_id, COUNT(*), SUM(outcome != 'ok'), MAX(ts) "
            f"FROM invocations WHERE {' AND '.join(where)} "
            "AND (canonical_id IS NULL OR canonical_id NOT LIKE 'mcpctl/%') "
            "GROUP BY canonical_id, presented_name, session_id",
            params,
        )
        return [Usage(None if cid is None else str(cid), str(name), None if sid is None else str(sid),
                      int(n), int(errors or 0), float(last))  # type: ignore[call-overload, arg-type]
                for cid, name, sid, n, errors, last in rows]

    def transitions(self, project: str, *, since: float | None = None, until: float | None = None,
                    within: float = 60.0) -> list[Transition]:
        """Calls in `project` in [since, until) grouped by (canonical id, presented name, profile)
        and by the next call of the same session, kept when it started at most `within` seconds
        after this call ended. Built-ins (`mcpctl/...`) are left out on both sides, so a
        `search_tools` between two calls does not hide the second. Calls without a session have
        no next call. One aggregate row per group reaches Python, however long the log is."""
        where, params = _conditions(("project = ?", project), ("ts >= ?", since), ("ts < ?", until))
        soon = "session_id IS NOT NULL AND LEAD(ts) OVER w - (ts + duration_ms / 1000.0) <= ?"
        rows = self._read(
            f"""
            SELECT canonical_id, presented_name, profile, next_id, next_name, COUNT(*), SUM(outcome != 'ok'),
                   MAX(ts)
            FROM (
                SELECT canonical_id, presented_name, profile, outcome, ts,
                       CASE WHEN {soon} THEN LEAD(canonical_id) OVER w END AS next_id,
                       CASE WHEN {soon} THEN LEAD(presented_name) OVER w END AS next_name
                FROM invocations
                WHERE {' AND '.join(where)} AND (canonical_id IS NULL OR canonical_id NOT LIKE 'mcpctl/%')
                WINDOW w AS (PARTITION BY session_id ORDER BY ts, id)
            )
            GROUP BY canonical_id, presented_name, profile, next_id, next_name
            """,
            [within, within, *params],
        )
        return [Transition(None if cid is None else str(cid), str(name), None if prof is None else str(prof),
                           None if nid is None else str(nid), None if nname is None else str(nname),
                           int(n), int(errors or 0), float(last))  # type: ignore[call-overload, arg-type]
                for cid, name, prof, nid, nname, n, errors, last in rows]

    def breakdown(self, by: str, *, project: str | None = None, since: float | None = None,
                  until: float | None = None) -> list[Breakdown]:
        """Calls per value of column `by` (one of BREAKDOWNS: credential, host, ...) in [since, until),
        most calls first."""
        if by not in BREAKDOWNS:
            raise ValueError(f"cannot break down by {by!r}: one of {', '.join(BREAKDOWNS)}")
        where, params = _conditions(("project = ?", project), ("ts >= ?", since), ("ts < ?", until))
        rows = self._read(f"SELECT {by}, COUNT(*), SUM(outcome != 'ok'), MAX(ts) FROM invocations"
                          + (" WHERE " + " AND ".join(where) if where else "")
                          + f" GROUP BY {by} ORDER BY COUNT(*) DESC, {by}", params)
        return [Breakdown(None if key is None else str(key), int(n), int(errors or 0), float(last))  # type: ignore[call-overload, arg-type]
                for key, n, errors, last in rows]

    def cursor(self) -> int:
        """An opaque position in insertion order: rows recorded later have a larger cursor."""
        return _int(self._read("SELECT COALESCE(MAX(id), 0) FROM invocations")[0][0])

    def count(self, project: str | None = None, *, until: float | None = None) -> int:
        """How many calls (in one project; started before `until`)."""
        where, params = _conditions(("project = ?", project), ("ts < ?", until))
        sql = "SELECT COUNT(*) FROM invocations" + (" WHERE " + " AND ".join(where) if where else "")
        return _int(self._read(sql, params)[0][0])

    def summary(self) -> LogSummary:
        rows, oldest, newest = self._read("SELECT COUNT(*), MIN(ts), MAX(ts) FROM invocations")[0]
        size = 0
        for suffix in ("", "-wal"):
            p = self.path.with_name(self.path.name + suffix)
            if p.exists():
                size += p.stat().st_size
        if str(self.path) == MEMORY:           # no file: the pages it holds
            (pages, page_size), = self._read("SELECT * FROM pragma_page_count(), pragma_page_size()")
            size = _int(pages) * _int(page_size)
        with self._lock:
            applied = tuple(migrations.applied(self._db))
        return LogSummary(
            path=self.path,
            rows=int(rows),  # type: ignore[call-overload]
            size_bytes=size,
            oldest_ts=float(oldest) if oldest is not None else None,  # type: ignore[arg-type]
            newest_ts=float(newest) if newest is not None else None,  # type: ignore[arg-type]
            migrations=applied,
        )

    def delete_before(self, ts: float, *, project: str | None = None) -> int:
        """Delete calls that started before `ts` (in one project, or all); return how many."""
        sql = "DELETE FROM invocations WHERE ts < ?" + (" AND project = ?" if project is not None else "")
        params: tuple[object, ...] = (ts, project) if project is not None else (ts,)
        return self._immediate(lambda: self._db.execute(sql, params).rowcount)

    def backup(self, dest: Path) -> int:
        """Write a consistent copy of the whole log to `dest` (a new SQLite file), while gateways
        write; return how many calls the copy holds."""
        dest = Path(dest)
        if dest.exists():
            raise FileExistsError(f"{dest} already exists")
        tmp = paths.private_file(dest.with_name(f".{dest.name}.tmp"))
        target = sqlite3.connect(tmp)
        try:
            with self._lock:
                self._retrying(lambda: self._db.backup(target))
            target.execute("PRAGMA journal_mode=DELETE")
            rows = int(target.execute("SELECT COUNT(*) FROM invocations").fetchone()[0])
        finally:
            target.close()
        tmp.replace(dest)
        return rows

    def set_autocheckpoint(self, pages: int, *, wal_size_limit: int = -1) -> None:
        """SQLite's `wal_autocheckpoint` for this connection's commits (0: never checkpoint in a
        commit) and `journal_size_limit` (the WAL file is cut back to it when it starts over)."""
        with self._lock:
            self._db.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
            self._db.execute(f"PRAGMA journal_size_limit={int(wal_size_limit)}").fetchall()

    def checkpoint(self) -> tuple[int, int]:
        """A PASSIVE WAL checkpoint on this connection: (frames in the WAL, frames checkpointed)."""
        with self._lock:
            _busy, frames, done = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(frames), int(done)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> InvocationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _glob(pattern: str | None, value: str | None) -> bool:
    return pattern is not None and value is not None and fnmatch.fnmatchcase(value, pattern)

__all__ = ["BREAKDOWNS", "OUTCOMES", "SEARCH_TOOL_ID", "SEARCH_TOOL_NAME", "Breakdown", "CallRecord", "InvocationLog",
           "LogSummary", "ToolStats", "Transition", "Usage"]
