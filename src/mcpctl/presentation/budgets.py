"""Calls-per-minute budgets: each identity of a profile has its own token bucket.

A profile's `limits` (`resources.call_limits`) give each identity of it (the caller's credential:
a token's name, "" for the project's own token, None for the stdio client under `serve --profile`)
a bucket `burst` calls deep, refilled at `callsPerMinute`. The gateway takes one call from it for
every `tools/call` (the built-ins too) and every request it relays for a client
(`resources/read`, `prompts/get`, `completion/complete`, `resources/subscribe`); lists and `ping`
take none (they are answered from the gateway's own catalogue, and a client that cannot list
cannot work). Over budget, a `tools/call` gets an `isError` result naming the limit and when to
retry, any other request a JSON-RPC error (`LIMITED`, `retryAfterSeconds` in its data), and the
invocation log a `limited` row (`gateway.router`, `gateway.surfaces`).

Taking from a bucket never awaits, so concurrent callers see exact counts, and one identity's
empty bucket costs another identity nothing. The clock is injectable (`Limits(clock=...)`) so
tests are exact. With no limits configured the call path pays one truth test (`Limits.rates`).

Replicas of one team's gateway share what they admit (`cluster.limits`) without the call path
asking anything: a bucket counts the calls it admitted (`Bucket.taken`, one increment), the
cluster's sync takes those counts (`Limits.drain`) and charges each bucket what the other replicas
admitted (`Limits.charge`). A charge may leave a bucket in debt, down to `-burst`: calls admitted
elsewhere before this replica heard of them are paid back by this replica's callers waiting longer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mcpctl.resources.call_limits import Rate
    from mcpctl.resources.kinds import ProjectSpec

LIMITED: Final = -32029            # JSON-RPC error code of a request over its budget (the 429 of MCP)
LIMITED_CLASS: Final = "CallLimit"  # the log's error class of such a request
MAX_BUCKETS: Final = 65536         # identities remembered; past it, full buckets (as good as new) go

Clock = Callable[[], float]


class Bucket:
    """A token bucket: `burst` calls deep, refilled at `per_minute` a minute."""

    __slots__ = ("at", "level", "per_second", "rate", "taken")

    def __init__(self, rate: Rate, now: float) -> None:
        self.rate = rate
        self.per_second = rate.per_minute / 60.0
        self.level = float(rate.burst)
        self.at = now
        self.taken = 0          # calls admitted since the last `Limits.drain`

    def refill(self, now: float) -> None:
        if now > self.at:
            self.level = min(float(self.rate.burst), self.level + (now - self.at) * self.per_second)
        self.at = max(self.at, now)

    def take(self, now: float) -> float:
        """Take one call: 0.0 when there was one, else the seconds until there is."""
        self.refill(now)
        if self.level >= 1.0:
            self.level -= 1.0
            self.taken += 1
            return 0.0
        return (1.0 - self.level) / self.per_second

    def charge(self, calls: int, now: float) -> None:
        """Spend `calls` admitted elsewhere: refill to `now`, then subtract, down to `-burst` at most
        (a debt: the time to pay it back is added to this bucket's next wait)."""
        self.refill(now)
        self.level = max(-float(self.rate.burst), self.level - calls)


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

    def take(self, profile: str | None, identity: str | None) -> Limited | None:
        """Take one call from the budget of `identity` (a caller's credential) under `profile`:
        None when it had one (or has no budget)."""
        if profile is None:
            return None
        found = self._budget(profile, identity)
        if found is None:
            return None
        bucket, own, now = found
        wait = bucket.take(now)
        if wait == 0.0:
            return None
        return Limited(profile, identity, bucket.rate, own, max(1, math.ceil(wait)))

    def drain(self) -> dict[tuple[str, str], int]:
        """The calls each credential (an identity other than the stdio client's None) was admitted
        since the last drain, by (profile, identity); the counts start again from zero."""
        admitted: dict[tuple[str, str], int] = {}
        for (profile, identity), bucket in self.buckets.items():
            if bucket.taken and identity is not None:
                admitted[profile, identity] = bucket.taken
                bucket.taken = 0
        return admitted

    def charge(self, profile: str, identity: str, calls: int) -> None:
        """Spend `calls` that another replica admitted for `identity` under `profile` from this
        replica's bucket of it (`Bucket.charge`); nothing when the profile (no longer) limits it."""
        found = self._budget(profile, identity) if calls > 0 else None
        if found is not None:
            found[0].charge(calls, found[2])

    def _budget(self, profile: str, identity: str | None) -> tuple[Bucket, bool, float] | None:
        """The bucket of `identity` under `profile` at its rate now, whether the rate is the
        identity's own, and the time; None when the profile gives it no budget."""
        limits = self.rates.get(profile)
        if limits is None:
            return None
        own = _own(limits[1], identity) if identity is not None and limits[1] else None
        rate = own or limits[0]
        if rate is None:
            return None
        now, key = self.clock(), (profile, identity)
        bucket = self.buckets.get(key)
        if bucket is None or bucket.rate != rate:
            bucket = self._bucket(key, rate, now)
        return bucket, own is not None, now

    def _bucket(self, key: tuple[str, str | None], rate: Rate, now: float) -> Bucket:
        """The bucket of `key` at `rate`: a new, full one, or the one there brought to a changed rate."""
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= MAX_BUCKETS:
                self._forget_full(now)
            bucket = self.buckets[key] = Bucket(rate, now)
        else:
            bucket.refill(now)
            bucket.rate, bucket.per_second = rate, rate.per_minute / 60.0
            bucket.level = min(bucket.level, float(rate.burst))
        return bucket

    def _forget_full(self, now: float) -> None:
        for key, bucket in list(self.buckets.items()):
            bucket.refill(now)
            if bucket.level >= bucket.rate.burst:       # (with a count not yet drained: at most a sync's)
                del self.buckets[key]


def _own(rates: dict[str, Rate], identity: str) -> Rate | None:
    """An identity's own rate: by the whole name the log shows, else for a person signed in through
    an identity provider (shown as `sub (email or name)`, `auth.identity.Person`) by the `sub` or
    by the email or name."""
    rate = rates.get(identity)
    if rate is None and identity.endswith(")") and " (" in identity:
        sub, _, shown = identity[:-1].partition(" (")
        rate = rates.get(sub) or rates.get(shown)
    return rate
