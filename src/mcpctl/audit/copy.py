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
