"""`mcpctl db copy` for the invocation log: every row from one backend into the other."""

from __future__ import annotations

from typing import Any

BATCH = 5000


def _batches(source: Any) -> Any:
    if hasattr(source, "iter_batches"):
        yield from source.iter_batches(BATCH)
        return
    cursor = 0
    upto = source.cursor()
    while cursor < upto:
        nxt = min(cursor + BATCH, upto)
        batch = source.query(after_cursor=cursor, upto_cursor=nxt)
        cursor = nxt
        if batch:
            yield batch


def copy_log(source: Any, target: Any) -> int:
    """Append every row of `source` (an `InvocationLog` or `PgInvocationLog`) to `target`, oldest
    first, in batches of BATCH rows each committed on its own; return how many rows were copied."""
    n = 0
    for batch in _batches(source):
        target.record_many(batch)
        n += len(batch)
    return n


def open_end(spec: str, flag: str) -> Any:
    """One end of `mcpctl db copy`: `sqlite` (this machine's log file), a path to a SQLite log
    file, or a postgresql:// URL (migrated: `mcpctl db migrate`)."""
    from pathlib import Path

    from mcpctl.errors import MCPCtlError

    if spec.startswith(("postgresql://", "postgres://")):
        from mcpctl.audit.pglog import PgInvocationLog

        return PgInvocationLog(spec)
    from mcpctl.audit.log import InvocationLog

    if spec == "sqlite":
        return InvocationLog()
    if spec in ("files", "postgresql"):
        raise MCPCtlError(f"{flag} {spec}: the invocation log is in sqlite or at a postgresql:// URL",
                          hint="for example: mcpctl db copy --from sqlite --to postgresql://user@host/db")
    path = Path(spec).expanduser()
    if not path.suffix:
        raise MCPCtlError(f"{flag} {spec!r}: expected sqlite, a SQLite file (*.db) or a postgresql:// URL")
    return InvocationLog(path)


def copy_between(source: str, target: str) -> tuple[int, int]:
    """Copy the log from `source` to `target` (see `open_end`); (rows copied, rows the target
    holds now)."""
    from mcpctl.errors import MCPCtlError

    if source == target:
        raise MCPCtlError("db copy: --from and --to name the same log", hint="copy into another place")
    src = open_end(source, "--from")
    dst = open_end(target, "--to")
    try:
        copied = copy_log(src, dst)
        return copied, int(dst.count())
    finally:
        src.close()
        dst.close()
