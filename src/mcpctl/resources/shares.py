"""What one credential may hold of a gateway: its share of something counted per credential
(HTTP connections, handshake-era sessions, 2026 calls parked for input), and the tokens' pool.

A credential is one bearer token over HTTP (its `Token` name; "" for the project's own token)
and the one client over stdio (None). `Share` counts what each holds, least recently used first:

- a token's own share (`limit`) bounds one token;
- the restricted tokens (every credential but the project's own token and the stdio client)
  together hold at most a `pool` of three quarters of the gateway-wide `cap`, and the last quarter
  is a `reserve` only the project's token and a token holding fewer than `floor` (a sixteenth of
  the reserve) may use: however many tokens flood a gateway, the project's token and a token
  holding (almost) nothing are still served (`refusal`);
- should the reserve run out too (more than reserve / floor tokens arriving after the pool
  filled), the cap makes room from the token holding most (`largest`, `over_floor`).

No I/O and no `mcp`: the gateway's fronts (`gateway.http_guard`, `gateway.shares`,
`gateway.asks`) say what is counted and what a refusal does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


def who(credential: str | None) -> str:
    """A credential as the user knows it, for messages."""
    if credential is None:
        return "this client"
    return "the project's token" if credential == "" else f"token {credential!r}"


def privileged(credential: str | None) -> bool:
    """The project's own token and the stdio client: never short of the reserve."""
    return credential is None or credential == ""


class Share(Generic[T]):
    """What each credential holds, at most `limit` each, least recently used first; the restricted
    credentials together at most `pool` (see the module docstring). `cap` is the front-wide cap
    the pool and reserve are parts of (None: the limit alone counts)."""

    def __init__(self, limit: int, what: str, flag: str, cap: int | None = None, cap_flag: str = "") -> None:
        self.limit, self.what, self.flag, self.cap_flag = limit, what, flag, cap_flag
        self.cap: int | None = cap
        self.held: dict[str | None, OrderedDict[T, None]] = {}
        self.restricted = 0         # items held by restricted credentials, all together

    @property
    def reserve(self) -> int:
        return 0 if self.cap is None else self.cap // 4

    @property
    def pool(self) -> int | None:
        return None if self.cap is None else self.cap - self.reserve

    @property
    def floor(self) -> int:
        """How many items any credential may take from the reserve."""
        return max(1, min(self.limit, self.reserve // 16))

    def of(self, credential: str | None) -> OrderedDict[T, None]:
        return self.held.get(credential) or OrderedDict()

    def count(self, credential: str | None) -> int:
        return len(self.held.get(credential) or ())

    def total(self) -> int:
        return sum(len(items) for items in self.held.values())

    def refusal(self, credential: str | None) -> str | None:
        """Why `credential` may not take one more item now, or None when it may."""
        held = self.count(credential)
        if held >= self.limit:
            return (f"{who(credential)} already holds {self.limit} {self.what}, its share of this gateway "
                    f"(mcpctl serve {self.flag})")
        pool = self.pool
        if pool is None or privileged(credential) or held < self.floor or self.restricted < pool:
            return None
        return (f"the gateway's tokens together hold {self.restricted} {self.what}: the {pool} they may fill "
                f"(three quarters of mcpctl serve {self.cap_flag} {self.cap}) are taken, the rest is kept for the "
                f"project's token and tokens holding fewer than {self.floor}, and {who(credential)} holds {held}")

    def full(self, credential: str | None) -> bool:
        return self.refusal(credential) is not None

    def add(self, credential: str | None, item: T) -> None:
        items = self.held.get(credential)
        if items is None:
            items = self.held[credential] = OrderedDict()
        if item not in items and not privileged(credential):
            self.restricted += 1
        items[item] = None
        items.move_to_end(item)

    def discard(self, credential: str | None, item: T) -> None:
        items = self.held.get(credential)
        if items is not None and item in items:
            del items[item]
            if not privileged(credential):
                self.restricted -= 1
            if not items:
                del self.held[credential]

    def largest(self) -> Iterator[T]:
        """The items of the credential holding most, oldest first (nothing if none holds any); a
        restricted credential before the privileged ones."""
        most: OrderedDict[T, None] = OrderedDict()
        rank = (-1, -1)
        for credential, items in self.held.items():
            r = (0 if privileged(credential) else 1, len(items))
            if r > rank:
                most, rank = items, r
        yield from list(most)

    def over_floor(self, credential: str | None) -> Iterator[T]:
        """At the front-wide cap, what may be taken back so that `credential` gets one: the oldest
        items of the restricted credential holding most, when that is more than `floor` and more
        than `credential` holds (nothing otherwise: then `credential` is refused)."""
        mine = self.count(credential)
        best: tuple[int, str | None] | None = None
        for other, items in self.held.items():
            if other != credential and not privileged(other) and (best is None or len(items) > best[0]):
                best = (len(items), other)
        if best is None or best[0] <= max(self.floor, mine + 1):
            return iter(())
        return iter(list(self.held[best[1]]))
