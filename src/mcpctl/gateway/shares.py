"""Each credential's share of the HTTP front's sessions (`SessionShares`), and the refusals of the
fronts' shares (connections: `http_guard.Guard`; parked calls: `asks.Asks`); the accounting itself,
with the tokens' pool and reserve, is `resources.shares.Share`.

Over its share (or the tokens' pool), a token's new connection closes its own oldest idle one or
is answered 429, its new `initialize` is answered 429 (end a session with DELETE, or let one idle
out), and its call that would park gets a JSON-RPC error.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any, Final

from mcpctl.auth.bearer import CREDENTIAL_STATE, refuse
from mcpctl.resources.shares import Share

log = logging.getLogger("mcpctl.gateway.http")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_HEADER: Final = b"mcp-session-id"
VERSION_HEADER: Final = b"mcp-protocol-version"


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
