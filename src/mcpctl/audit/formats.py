"""The invocation log's rows as people and scripts read them, and the times they are asked by.

`parse_time` reads `--since`/`--until`/`--older-than` (a duration ago or an ISO-8601 time);
`record_json`, `summary_json`, `stats_json` and `breakdown_json` are the stable JSON shapes of
`mcpctl logs` (keys never depend on the values; tests pin them); `breakdown_markdown` is the
`--by` section of `surface -o markdown`; `follow` yields the newest calls and then each new batch,
for `logs -f`. No rich, no typer: `cli/logs.py` and `cli/_breakdown.py` render what these return.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcpctl.audit.records import AuditLog, Breakdown, LogSummary, ToolStats

_RELATIVE_RE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs|d|day|days|w|wk|wks)\s*$",
                                 re.IGNORECASE)
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
NONE_LABEL: Final = "-"            # a call without a value: stdio, or the project's own token


def parse_time(value: str, *, now: float | None = None) -> float:
    """`30m`, `1h`, `2d`, `1w` ago, or an ISO-8601 date/time (naive means local time) → unix seconds.

    Raises:
        ValueError: the value is neither form.
    """
    m = _RELATIVE_RE.match(value)
    if m:
        amount = float(m.group(1))
        unit = m.group(2)[0].lower()
        return (time.time() if now is None else now) - amount * _UNIT_SECONDS[unit]
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"{value!r} is not a duration (30m, 1h, 2d, 1w) or an ISO-8601 time (2026-11-29T14:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()  # naive: the user's local time
    return when.timestamp()


def iso_utc(ts: float) -> str:
    """`ts` as ISO-8601 UTC to the millisecond, with a Z."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_time(ts: float) -> str:
    """`ts` in the user's local time, to the second."""
    return dt.datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def pct(x: float) -> str:
    """A share as a whole percentage ("<1%" for a sliver)."""
    return f"{x:.0%}" if x >= 0.01 or x == 0 else "<1%"


def human_size(n: int) -> str:
    """A byte count in B, KiB, MiB or GiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def record_json(rec: Any) -> dict[str, Any]:
    """The stable JSON shape of one log row (keys never depend on the values)."""
    return {
        "time": iso_utc(rec.ts),
        "ts": rec.ts,
        "durationMs": round(rec.duration_ms, 3),
        "project": rec.project,
        "presentedName": rec.presented_name,
        "canonicalId": rec.canonical_id,
        "outcome": rec.outcome,
        "errorClass": rec.error_class,
        "clientName": rec.client_name,
        "clientVersion": rec.client_version,
        "sessionId": rec.session_id,
        "profile": rec.profile,
        "query": rec.query,
        "resultChars": rec.result_chars,
        "resultSections": rec.result_sections,
        "credential": rec.credential,
        "host": rec.host,
    }


def record_line(rec: Any) -> str:
    """One call as `logs -f` prints it in text: time, project, tool, outcome, duration, client,
    session (its first 12 characters); the caller escapes it for a terminal."""
    outcome = rec.outcome + (f" ({rec.error_class})" if rec.error_class else "")
    client = " ".join(x for x in (rec.client_name, rec.client_version) if x) or "-"
    return (f"{local_time(rec.ts)}  {rec.project}  {rec.canonical_id or rec.presented_name}  {outcome}  "
            f"{rec.duration_ms:.1f}ms  {client}  {(rec.session_id or '-')[:12]}")


def summary_json(s: LogSummary) -> dict[str, Any]:
    """`logs status -o json`."""
    return {
        "path": str(s.path),
        "rows": s.rows,
        "sizeBytes": s.size_bytes,
        "oldest": iso_utc(s.oldest_ts) if s.oldest_ts is not None else None,
        "newest": iso_utc(s.newest_ts) if s.newest_ts is not None else None,
        "migrations": list(s.migrations),
    }


def stats_json(stats: Sequence[ToolStats]) -> list[dict[str, Any]]:
    """`logs stats -o json`: one object per tool."""
    return [{
        "canonicalId": st.canonical_id, "calls": st.calls, "errors": st.errors,
        "errorRate": round(st.error_rate, 4), "p50Ms": round(st.p50_ms, 3), "p95Ms": round(st.p95_ms, 3),
        "firstCall": iso_utc(st.first_ts), "lastCall": iso_utc(st.last_ts),
    } for st in stats]


def share(row: Breakdown, rows: Sequence[Breakdown]) -> float:
    """`row`'s share (0-1) of the calls in `rows`."""
    total = sum(r.calls for r in rows)
    return row.calls / total if total else 0.0


def breakdown_json(rows: Sequence[Breakdown]) -> list[dict[str, Any]]:
    """One object per value: key (null: none), calls, share (0-1, 4 places), errors, lastCall (UTC)."""
    return [{"key": r.key, "calls": r.calls, "share": round(share(r, rows), 4), "errors": r.errors,
             "lastCall": iso_utc(r.last_ts)} for r in rows]


def breakdown_section_json(by: str, rows: Sequence[Breakdown]) -> dict[str, Any]:
    """The `by` object `favourites suggest -o json` and `surface -o json` carry with `--by`."""
    return {"column": by, "calls": sum(r.calls for r in rows), "rows": breakdown_json(rows)}


def breakdown_markdown(by: str, rows: Sequence[Breakdown], period: str) -> list[str]:
    """The `--by` section as markdown lines (`surface -o markdown`)."""
    lines = [f"**Calls by {by}** ({period}): {sum(r.calls for r in rows)} call(s)"]
    if rows:
        lines += ["", f"| {by} | calls | share | errors | last call (UTC) |", "|---|--:|--:|--:|---|"]
        lines += [f"| {(r.key or NONE_LABEL).replace('|', chr(92) + '|')} | {r.calls} | {pct(share(r, rows))} | "
                  f"{r.errors} | {iso_utc(r.last_ts)} |" for r in rows]
    return lines


def follow(log: AuditLog, filters: dict[str, Any], limit: int, interval: float,
           max_polls: int | None = None) -> Iterator[list[Any]]:
    """The newest `limit` calls matching `filters` (0: all), then, every `interval` seconds, the
    calls logged since, in insertion order (`max_polls` polls, or until the caller stops)."""
    cursor = log.cursor()
    yield log.query(**filters, upto_cursor=cursor, limit=limit or None)
    polls = 0
    while max_polls is None or polls < max_polls:
        time.sleep(interval)
        polls += 1
        upto = log.cursor()
        if upto > cursor:
            yield log.query(**filters, after_cursor=cursor, upto_cursor=upto)
            cursor = upto
