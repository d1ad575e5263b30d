"""Per-person call limits across the replicas of one database, without a round trip per call.

Each replica keeps its own token buckets (`presentation.budgets.Limits`: a call takes from one
without awaiting or asking the database, and its bucket counts it). `SharedLimits.run` syncs every
`SYNC_S`, in three parts: in the event loop it takes the counts since the last sync
(`Limits.drain`) into this replica's cumulative count per (profile, identity); in a worker thread
it publishes the keys that changed (one UPSERT into `limit_spend` for all of them) and reads the
other replicas' rows of the project changed since its last read (one SELECT); back in the event
loop it charges each row's news (its count now minus the count last seen) to this replica's bucket
of that key (`Limits.charge`: refill, then subtract, down to `-burst`).

So a person's calls across N replicas stay within the limit plus what the other replicas admitted
before this one heard of it (a call reaches the others' buckets at their second sync at the
latest), and a charge beyond a bucket's debt of `-burst` is forgiven (docs/team.md has the bound).
Only credentials are shared (the project's own token is identity ""); the stdio client's None is
not. A key's count runs on while it changes: a key idle for `LIVE_S` starts a new `run` from zero,
so a reader that forgot it (or never saw it) charges the whole new count and nothing older; the
first read of a replica's life only notes what the others had counted. Rows unchanged for `KEEP_S`
are deleted every `CLEAN_EVERY` syncs.

A database error is logged once per outage and costs nothing else: the counts wait in memory and
are published when it answers; meanwhile each replica counts alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

import anyio

from mcpctl.db import pool
from mcpctl.presentation.budgets import Limits

log = logging.getLogger("mcpctl.cluster")

SYNC_S: Final = 1.0          # a sync every second (MCPCTL_LIMIT_SYNC_S: for tests only, cluster.join)
LIVE_S: Final = 120.0        # a key idle this long starts a new count; older rows are not read
MARGIN_S: Final = 5.0        # a read goes back this far before the last one (a writer's late commit)
KEEP_S: Final = 600.0        # rows unchanged this long are deleted ...
CLEAN_EVERY: Final = 60      # ... every this many syncs
WAIT_S: Final = 2.0          # a sync waits this long for a pooled connection

Key = tuple[str, str]                    # (profile, identity)
Row = tuple[str, str, str, int, int]     # (replica, profile, identity, run, taken)

_PUBLISH: Final = (
    "INSERT INTO limit_spend (project, replica, profile, identity, run, taken, at) "
    "SELECT %s, %s, u.profile, u.identity, u.run, u.taken, now() "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[]) AS u(profile, identity, run, taken) "
    "ON CONFLICT (project, replica, profile, identity) DO UPDATE "
    "SET run = EXCLUDED.run, taken = EXCLUDED.taken, at = EXCLUDED.at")
_READ: Final = (            # one row at least (for now()), the others' rows LEFT JOINed
    "SELECT now(), s.replica, s.profile, s.identity, s.run, s.taken FROM (VALUES (1)) AS one "
    "LEFT JOIN limit_spend s ON s.project = %s AND s.replica <> %s AND s.at >= {since}")
_CLEAN: Final = "DELETE FROM limit_spend WHERE project = %s AND at < now() - %s"


@dataclass
class _Count:
    run: int
    taken: int
    at: float                # this replica's clock when it last changed


class SharedLimits:
    """This replica's `limits`, shared with the other replicas of `project` on `database`
    (see the module docstring). `interval`: seconds between syncs; `clock`: for tests."""

    def __init__(self, database: str, project: str, replica: str, limits: Limits, interval: float = SYNC_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.database, self.project, self.replica, self.limits = database, project, replica, limits
        self.interval, self.clock = interval, clock
        self.mine: dict[Key, _Count] = {}
        self.pending: set[Key] = set()          # changed since last published
        self.seen: dict[tuple[str, str, str], _Count] = {}
        self.read_at: datetime | None = None    # the database's time at the last read
        self.first = True                       # the first read only notes the others' counts
        self.syncs = 0
        self.runs = 0
        self.down = False

    # -- the loop -------------------------------------------------------------------------------------

    async def run(self, stop: anyio.Event) -> None:
        """Sync every `interval` until `stop`; a project without limits costs a truth test a tick."""
        while not stop.is_set():
            if self.limits.rates or self.pending:
                rows = self.collect()
                clean = self.syncs % CLEAN_EVERY == 0
                try:
                    seen = await anyio.to_thread.run_sync(self.exchange, rows, clean)
                except Exception as e:
                    self.failed(e)
                else:
                    self.answered(seen, clean)
            with anyio.move_on_after(self.interval):
                await stop.wait()

    def step(self) -> None:
        """One sync, all in this thread (tests; `run` does the same with the database's part in a
        worker thread)."""
        rows, clean = self.collect(), self.syncs % CLEAN_EVERY == 0
        try:
            seen = self.exchange(rows, clean)
        except Exception as e:
            self.failed(e)
        else:
            self.answered(seen, clean)

    # -- in the event loop ------------------------------------------------------------------------------

    def collect(self) -> list[tuple[str, str, int, int]]:
        """Add what this replica admitted since the last sync to its counts; the rows to publish
        (profile, identity, run, taken): every key changed since the last publish that answered."""
        self.syncs += 1
        now = self.clock()
        for key, calls in self.limits.drain().items():
            count = self.mine.get(key)
            if count is None or now - count.at >= LIVE_S:        # a new run: its row may be gone or unread
                self.runs += 1
                count = self.mine[key] = _Count(self.runs, 0, now)
            count.taken += calls
            count.at = now
            self.pending.add(key)
        return [(p, i, self.mine[p, i].run, self.mine[p, i].taken) for p, i in self.pending]

    def answered(self, rows: list[Row], clean: bool) -> None:
        """The database answered: what was published is, and the others' news is charged here."""
        if self.down:
            log.warning("the database answers again (table limit_spend): per-person call limits are shared by "
                        "the replicas again")
            self.down = False
        self.pending.clear()
        first, now = self.first, self.clock()
        self.first = False
        for replica, profile, identity, run, taken in rows:
            last = self.seen.get((replica, profile, identity))
            if last is None:
                calls = 0 if first else taken
                self.seen[replica, profile, identity] = _Count(run, taken, now)
            else:
                calls = taken if last.run != run else taken - last.taken
                last.run, last.taken, last.at = run, taken, now
            if calls > 0:
                self.limits.charge(profile, identity, calls)
        if clean:
            self._forget(now)

    def failed(self, e: BaseException) -> None:
        """Logged once per outage; the counts stay pending until the database answers."""
        if not self.down:
            self.down = True
            log.warning("sharing per-person call limits failed (table limit_spend): each replica counts its own "
                        "until the database answers: %s", pool.first_line(e))

    def _forget(self, now: float) -> None:
        """Counts nobody will read again: this replica's idle keys (their next call starts a new
        run) and the others' rows not changed for longer (a change now would be a new run)."""
        for key in [k for k, c in self.mine.items() if now - c.at >= LIVE_S and k not in self.pending]:
            del self.mine[key]
        for seen in [k for k, c in self.seen.items() if now - c.at >= LIVE_S + 2 * MARGIN_S]:
            del self.seen[seen]

    # -- in a worker thread -------------------------------------------------------------------------------

    def exchange(self, rows: list[tuple[str, str, int, int]], clean: bool = False) -> list[Row]:
        """Publish `rows`, read the others' rows changed since the last read (or, the first time,
        within `LIVE_S`), and every `CLEAN_EVERY` syncs delete the rows unchanged for `KEEP_S`."""
        with pool.get_pool(self.database).connection(timeout=WAIT_S) as conn:
            if rows:
                conn.execute(_PUBLISH, (self.project, self.replica, [r[0] for r in rows], [r[1] for r in rows],
                                        [r[2] for r in rows], [r[3] for r in rows]))
            if self.read_at is None:
                found = conn.execute(_READ.format(since="now() - %s"),
                                     (self.project, self.replica, timedelta(seconds=LIVE_S))).fetchall()
            else:
                found = conn.execute(_READ.format(since="%s"), (self.project, self.replica, self.read_at)).fetchall()
            if clean:
                conn.execute(_CLEAN, (self.project, timedelta(seconds=KEEP_S)))
        self.read_at = found[0][0] - timedelta(seconds=MARGIN_S)
        return [(str(r), str(p), str(i), int(run), int(t)) for _, r, p, i, run, t in found if r is not None]
