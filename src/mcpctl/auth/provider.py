"""The SDK's OAuth client as mcpctl uses it: `oauth_provider(spec, storage, ...)`.

`MCPCtlOAuth` is `mcp.client.auth.OAuthClientProvider` (discovery, registration, PKCE, the
token exchange and the refresh grant are all the SDK's) with three things the SDK leaves to its
caller, each in `_auth_flow` around the SDK's own flow:

- **Expiry that survives a restart.** The SDK keeps an access token's expiry in memory only;
  the stored absolute expiry is loaded with the tokens (`_initialize`).
- **Renew before expiry, and once on a 401.** A token within `margin` of its expiry (a quarter of
  its lifetime, at most 60 s) is refreshed before the request goes out; a 401 to a request sent
  with a token that is still the current one restarts the flow once with the token marked
  expired, so the SDK refreshes instead of starting an interactive sign-in. The SDK's lock
  (`context.lock`) serialises the flow, and a request that waited for another's refresh finds
  the new token current: one refresh, however many calls were waiting.
- **A new login picked up.** When the token file was rewritten by someone else (`mcpctl login`)
  the stored tokens are re-read before the request (one `stat` per request).
- **Renewed tokens refused are not a lapsed sign-in.** When the token a renewal just obtained is
  refused too (a server whose tokens live less than a round trip, or whose clock runs ahead),
  renewing again (`MAX_RENEWALS` times in all) and then `AccessTokensRefused`, instead of the SDK's
  interactive sign-in: the renewals succeed, so `mcpctl login` would not help; the connection
  fails like any other and the supervisor tries again with its backoff.

In the gateway there is nobody to send to a browser: its redirect handler raises
`SignInRequired` (after `on_expired`), which ends that one upstream's connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

from mcpctl.auth.storage import FileTokenStorage
from mcpctl.resources.kinds import AuthSpec

MAX_MARGIN: Final = 60.0
MAX_RENEWALS: Final = 3          # renewals for one request before its refused tokens are an error


class AccessTokensRefused(OAuthFlowError):
    """The server refused access tokens a renewal had just obtained: not a lapsed sign-in."""


class MCPCtlOAuth(OAuthClientProvider):
    """See the module docstring."""

    def __init__(self, *args: Any, file_storage: FileTokenStorage, name: str = "the server", **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.file_storage = file_storage
        self.name = name

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self.file_storage.expires_at()

    def _renew_early(self) -> None:
        ctx = self.context
        expiry = ctx.token_expiry_time
        if expiry is None or ctx.current_tokens is None:
            return
        lifetime = self.file_storage.lifetime() or ctx.current_tokens.expires_in or 0
        margin = min(MAX_MARGIN, max(0.0, float(lifetime)) / 4)
        if time.time() >= expiry - margin:
            ctx.token_expiry_time = time.time() - 1      # the SDK refreshes a token it thinks expired

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._initialized and self.file_storage.changed():
            self._initialized = False                    # a new login: re-read tokens and client
        if self._initialized:
            self._renew_early()
        flow = super()._auth_flow(request)
        renewals = 0
        try:
            outgoing = await flow.__anext__()
            while True:
                sent_with = request.headers.get("Authorization") if outgoing is request else None
                response = yield outgoing
                if outgoing is request and response.status_code == 401 and self._stale(sent_with):
                    if renewals >= MAX_RENEWALS:
                        raise self._refused(renewals)
                    renewals += 1
                    await flow.aclose()
                    self.context.token_expiry_time = time.time() - 1
                    flow = super()._auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _refused(self, renewals: int) -> AccessTokensRefused:
        lifetime = self.file_storage.lifetime()
        lives = f", each said to live {lifetime:g} s" if lifetime else ""
        return AccessTokensRefused(
            f"{self.name} refused the access tokens it had just renewed ({renewals} renewals in a row{lives}): its "
            "tokens expire before a request reaches it, or its clock runs ahead; the sign-in itself is fine "
            "(mcpctl login would not help)")

    def _stale(self, sent_with: str | None) -> bool:
        """A 401 to a request sent with the current token, which a refresh could renew."""
        tokens = self.context.current_tokens
        return bool(sent_with and tokens and tokens.refresh_token and self.context.client_info
                    and sent_with == f"Bearer {tokens.access_token}")


def client_metadata(auth: AuthSpec, redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="mcpctl", redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if auth.client_secret else "none",
        scope=" ".join(auth.scopes) or None)


def preregistered(auth: AuthSpec, client_secret: str | None, redirect_uri: str) -> OAuthClientInformationFull | None:
    """The client named by `spec.auth.clientId` (its secret resolved), or None."""
    if not auth.client_id:
        return None
    return OAuthClientInformationFull(
        client_id=auth.client_id, client_secret=client_secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method="client_secret_post" if client_secret else "none")


def oauth_provider(url: str, auth: AuthSpec, storage: FileTokenStorage, *, redirect_uri: str,
                   redirect_handler: Callable[[str], Awaitable[None]],
                   callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]]) -> MCPCtlOAuth:
    return MCPCtlOAuth(url, client_metadata(auth, redirect_uri), storage, redirect_handler=redirect_handler,
                       callback_handler=callback_handler, client_metadata_url=auth.client_metadata_url,
                       file_storage=storage, name=storage.server)


class _QuietSignIn(logging.Filter):
    """The SDK logs a traceback for every failed flow; a sign-in the gateway cannot do is one
    warning line (the supervisor's), not a traceback per attempt."""

    def filter(self, record: logging.LogRecord) -> bool:
        from mcpctl.auth.expiry import SignInRequired

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, SignInRequired)


_QUIET: Final = _QuietSignIn()
for _name in ("mcp.client.auth.oauth2", "mcp.client.streamable_http", "mcp.client.sse"):
    logging.getLogger(_name).addFilter(_QUIET)


def gateway_provider(server: str, url: str, auth: AuthSpec,
                     on_expired: Callable[[bool, tuple[int, int] | None], None]) -> MCPCtlOAuth:
    """The provider of a gateway's connection: it renews, and never asks a person.
    `on_expired(signed_in, seen)` runs when a sign-in is needed (before `SignInRequired` is
    raised); `seen` is the token file's stat as the tokens that failed were read from it."""
    from mcpctl.auth.expiry import SignInRequired

    storage = FileTokenStorage(server, url)

    async def no_browser(_url: str) -> None:
        on_expired(storage.path.exists(), storage.seen)
        raise SignInRequired(server)

    async def no_callback() -> AuthorizationCodeResult:     # never reached: no_browser raised
        raise SignInRequired(server)

    return oauth_provider(url, auth, storage, redirect_uri="http://127.0.0.1/callback",
                          redirect_handler=no_browser, callback_handler=no_callback)
