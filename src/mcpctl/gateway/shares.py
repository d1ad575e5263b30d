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

The front-wide caps (`--max-connections`, `--max-sessions`, the parked table's 1,024) still bound
the sum; a share is a quarter of its cap by default, so four flooding tokens are needed to fill one.
`Share` is the one count of them all.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Container, Hashable, Iterator, MutableMapping
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


class Share(Generic[T]):
    """What each credential holds, at most `limit` each, least recently used first."""

    def __init__(self, limit: int, what: str, flag: str) -> None:
        self.limit, self.what, self.flag = limit, what, flag
        self.held: dict[str | None, OrderedDict[T, None]] = {}

    def of(self, credential: str | None) -> OrderedDict[T, None]:
        return self.held.get(credential) or OrderedDict()

    def count(self, credential: str | None) -> int:
        return len(self.held.get(credential) or ())

    def full(self, credential: str | None, pending: int = 0) -> bool:
        return self.count(credential) + pending >= self.limit

    def add(self, credential: str | None, item: T) -> None:
        items = self.held.get(credential)
        if items is None:
            items = self.held[credential] = OrderedDict()
        items[item] = None
        items.move_to_end(item)

    def discard(self, credential: str | None, item: T) -> None:
        items = self.held.get(credential)
        if items is not None:
            items.pop(item, None)
            if not items:
                del self.held[credential]

    def largest(self) -> Iterator[T]:
        """The items of the credential holding most, oldest first (nothing if none holds any)."""
        most: OrderedDict[T, None] = OrderedDict()
        for items in self.held.values():
            if len(items) > len(most):
                most = items
        yield from list(most)

    def refusal(self, credential: str | None) -> str:
        return (f"{who(credential)} already holds {self.limit} {self.what}, its share of this gateway "
                f"(mcpctl serve {self.flag})")


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
    handshake-era sessions. `live()` is the session ids still open (the SDK's session manager
    forgets a session on DELETE, idle timeout or crash); a session counts from the moment its
    opening request is admitted."""

    def __init__(self, app: ASGIApp, limit: int, live: Callable[[], Container[str]],
                 note: Callable[[str], None]) -> None:
        self.app, self.live, self.note = app, live, note
        self.share: Share[str] = Share(limit, "open sessions", "--max-sessions-per-credential")
        self.opening: dict[str | None, int] = {}

    def _prune(self, credential: str | None) -> None:
        live = self.live()
        for sid in [s for s in self.share.of(credential) if s not in live]:
            self.share.discard(credential, sid)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not opens_session(scope):
            await self.app(scope, receive, send)
            return
        credential = (scope.get("state") or {}).get(CREDENTIAL_STATE)
        self._prune(credential)
        opening = self.opening.get(credential, 0)
        if self.share.full(credential, opening):
            self.note("session-share")
            await refuse(send, 429, self.share.refusal(credential) + ": end one (DELETE) or let one idle out "
                         "(--session-idle-timeout)")
            return
        self.opening[credential] = opening + 1
        opened: list[str] = []

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened.extend(v.decode("latin-1") for k, v in message.get("headers") or () if k.lower() == SESSION_HEADER)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            left = self.opening[credential] - 1
            if left:
                self.opening[credential] = left
            else:
                del self.opening[credential]
            live = self.live()
            for sid in opened:
                if sid in live:
                    self.share.add(credential, sid)
