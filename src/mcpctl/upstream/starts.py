"""How many upstreams start at once, and none once the gateway is stopping.

A gateway on a project of 6,620 servers spawned over 200 upstream processes within 40 s (load
122 on 2 cores) and kept spawning them after SIGTERM: every supervisor's first step was a spawn,
each a fork and exec on the event loop, all queued before the signal's handler could run. A start
(the process spawned or the connection opened, the handshake, the first listing) now holds one of
`limit` slots, taken before the attempt's connect timeout starts and given back when the upstream
is listed or the attempt failed (`release`, called by the gateway's pool); those waiting show as
connecting. Once `close()`d (shutdown), no one gets a slot: those waiting wait until cancelled.

`MCPCTL_UPSTREAM_STARTS`: the limit (default `PER_CPU` per CPU this process may run on).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final

import anyio

log = logging.getLogger("mcpctl.upstream")

ENV_LIMIT: Final = "MCPCTL_UPSTREAM_STARTS"
PER_CPU: Final = 4


def start_limit(environ: Mapping[str, str] = os.environ) -> int:
    """How many upstreams may be starting at once: MCPCTL_UPSTREAM_STARTS, else PER_CPU per CPU."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    default = PER_CPU * max(1, cpus)
    raw = environ.get(ENV_LIMIT, "").strip()
    if not raw:
        return default
    try:
        return max(1, int(raw))
    except ValueError:
        log.warning("%s=%r is not a number; starting at most %d upstreams at once", ENV_LIMIT, raw, default)
        return default


class Starts:
    """The slots of upstreams starting at once (`limit`; None: no limit), each held by a server's name."""

    def __init__(self, limit: int | None = None) -> None:
        self._slots = anyio.CapacityLimiter(limit) if limit is not None else None
        self._held: set[str] = set()
        self.closed = False

    @property
    def starting(self) -> int:
        return len(self._held)

    async def acquire(self, name: str) -> None:
        """Wait for a slot for `name`'s start (held already: at once); closed, until cancelled."""
        if self._slots is None or name in self._held:
            return
        if not self.closed:
            await self._slots.acquire_on_behalf_of(name)
            self._held.add(name)
            if not self.closed:
                return
            self.release(name)
        await anyio.sleep_forever()

    def release(self, name: str) -> None:
        """`name` is listed, or its attempt ended: its slot goes to the next start (none held: nothing)."""
        if self._slots is not None and name in self._held:
            self._held.discard(name)
            self._slots.release_on_behalf_of(name)

    def close(self) -> None:
        """Stopping: no start begins any more."""
        self.closed = True
