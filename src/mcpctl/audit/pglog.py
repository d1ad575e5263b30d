"""The invocation log in PostgreSQL: the same rows and the same answers as the SQLite log
(`audit/log.py`), for a team whose gateways share one database (`MCPCTL_DATABASE_URL`).

Every query method takes the same arguments and returns what `InvocationLog`'s does on the same
rows (tests/audit run both). Percentiles are `percentile_cont` (the same linear interpolation the
SQLite backend computes); a tool glob is matched as an anchored regular expression (`glob_regex`).
Writes go through `insert` with an id per call (`uid`, unique: a batch written twice stays one row
per call); the gateway writes through `audit.pgwriter.SpoolingWriter`, never on its event loop.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, Final

from mcpctl.audit.records import (
    BREAKDOWNS,
    EVIDENCE_SQL,
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
from mcpctl.db import pool

COLUMNS: Final = tuple(f.name for f in fields(CallRecord))
_SELECT: Final = f"SELECT {', '.join(COLUMNS)} FROM invocations"
INSERT: Final = (f"INSERT INTO invocations (uid, {', '.join(COLUMNS)}) "
                 f"VALUES (%s, {', '.join('%s' for _ in COLUMNS)}) ON CONFLICT (uid) DO NOTHING")
COPY: Final = f"COPY invocations (uid, {', '.join(COLUMNS)}) FROM STDIN"
AGGREGATE_SETTINGS: Final = ("SET LOCAL work_mem = '64MB'; SET LOCAL jit = off; "
                              "SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0")
_IS_SEARCH: Final = "({t}.query IS NOT NULL OR {t}.canonical_id = %s OR {t}.presented_name = %s)"
_NOT_BUILTIN: Final = "(canonical_id IS NULL OR canonical_id NOT LIKE 'mcpctl/%%')"
_ERRORS: Final = "COUNT(*) FILTER (WHERE outcome <> 'ok')"


def glob_regex(pattern: str) -> str:
    """An fnmatch pattern (`*`, `?`, `[seq]`, `[!seq]`) as an anchored PostgreSQL regular expression."""
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append("\\[")
                continue
            body = pattern[i:j].replace("\\", "\\\\")
            i = j + 1
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            out.append(f"[{body}]")
        elif c.isalnum() or c == "_":
            out.append(c)
        else:
            out.append("\\" + c)
    out.append("$")
    return "".join(out)


def _conditions(*filters: tuple[str, object]) -> tuple[list[str], list[object]]:
    where = [clause for clause, value in filters if value is not None]
    params = [value for clause, value in filters if value is not None for _ in range(clause.count("%s"))]
    return where, params


def _where(where: list[str]) -> str:
    return " WHERE " + " AND ".join(where) if where else ""


def _opt(v: object) -> str | None:
    return None if v is None else str(v)


class PgInvocationLog:
    """The invocation log in the database at `url`. Thread-safe (a pooled connection per call)."""

    def __init__(self, url: str, *, check_schema: bool = True) -> None:
        self.url = url
        if check_schema:
            self.require()

    def require(self) -> None:
        """Raise unless the `log` schema is current (`mcpctl db migrate`)."""
        from mcpctl.db import migrations

        migrations.require("log", self.url)

    def _read(self, sql: str, params: Sequence[object] = (), *, aggregate: bool = False) -> list[tuple[Any, ...]]:
        """Rows of one read; tried twice: a pooled connection the server closed since (a restart
        of the database) fails once, and the pool drops it. `aggregate`: a GROUP BY over a window
        of up to millions of rows: memory enough to hash it in one pass, no JIT (its compile time
        is most of what it would save), and parallel workers as soon as the table is big enough
        for them (min_parallel_table_scan_size)."""
        for attempt in (1, 2):
            try:
                with pool.connection(self.url) as conn:
                    if aggregate:
                        conn.execute(AGGREGATE_SETTINGS)
                    return conn.execute(sql, params).fetchall()
            except pool.DatabaseUnavailable:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # -- writing ----------------------------------------------------------------------------

    def record(self, rec: CallRecord) -> None:
        self.record_many((rec,))

    def record_many(self, recs: Sequence[CallRecord]) -> None:
        """Insert all records in one transaction (all or none), each with a new uid."""
        self.insert([(uuid.uuid4(), r) for r in recs])

    def insert(self, rows: Sequence[tuple[uuid.UUID, CallRecord]]) -> None:
        """Insert (uid, record) pairs in one transaction; a uid already there is skipped."""
        if not rows:
            return
        with pool.connection(self.url) as conn, conn.cursor() as cur:
            cur.executemany(INSERT, [(uid, *row(r)) for uid, r in rows])

    # -- reading ----------------------------------------------------------------------------

    def query(self, *, project: str | None = None, since: float | None = None, until: float | None = None,
              canonical_id: str | None = None, tool_glob: str | None = None, session_id: str | None = None,
              outcome: str | None = None, after_cursor: int | None = None, upto_cursor: int | None = None,
              limit: int | None = None) -> list[CallRecord]:
        """As `InvocationLog.query`."""
        where, params = _conditions(
            ("project = %s", project), ("ts >= %s", since), ("ts < %s", until), ("canonical_id = %s", canonical_id),
            ("(canonical_id ~ %s OR presented_name ~ %s)", None if tool_glob is None else glob_regex(tool_glob)),
            ("session_id = %s", session_id), ("outcome = %s", outcome),
            ("id > %s", after_cursor), ("id <= %s", upto_cursor),
        )
        sql = _SELECT + _where(where)
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must be >= 0")
            rows = self._read(sql + " ORDER BY ts DESC, id DESC LIMIT %s", [*params, limit])[::-1]
        else:
            rows = self._read(sql + " ORDER BY ts, id", params)
        return [CallRecord(*row) for row in rows]

    def search_pairs(self, project: str, *, since: float | None = None) -> list[tuple[str, str]]:
        """As `InvocationLog.search_pairs`."""
        sql = f"""
            SELECT s.query, (
                SELECT c.canonical_id FROM invocations AS c
                WHERE c.session_id = s.session_id AND c.project = s.project
                  AND (c.ts > s.ts OR (c.ts = s.ts AND c.id > s.id))
                  AND c.canonical_id IS NOT NULL AND NOT {_IS_SEARCH.format(t="c")}
                ORDER BY c.ts, c.id LIMIT 1
            ) AS next_id
            FROM invocations AS s
            WHERE s.project = %s AND s.ts >= %s AND s.query IS NOT NULL AND s.session_id IS NOT NULL
            ORDER BY s.ts, s.id
        """
        rows = self._read(sql, (SEARCH_TOOL_ID, SEARCH_TOOL_NAME, project,
                                since if since is not None else -math.inf))
        return [(str(q), str(nxt)) for q, nxt in rows if nxt is not None]

    def search_evidence(self, project: str, *, since: float | None = None,
                        limit: int = 50_000) -> list[SearchEvidence]:
        """As `InvocationLog.search_evidence`."""
        rows = self._read(EVIDENCE_SQL.format(is_search=_IS_SEARCH.format(t="c2"), p="%s"),
                          (SEARCH_TOOL_ID, SEARCH_TOOL_NAME, project, since if since is not None else -math.inf, limit))
        return [SearchEvidence(str(q), str(t), str(s), float(ts), o == "ok") for q, s, ts, t, o in rows][::-1]

    def tool_stats(self, project: str | None = None, since: float | None = None) -> list[ToolStats]:
        """As `InvocationLog.tool_stats` (percentiles by `percentile_cont`, in one statement)."""
        where, params = _conditions(("project = %s", project), ("ts >= %s", since))
        rows = self._read(
            f"SELECT canonical_id, COUNT(*), {_ERRORS}, "
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms), "
            "percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms), MIN(ts), MAX(ts) "
            f"FROM invocations{_where(['canonical_id IS NOT NULL', *where])} GROUP BY canonical_id", params,
            aggregate=True)
        stats = [ToolStats(str(cid), int(n), int(errors), float(p50), float(p95), float(first), float(last))
                 for cid, n, errors, p50, p95, first, last in rows]
        stats.sort(key=lambda s: (-s.calls, s.canonical_id))
        return stats

    def usage(self, project: str, *, since: float | None = None, until: float | None = None) -> list[Usage]:
        """As `InvocationLog.usage`."""
        where, params = _conditions(("project = %s", project), ("ts >= %s", since), ("ts < %s", until))
        rows = self._read(
            f"SELECT canonical_id, presented_name, session_id, COUNT(*), {_ERRORS}, MAX(ts) "
            f"FROM invocations{_where([*where, _NOT_BUILTIN])} GROUP BY canonical_id, presented_name, session_id",
            params, aggregate=True)
        return [Usage(_opt(cid), str(name), _opt(sid), int(n), int(errors), float(last))
                for cid, name, sid, n, errors, last in rows]

    def transitions(self, project: str, *, since: float | None = None, until: float | None = None,
                    within: float = 60.0) -> list[Transition]:
        """As `InvocationLog.transitions`."""
        where, params = _conditions(("project = %s", project), ("ts >= %s", since), ("ts < %s", until))
        soon = "session_id IS NOT NULL AND LEAD(ts) OVER w - (ts + duration_ms / 1000.0) <= %s"
        rows = self._read(
            f"""
            SELECT canonical_id, presented_name, profile, next_id, next_name, COUNT(*), {_ERRORS}, MAX(ts)
            FROM (
                SELECT canonical_id, presented_name, profile, outcome, ts,
                       CASE WHEN {soon} THEN LEAD(canonical_id) OVER w END AS next_id,
                       CASE WHEN {soon} THEN LEAD(presented_name) OVER w END AS next_name
                FROM invocations{_where([*where, _NOT_BUILTIN])}
                WINDOW w AS (PARTITION BY session_id ORDER BY ts, id)
            ) AS t
            GROUP BY canonical_id, presented_name, profile, next_id, next_name
            """,
            [within, within, *params], aggregate=True)
        return [Transition(_opt(cid), str(name), _opt(prof), _opt(nid), _opt(nname), int(n), int(errors),
                           float(last))
                for cid, name, prof, nid, nname, n, errors, last in rows]

    def breakdown(self, by: str, *, project: str | None = None, since: float | None = None,
                  until: float | None = None) -> list[Breakdown]:
        """As `InvocationLog.breakdown`."""
        if by not in BREAKDOWNS:
            raise ValueError(f"cannot break down by {by!r}: one of {', '.join(BREAKDOWNS)}")
        where, params = _conditions(("project = %s", project), ("ts >= %s", since), ("ts < %s", until))
        rows = self._read(f"SELECT {by}, COUNT(*), {_ERRORS}, MAX(ts) FROM invocations{_where(where)} "
                          f"GROUP BY {by} ORDER BY COUNT(*) DESC, {by} COLLATE \"C\" NULLS FIRST", params)
        return [Breakdown(_opt(key), int(n), int(errors), float(last)) for key, n, errors, last in rows]

    def cursor(self) -> int:
        """As `InvocationLog.cursor` (ids are taken at insert: a row whose transaction commits
        after a later-numbered one can be passed over by a follower)."""
        return int(self._read("SELECT COALESCE(MAX(id), 0) FROM invocations")[0][0])

    def count(self, project: str | None = None, *, until: float | None = None) -> int:
        where, params = _conditions(("project = %s", project), ("ts < %s", until))
        return int(self._read("SELECT COUNT(*) FROM invocations" + _where(where), params)[0][0])

    def summary(self) -> LogSummary:
        from mcpctl.db.config import redacted

        rows, oldest, newest, size = self._read(
            "SELECT COUNT(*), MIN(ts), MAX(ts), pg_total_relation_size('invocations') FROM invocations")[0]
        applied = self._read("SELECT version, description FROM schema_migrations WHERE component = 'log' "
                             "ORDER BY version")
        return LogSummary(path=redacted(self.url), rows=int(rows), size_bytes=int(size),
                          oldest_ts=None if oldest is None else float(oldest),
                          newest_ts=None if newest is None else float(newest),
                          migrations=tuple(f"log {v}: {d}" for v, d in applied))

    def delete_before(self, ts: float, *, project: str | None = None) -> int:
        where, params = _conditions(("ts < %s", ts), ("project = %s", project))
        with pool.connection(self.url) as conn:
            return conn.execute("DELETE FROM invocations" + _where(where), params).rowcount

    def iter_batches(self, size: int = 5000) -> Any:
        """Every row, oldest first, in lists of at most `size` records (for `mcpctl db copy`)."""
        last = 0
        while True:
            rows = self._read(f"SELECT id, {', '.join(COLUMNS)} FROM invocations WHERE id > %s ORDER BY id LIMIT %s",
                              (last, size))
            if not rows:
                return
            last = int(rows[-1][0])
            yield [CallRecord(*row[1:]) for row in rows]

    def backup(self, dest: Path) -> int:
        """Write every row to `dest`, a new SQLite log file; return how many."""
        from mcpctl.audit.log import InvocationLog

        dest = Path(dest)
        if dest.exists():
            raise FileExistsError(f"{dest} already exists")
        n = 0
        with InvocationLog(dest) as target:
            for batch in self.iter_batches():
                target.record_many(batch)
                n += len(batch)
        return n

    def close(self) -> None:
        """The pool is the process's (`mcpctl.db.pool.close()`); nothing of the log's own to close."""

    def __enter__(self) -> PgInvocationLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
