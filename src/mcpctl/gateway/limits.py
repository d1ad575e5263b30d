"""Limits per identity and per upstream: calls-per-minute budgets and a ceiling on calls in flight.

- **Budgets** (a profile's `limits`, `resources.call_limits`): each identity of a profile (the
  caller's credential: a token's name, "" for the project's own token, the stdio client under
  `serve --profile`) has its own token bucket, `burst` calls deep and refilled at
  `callsPerMinute`. Every `tools/call` (the built-ins too) and every request relayed for a client
  (`resources/read`, `prompts/get`, `completion/complete`, `resources/subscribe`) takes one call from
  it; lists and `ping` take none (they are answered from the gateway's own catalogue, and a client
  that cannot list cannot work). Over budget, a `tools/call` gets an `isError` result naming the
  limit and when to retry, any other request a JSON-RPC error (`LIMITED`, with `retryAfterSeconds`
  in its data), and the invocation log a `limited` row. Taking from a bucket never awaits, so
  concurrent callers see exact counts, and one identity's empty bucket costs another identity
  nothing. The clock is injectable (`Limits(clock=...)`) so tests are exact.
- **The ceiling** (a server's `maxConcurrency`): at most that many requests for clients in flight
  at the upstream at once; the rest wait in arrival order, each for at most the server's
  `timeouts.call`, then fail as `limited` (`Saturated`). Waiting is what a client expects of a
  busy shared server (as of a connection pool): a refused call costs an agent a turn and invites a
  retry storm, a queued one costs only time, and the bound keeps that time finite.

With no limits configured the call path pays one truth test (`Limits.rates` is empty) and one
dict lookup (`Pool.ceilings`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import anyio

from mcpctl.upstream.errors import UpstreamTimeout

if TYPE_CHECKING:
    from mcpctl.gateway.sessions import Caller
    from mcpctl.resources.call_limits import Rate
    from mcpctl.resources.kinds import ProjectSpec

LIMITED: Final = -32029            # JSON-RPC error code of a request over its budget (the 429 of MCP)
LIMITED_CLASS: Final = "CallLimit"  # the log's error class of such a request
MAX_BUCKETS: Final = 65536         # identities remembered; past it, full buckets (as good as new) go

Clock = Callable[[], float]
R = TypeVar("R")


class Bucket:
    """A token bucket: `burst` calls deep, refilled at `per_minute` a minute."""

    __slots__ = ("at", "level", "per_second", "rate")

    def __init__(self, rate: Rate, now: float) -> None:
        self.rate = rate
        self.per_second = rate.per_minute / 60.0
        self.level = float(rate.burst)
        self.at = now

    def refill(self, now: float) -> None:
        if now > self.at:
            self.level = min(float(self.rate.burst), self.level + (now - self.at) * self.per_second)
        self.at = max(self.at, now)

    def take(self, now: float) -> float:
        """Take one call: 0.0 when there was one, else the seconds until there is."""
        self.refill(now)
        if self.level >= 1.0:
            self.level -= 1.0
            return 0.0
        return (1.0 - self.level) / self.per_second


@dataclass(frozen=True)
class Limited:
    """A request over its identity's budget: what to tell the caller."""

    profile: str
    identity: str | None
    rate: Rate
    own: bool                    # the identity's own budget (limits.identities), not the profile's
    retry_after: int             # whole seconds, at least 1

    @property
    def message(self) -> str:
        whose = "the stdio client" if self.identity is None else \
            "the project's own token" if self.identity == "" else f"identity {self.identity!r}"
        field = f"profiles.{self.profile}.limits" + (f".identities.{self.identity}" if self.own else "")
        return (f"call limit reached: {whose} may make {self.rate.describe()} ({field}); "
                f"retry in {self.retry_after} s")


class Limits:
    """The budgets of a project's identities, by profile."""

    def __init__(self, project: ProjectSpec, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.rates: dict[str, tuple[Rate | None, dict[str, Rate]]] = {}
        self.buckets: dict[tuple[str, str | None], Bucket] = {}
        self.reproject(project)

    def reproject(self, project: ProjectSpec) -> None:
        """The project changed: new rates apply from the next call; what each identity has
        spent is kept (a bucket of a changed rate keeps its level, capped by the new burst)."""
        self.rates = {p.name: (p.limits.default, dict(p.limits.identities))
                      for p in project.profiles if p.limits is not None}

    def take(self, caller: Caller) -> Limited | None:
        """Take one call from the caller's budget: None when it had one (or has no budget)."""
        profile = caller.profile
        if profile is None:
            return None
        limits = self.rates.get(profile)
        if limits is None:
            return None
        identity = caller.credential
        own = limits[1].get(identity) if identity is not None else None
        rate = own or limits[0]
        if rate is None:
            return None
        now, key = self.clock(), (profile, identity)
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= MAX_BUCKETS:
                self._forget_full(now)
            bucket = self.buckets[key] = Bucket(rate, now)
        elif bucket.rate != rate:
            bucket.refill(now)
            bucket.rate, bucket.per_second = rate, rate.per_minute / 60.0
            bucket.level = min(bucket.level, float(rate.burst))
        wait = bucket.take(now)
        if wait == 0.0:
            return None
        return Limited(profile, identity, rate, own is not None, max(1, math.ceil(wait)))

    def _forget_full(self, now: float) -> None:
        for key, bucket in list(self.buckets.items()):
            bucket.refill(now)
            if bucket.level >= bucket.rate.burst:
                del self.buckets[key]


# -- the ceiling on calls in flight at one upstream ----------------------------------------------------


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
