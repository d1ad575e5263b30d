"""What one credential may hold of the gateway: its share of connections, sessions and parked calls.

A credential is one bearer token over HTTP (its name; "" for the project's own token) and the one
client over stdio (None). Each has its own share of what the front holds for it, so one token
that floods the gateway is refused within its own share while the others are served:

- HTTP connections whose current request head showed the token (`http_guard.Guard`): over its
  share, its oldest idle connection is closed for the new request, or, when all of them are busy,
  the new request is answered 429 and its connection closed;
- handshake-era HTTP sessions (`SessionShares`, below): over its share, a new `initialize` is
  answered 429 (end a session with DELETE, or let one idle out);
- 2026-07-28 calls parked for the client's input (`asks.Asks`): over its share, the call that
  would park gets a JSON-RPC error.

**Shares that cannot add up to the whole.** A token's own share (`limit`, a quarter of the cap by
default) bounds one token; the tokens together are bounded too: the restricted tokens (every
credential but the project's own token and the stdio client) share a `pool` of three quarters of
the front-wide cap (`--max-connections`, `--max-sessions`, the parked table's 1,024), and the last
quarter is a `reserve` that only the project's token and a token holding fewer than `floor` (a
sixteenth of the reserve: 8 connections, 4 sessions, 16 parked calls by default) may use. So
however many tokens flood the gateway, the project's token and a token holding (almost) nothing
are still served. Should the reserve ever run out (more than reserve / floor tokens arriving after
the pool filled), the front-wide cap makes room from the credential holding most
(`largest`, `over_floor`) before it refuses anyone holding less than `floor`.
`Share` is the one count of them all.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Hashable, Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

from mcpctl.gateway.sessions import CREDENTIAL_STATE

log = logging.getLogger("mcpctl.gateway.http")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

T = TypeVar("T", bound=Hashable)
SHARE_REFUSED_STATE: Final = "mcpctl.share_refused"   # ... and why its connection is over its share, if it is
SESSION_HEADER: Final = b"mcp-session-id"
VERSION_HEADER: Final = b"mcp-protocol-version"


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
        return (f"the gateway's tokens together hold {self.restricted} {self.what}, all they may (three "
                f"quarters of mcpctl serve {self.cap_flag} {self.cap}; the rest is kept for the project's token "
                f"and tokens holding fewer than {self.floor}), and {who(credential)} holds {held}")

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


# -- handshake-era sessions -------------------------------------------------------------------------


def opens_session(scope: Scope) -> bool:
    """Whether this request would open a handshake-era session: a POST without a session id,
    routed to the handshake era by its protocol-version header (absent, or a handshake version;
    as the SDK's session manager routes it)."""
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

    if scope.get("method") != "POST":
        return False
    version = None
    for key, value in scope.get("headers") or ():
        if key == SESSION_HEADER:
            return False
        if key == VERSION_HEADER:
            version = value.decode("latin-1")
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


async def refuse(send: Send, status: int, message: str, *, close: bool = False) -> None:
    """A JSON-RPC error (no request id) with HTTP `status`, as the SDK's own refusals look."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SessionShares:
    """Pure ASGI middleware, inside the bearer check: a credential opens at most `share.limit`
    handshake-era sessions, and the restricted tokens together at most the share's pool of `cap`
    (the SDK session manager's `--max-sessions`). `live()` is the session ids still open (the SDK's
    session manager forgets a session on DELETE, idle timeout or crash); a session counts from the
    moment its opening request is admitted. At the cap, a credential the reserve no longer serves
    ends the oldest session of the token holding most (`end`) rather than being refused."""

    def __init__(self, app: ASGIApp, limit: int, live: Callable[[], Collection[str]],
                 note: Callable[[str], None], cap: int | None = None,
                 end: Callable[[str], Awaitable[None]] | None = None) -> None:
        self.app, self.live, self.note, self.end = app, live, note, end
        self.share: Share[str | object] = Share(limit, "open sessions", "--max-sessions-per-credential", cap,
                                                "--max-sessions")

    def _prune(self) -> None:
        live = self.live()
        for credential in list(self.share.held):
            for sid in [s for s in self.share.of(credential) if isinstance(s, str) and s not in live]:
                self.share.discard(credential, sid)

    async def _make_room(self, credential: str | None) -> None:
        """At the cap: end the oldest session of the token holding most (if it holds more than its
        floor and more than `credential`), so that the SDK does not answer 503."""
        cap = self.share.cap
        if cap is None or self.end is None or len(self.live()) < cap:
            return
        for sid in self.share.over_floor(credential):
            if isinstance(sid, str):
                self.note("session-evicted")
                await self.end(sid)
                self._prune()
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not opens_session(scope):
            await self.app(scope, receive, send)
            return
        credential = (scope.get("state") or {}).get(CREDENTIAL_STATE)
        self._prune()
        refused = self.share.refusal(credential)
        if refused is not None:
            self.note("session-share" if self.share.count(credential) >= self.share.limit else "session-pool")
            await refuse(send, 429, refused + ": end one (DELETE) or let one idle out (--session-idle-timeout)")
            return
        opening = object()              # counts until the session is known (or failed)
        self.share.add(credential, opening)
        opened: list[str] = []

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened.extend(v.decode("latin-1") for k, v in message.get("headers") or () if k.lower() == SESSION_HEADER)
            await send(message)

        try:
            await self._make_room(credential)
            await self.app(scope, receive, watch)
        finally:
            self.share.discard(credential, opening)
            live = self.live()
            for sid in opened:
                if sid in live:
                    self.share.add(credential, sid)
