"""A ceiling on the requests in flight at one upstream (a server's `maxConcurrency`).

At most that many requests for clients are in flight at the upstream at once; the rest wait in
arrival order, each for at most the server's `timeouts.call`, then fail as `limited`
(`Saturated`). Waiting is what a client expects of a busy shared server (as of a connection
pool): a refused call costs an agent a turn and invites a retry storm, a queued one costs only
time, and the bound keeps that time finite. The gateway keeps one `Ceiling` per server that has
one (`gateway.pool`); without one, the gateway relays as it did (one dict lookup, one `is None` test).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio

from mcpctl.upstream.errors import UpstreamTimeout

R = TypeVar("R")


class Saturated(UpstreamTimeout):
    """A request waited its server's whole call timeout for room under `maxConcurrency`."""

    outcome = "limited"


class Ceiling:
    """At most `limit` requests in flight at `server`; the rest wait, first come first served."""

    def __init__(self, server: str, limit: int, wait: float) -> None:
        self.server = server
        self.limit = limit
        self.wait = wait                  # the longest a request waits for room (its call timeout)
        self._slots = anyio.Semaphore(limit)
        self.in_flight = 0                # observed by tests; the semaphore decides

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the `limit` places for the request made inside the block."""
        admitted = False
        with anyio.move_on_after(self.wait):
            await self._slots.acquire()
            admitted = True
        if not admitted:
            raise Saturated(f"upstream server {self.server!r} already has {self.limit} calls in flight "
                            f"(maxConcurrency: {self.limit}) and none finished within {self.wait:g}s "
                            "(timeouts.call); retry later")
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self._slots.release()


async def held(ceiling: Ceiling | None, run: Callable[[], Awaitable[R]]) -> R:
    """`run()` within one of `ceiling`'s places (None: no ceiling). The place is taken around the
    whole relayed request, before it counts as in flight for what the upstream asks (`asks`), so a
    request still waiting is never taken for the one the upstream's question belongs to."""
    if ceiling is None:
        return await run()
    async with ceiling.slot():
        return await run()
