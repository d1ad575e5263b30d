"""A profile's `limits`: how many calls per minute each identity of it may make (its schema and
typed view).

    profiles:
      ci:
        limits:
          callsPerMinute: 60      # each identity of the profile refills at this rate
          burst: 10               # and may spend this many at once (unset: callsPerMinute)
          identities:             # one identity's own budget: a token's name, a person's sub or email
            nightly: {callsPerMinute: 600, burst: 50}

The budget is per identity (a token's name; later a person), not shared by the profile: one
agent spending its budget leaves every other identity's whole. An identity's entry replaces what
it gives and keeps the profile's values for the rest; a profile may give budgets to named
identities only (no `callsPerMinute` of its own). Enforced by `presentation.budgets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from mcpctl.resources.schema import MapOf, Obj, Scalar, check_range

MAX_RATE: Final = 1_000_000          # calls per minute (or at once): beyond it, say nothing at all
MAX_IDENTITY: Final = 256            # characters of an identity's name (a token's, a JWT's `sub`)


def _check_identity(value: str) -> str | None:
    if not value or value != value.strip() or len(value) > MAX_IDENTITY or not value.isprintable():
        return (f"{value!r} is not an identity: the name the log shows for it (a token's name), printable, "
                f"without surrounding spaces, at most {MAX_IDENTITY} characters")
    return None


def _rate_fields() -> dict[str, Scalar]:
    return {"callsPerMinute": Scalar(int, nullable=True, check=check_range(1, MAX_RATE)),
            "burst": Scalar(int, nullable=True, check=check_range(1, MAX_RATE))}


LIMITS: Final = Obj({
    **_rate_fields(),
    "identities": MapOf(Obj(_rate_fields()), key_check=_check_identity, default_empty=False),
}, omit_if_default=True)


@dataclass(frozen=True)
class Rate:
    """A token bucket's shape: `per_minute` calls a minute, at most `burst` at once."""

    per_minute: int
    burst: int

    def describe(self) -> str:
        return f"{self.per_minute} calls per minute (burst {self.burst})"


def _given(o: dict[str, Any], key: str, inherited: int | None) -> int | None:
    value = o.get(key)
    return inherited if value is None else int(value)


def _rate(per_minute: int | None, burst: int | None) -> Rate | None:
    if per_minute is None:
        return None
    return Rate(per_minute, burst if burst is not None else per_minute)


@dataclass(frozen=True)
class ProfileLimits:
    """`default`: every identity's budget (None: only the named ones have one); `identities`:
    an identity's own, in the file's order (pairs: the view stays hashable, as a profile is)."""

    default: Rate | None = None
    identities: tuple[tuple[str, Rate], ...] = ()

    @classmethod
    def from_spec(cls, s: dict[str, Any] | None) -> ProfileLimits | None:
        if not s:
            return None
        cpm, burst = s.get("callsPerMinute"), s.get("burst")
        own: dict[str, Rate] = {}
        for name, o in (s.get("identities") or {}).items():
            o = o or {}
            rate = _rate(_given(o, "callsPerMinute", cpm), _given(o, "burst", burst))
            if rate is not None:
                own[name] = rate
        limits = cls(_rate(cpm, burst), tuple(own.items()))
        return limits if limits.default is not None or limits.identities else None


def limits_problem(profiles: dict[str, Any]) -> tuple[tuple[str, ...], str, str] | None:
    """What no single field of `spec.profiles` can say about its limits: (path, message, hint) of
    the first budget without a rate, else None."""
    for name, profile in profiles.items():
        limits = (profile or {}).get("limits") or {}
        at = ("spec", "profiles", name, "limits")
        cpm = limits.get("callsPerMinute")
        if cpm is None and limits.get("burst") is not None:
            return ((*at, "burst"), f"{'.'.join(at)}.burst is given without callsPerMinute",
                    "add callsPerMinute: the rate the burst refills at")
        for who, own in (limits.get("identities") or {}).items():
            if cpm is None and (own or {}).get("callsPerMinute") is None:
                path = (*at, "identities", who, "callsPerMinute")
                return (path, f"{'.'.join(path)} is required: profile {name!r} gives no callsPerMinute to inherit",
                        f"give identity {who!r} its own callsPerMinute, or the profile one for every identity")
    return None
