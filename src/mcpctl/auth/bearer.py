"""Who an HTTP request is: the bearer check of the gateway's HTTP front (pure ASGI).

Every request but the protected-resource metadata needs `Authorization: Bearer <token>`: the
project's own token (the full view, compared in constant time), one of its `Token`s (the profile
it names; `resources.tokens`, re-read when tokens change, so a revoked token is refused at the
next request), or an access token of a person signed in with an identity provider that grants the
project something (`auth.identity`: the profile their groups give). The profile and the
credential's name go to the request's scope state.

With identity providers, the front is an OAuth protected resource (RFC 9728): its metadata at
`/.well-known/oauth-protected-resource` (and that path followed by the endpoint's path) names the
providers, and a 401 says where it is (`WWW-Authenticate: Bearer resource_metadata="…"`), so a
client that has no token discovers where to sign in. The providers are re-read from the store at
most every RELOAD_S, when a request needs them.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

from mcpctl.resources.tokens import Credential, TokenIndex

if TYPE_CHECKING:
    from mcpctl.auth.identity import Identities

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# request scope state
PROFILE_STATE: Final = "mcpctl.profile"                    # the presented credential's profile
CREDENTIAL_STATE: Final = "mcpctl.credential"              # ... and its name ("" for the project's own token)
CHECKED_CREDENTIAL_STATE: Final = "mcpctl.checked_credential"   # the guard's reading of the token
SHARE_REFUSED_STATE: Final = "mcpctl.share_refused"        # why its connection is over its share, if it is
METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
RELOAD_S: Final = 10.0
FULL_VIEW: Final = Credential(None, None)


def bearer_token(value: bytes) -> bytes | None:
    """The token of an `Authorization: Bearer <token>` value; the scheme is case-insensitive (RFC 9110)."""
    scheme, _, token = value.strip().partition(b" ")
    token = token.strip(b" \t")
    return token if scheme.lower() == b"bearer" and token else None


async def refuse(send: Send, status: int, message: str, *, close: bool = False,
                 headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """A JSON-RPC error (no request id) with HTTP `status`, as the SDK's own refusals look."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', "'")


class BearerAuth:
    """The bearer check (see the module's text); `identities()`: the identity providers of the
    project as the store has them now (None: static tokens only)."""

    def __init__(self, app: ASGIApp, token: str, tokens: TokenIndex | None = None,
                 identities: Callable[[], Identities] | None = None) -> None:
        self.app = app
        self.expected = token.encode()
        self.tokens = tokens
        self._load_identities = identities
        self._identities: Identities | None = None
        self._loaded = -1e18

    def identities(self) -> Identities | None:
        """The identity providers granting this project something (re-read at most every RELOAD_S)."""
        if self._load_identities is not None and time.monotonic() - self._loaded >= RELOAD_S:
            self._loaded = time.monotonic()
            fresh = self._load_identities()
            old = self._identities
            if old is None or [(p.issuer, p) for p in old.providers] != [(p.issuer, p) for p in fresh.providers]:
                self._identities = fresh     # (unchanged: the keys and the checked tokens kept)
        return self._identities if self._identities else None

    def _token(self, headers: Iterable[tuple[bytes, bytes]]) -> bytes:
        for key, value in headers:
            if key.lower() == b"authorization":
                return bearer_token(value) or b""
        return b""

    def credential(self, headers: Iterable[tuple[bytes, bytes]]) -> Credential | None:
        """Who the request is, without I/O: None for a token not (yet) known good."""
        got = self._token(headers)
        if hmac.compare_digest(got, self.expected):
            return FULL_VIEW
        if got and self.tokens is not None:
            tok = self.tokens.lookup(got)
            if tok is not None:
                return Credential(tok.name, tok.profile)
        ids = self._identities
        if got and ids:
            person = ids.cached(got.decode("ascii", "replace"))
            if person is not None:
                return Credential(person.identity, person.profile)
        return None

    def authorised(self, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        return self.credential(headers) is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if str(scope.get("path", "")).startswith(METADATA_PATH):
                await self._metadata(scope, receive, send)
                return
            state = scope.setdefault("state", {})
            cred = state.get(CHECKED_CREDENTIAL_STATE) or self.credential(scope.get("headers") or ())
            if cred is None:
                cred = await self._signed_in(scope, send)
                if cred is None:
                    return
            refused = state.get(SHARE_REFUSED_STATE)
            if refused is not None:     # its connection is over the token's share (`http_guard.Guard.admit`)
                await refuse(send, 429, f"{refused}, all busy: wait for a request to finish", close=True)
                return
            state[PROFILE_STATE], state[CREDENTIAL_STATE] = cred.profile, cred.name or ""
        await self.app(scope, receive, send)

    async def _signed_in(self, scope: Scope, send: Send) -> Credential | None:
        """A person's access token checked (keys fetched, or introspected, as needed); else the
        401 or 403 is sent and None returned."""
        from mcpctl.auth.identity import Refused

        got = self._token(scope.get("headers") or ())
        ids = self.identities()
        if not got or ids is None:
            await self._challenge(send, 401, "missing or wrong bearer token", ids, error="" if not got else "invalid_token")
            return None
        try:
            person = await ids.authenticate(got.decode("ascii", "replace"))
        except Refused as e:
            await self._challenge(send, e.status, e.reason, ids,
                                  error="invalid_token" if e.status == 401 else "insufficient_scope")
            return None
        return Credential(person.identity, person.profile)

    async def _challenge(self, send: Send, status: int, reason: str, ids: Identities | None, error: str) -> None:
        challenge = 'Bearer realm="mcpctl"'
        if ids is not None:
            challenge += f', resource_metadata="{ids.metadata_url}"'
        if error:
            challenge += f', error="{error}", error_description="{_quoted(reason)}"'
        body = json.dumps({"error": error or "unauthorized", "error_description": reason}).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge.encode("latin-1", "replace"))]})
        await send({"type": "http.response.body", "body": body})

    async def _metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        ids = self.identities()
        if ids is None or scope.get("method") not in ("GET", "HEAD"):
            status, body = (404, b'{"error":"not found"}') if ids is None else (405, b'{"error":"method not allowed"}')
        else:
            status, body = 200, json.dumps(ids.metadata()).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"max-age=60")]})
        await send({"type": "http.response.body", "body": body if scope.get("method") != "HEAD" else b""})
