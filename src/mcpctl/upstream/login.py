"""The sign-in of `mcpctl login SERVER`: the authorization-code flow with PKCE on a loopback redirect.

The flow is the SDK's (`OAuthClientProvider`: discovery, dynamic registration or the client
given in `spec.auth`, PKCE, the token exchange); this module supplies what it leaves to its
caller: a one-shot HTTP listener on `127.0.0.1` (a free port, or `--port`) that receives the
redirect, the URL printed (and a browser opened when there is one), a bounded wait, and errors
that say what happened. The flow starts from an ordinary request to the server: its 401 is what
sets the SDK going, so a server that answers without one never asked for a sign-in.

Tokens and the registration land in the server's token file (`auth.storage`), written through as the
SDK obtains them; nothing here prints or logs a token, a code or a state value.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import re
import sys
import webbrowser
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketStream

from mcpctl.errors import MCPCtlError, UpstreamError
from mcpctl.resources.kinds import ServerSpec

CALLBACK_PATH: Final = "/callback"
MAX_REQUEST_BYTES: Final = 16 * 1024
_PAGE: Final = ("<!doctype html><meta charset=utf-8><title>mcpctl</title>"
                "<p>{text}</p><p>You can close this window.</p>")


class LoginError(UpstreamError):
    """The sign-in did not complete (exit code 5, like any upstream trouble)."""


@dataclass
class _Answer:
    params: dict[str, str]


class LoopbackCallback:
    """A listener on 127.0.0.1 that takes exactly one redirect to `CALLBACK_PATH`: the one carrying
    this login's `state` (`expect`, from the authorization URL). Any local process can reach the
    port: a request without that state (a forged code or denial, a stale tab) is answered 400 and
    ignored (`on_ignored`), and the login goes on waiting for the real redirect."""

    def __init__(self, port: int, on_ignored: Callable[[], None] | None = None) -> None:
        self.port = port
        self.state: str | None = None
        self.on_ignored = on_ignored
        self._answer: _Answer | None = None
        self._got = anyio.Event()

    def expect(self, auth_url: str) -> None:
        """The state the redirect must carry: the one in the authorization URL the user opens."""
        states = parse_qs(urlsplit(auth_url).query).get("state")
        self.state = states[0] if states else None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[LoopbackCallback]:
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        except OSError as e:
            raise LoginError(f"cannot listen on 127.0.0.1:{self.port} for the sign-in redirect: "
                             f"{e.strerror or e}", hint="choose another --port, or leave it out for a free one") from None
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, self._handle)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            data = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST_BYTES:
                    try:
                        data += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            target = urlsplit(parts[1]) if len(parts) >= 2 else None
            if target is None or parts[0] != "GET" or target.path != CALLBACK_PATH or self._answer is not None:
                await self._reply(stream, 404, "Not the sign-in redirect mcpctl is waiting for.")
                return
            params = {k: v[0] for k, v in parse_qs(target.query).items()}
            got = params.get("state", "")
            if self.state is None or not hmac.compare_digest(got.encode(), self.state.encode()):
                if self.on_ignored is not None:
                    self.on_ignored()
                await self._reply(stream, 400, "Not this sign-in's redirect (its state does not match): ignored.")
                return
            self._answer = _Answer(params)
            self._got.set()
            text = ("Signed in: mcpctl has the authorization." if "code" in params
                    else "The sign-in was not completed; see the terminal.")
            await self._reply(stream, 200, text)

    @staticmethod
    async def _reply(stream: SocketStream, status: int, text: str) -> None:
        body = _PAGE.format(text=text).encode()
        reason = {200: "OK", 400: "Bad Request"}.get(status, "Not Found")
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; "
                f"charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
                "Cache-Control: no-store\r\n\r\n").encode()
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(head + body)

    async def wait(self) -> dict[str, str]:
        await self._got.wait()
        assert self._answer is not None
        return self._answer.params


def browser_available() -> bool:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


@dataclass(frozen=True)
class LoginResult:
    server: str
    registered: bool            # a client was registered (or named) for this sign-in
    state: str                  # SignInState.describe() after the sign-in


async def login(spec: ServerSpec, *, port: int = 0, open_browser: bool = True, timeout: float = 300.0,
                say: Callable[[str], None]) -> LoginResult:
    """Sign in to `spec` (an http/sse server with `spec.auth`); `say` prints progress to the user."""
    from mcpctl.auth.storage import sign_in_state
    from mcpctl.upstream.errors import ConfigError
    from mcpctl.upstream.transport import remote_target

    if spec.auth is None:
        raise MCPCtlError(f"server {spec.name!r} does not sign in with OAuth (no spec.auth)",
                          hint=f"add `auth: {{type: oauth}}` to its spec (mcpctl edit server {spec.name}), "
                          "or keep using spec.headers")
    try:
        url, headers = remote_target(spec)
    except ConfigError as e:
        raise MCPCtlError(str(e)) from None
    # The SDK logs a traceback for every failed flow; here each failure is one clear error.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    try:
        await _login(spec, url, headers, port, open_browser, timeout, say)
    except BaseExceptionGroup as group:          # from the listener's task group
        from mcpctl.upstream.errors import leaves

        first = next((x for x in leaves(group) if isinstance(x, MCPCtlError)), None)
        if first is None:
            raise
        raise first from None
    state = sign_in_state(spec.name, url)
    if state.state == "signed-out":
        raise LoginError(f"server {spec.name!r} at {url} did not ask for a sign-in (it answered without a 401)",
                         hint="it may not use OAuth: remove spec.auth, or check spec.url")
    return LoginResult(spec.name, True, state.describe())


async def _login(spec: ServerSpec, url: str, headers: dict[str, str], port: int, open_browser: bool,
                 timeout: float, say: Callable[[str], None]) -> None:
    from mcpctl.auth.storage import FileTokenStorage

    def ignored() -> None:
        say(f"(ignored a request to the sign-in callback that did not carry this login's state; still waiting "
            f"for the redirect from {spec.name}'s sign-in page)")

    callback = LoopbackCallback(port, ignored)
    async with callback.serving():
        storage = FileTokenStorage(spec.name, url, fresh=True, buffered=True)
        await _prepare_client(spec, storage, callback.redirect_uri)
        opened = False

        async def redirect(auth_url: str) -> None:
            nonlocal opened
            await _client_document(spec, storage, callback.redirect_uri, say)
            callback.expect(auth_url)
            say(f"Sign in to {spec.name} in your browser:\n\n  {auth_url}\n")
            if open_browser and browser_available():
                opened = webbrowser.open(auth_url)
            say(f"Waiting up to {timeout:g}s for the sign-in (redirect to {callback.redirect_uri})...")

        async def answer() -> Any:
            from mcp.shared.auth import AuthorizationCodeResult

            try:
                with anyio.fail_after(timeout):
                    params = await callback.wait()
            except TimeoutError:
                raise LoginError(f"no sign-in for {spec.name} within {timeout:g}s (--timeout)",
                                 hint="run mcpctl login again and finish in the browser, or give a longer --timeout") from None
            if "error" in params:
                why = params.get("error_description") or params["error"]
                raise LoginError(f"the authorization server refused the sign-in to {spec.name}: {why}",
                                 hint="sign in again and allow the access mcpctl asks for")
            if not params.get("code"):
                raise LoginError(f"the sign-in redirect for {spec.name} carried no authorization code")
            return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

        await _run_flow(spec, url, headers, storage, callback.redirect_uri, redirect, answer)
        storage.commit()                # registration and tokens reach the file together, once


async def _client_document(spec: ServerSpec, storage: Any, redirect_uri: str, say: Callable[[str], None]) -> None:
    """Say which client the sign-in is for when spec.auth.clientMetadataUrl is set, and check that
    document first when the authorization server is to fetch it (mcpctl.auth.cimd: a document it
    refuses is refused in the browser, never redirected back, so this is the only place mcpctl can
    say what is wrong with it)."""
    from mcpctl.auth import cimd

    assert spec.auth is not None
    url = spec.auth.client_metadata_url
    info = await storage.get_client_info()
    if not url or info is None:
        return
    if info.client_id != url:
        say(f"(the authorization server of {spec.name} does not take Client ID Metadata Documents "
            "(no client_id_metadata_document_supported in its metadata): mcpctl registered itself with it instead)")
        return
    try:
        doc = await cimd.fetch(url, spec.timeouts.connect)
    except cimd.Unreadable as e:
        say(f"(could not read the client metadata document {url} to check it: {e}; the authorization server "
            "reads it itself)")
        return
    found = cimd.problems(url, doc, redirect_uri)
    if found:
        raise LoginError(f"the client metadata document {url} (spec.auth.clientMetadataUrl of {spec.name}) would be "
                         f"refused by the authorization server: {'; '.join(found)}",
                         hint=f"fix the document ({_CIMD_DOCS}), then run mcpctl login {spec.name} again")
    say(f"Signing in as the client of {url} (a Client ID Metadata Document; no registration)")


async def _prepare_client(spec: ServerSpec, storage: Any, redirect_uri: str) -> None:
    """Name the client given in spec.auth, or drop a registration made for another redirect port."""
    from mcpctl.auth.provider import preregistered
    from mcpctl.errors import SecretError
    from mcpctl.resources import secrets

    assert spec.auth is not None
    secret = None
    if spec.auth.client_secret:
        try:
            secret = secrets.resolve(spec.auth.client_secret, where=f"server {spec.name!r} spec.auth.clientSecret")
        except SecretError as e:
            raise MCPCtlError(str(e), hint=e.hint) from None
    given = preregistered(spec.auth, secret, redirect_uri)
    if given is not None:
        await storage.set_client_info(given)
        return
    stored = await storage.get_client_info()
    uris = [str(u) for u in (stored.redirect_uris or [])] if stored is not None else []
    if stored is not None and (redirect_uri not in uris or stored.client_id == spec.auth.client_metadata_url):
        storage.drop_client_info()


async def _run_flow(spec: ServerSpec, url: str, headers: dict[str, str], storage: Any, redirect_uri: str,
                    redirect: Any, answer: Any) -> None:
    import httpx2
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    from mcpctl.auth.provider import AccessTokensRefused, oauth_provider

    assert spec.auth is not None
    provider = oauth_provider(url, spec.auth, storage, redirect_uri=redirect_uri,
                              redirect_handler=redirect, callback_handler=answer)
    timeout = httpx2.Timeout(spec.timeouts.connect)
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=timeout, auth=provider) as http:
            if spec.transport == "sse":
                async with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as response:
                    status = response.status_code
            else:
                response = await http.post(url, json=_INITIALIZE, headers={
                    "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
                status = response.status_code
    except LoginError:
        raise
    except OAuthRegistrationError as e:
        if provider.context.oauth_metadata is None:
            raise LoginError(_flow_error(spec, provider, e), hint="it may not use OAuth: remove spec.auth and "
                             "use spec.headers") from None
        raise _registration_error(spec, provider.context.oauth_metadata, e) from None
    except AccessTokensRefused as e:
        raise LoginError(str(e), hint="its operator must give access tokens a longer life (or fix its clock)") from None
    except (OAuthFlowError, OAuthTokenError) as e:
        hint = f"run mcpctl login {spec.name} again" if _mismatch(spec, str(e)) is None else (
            "check that spec.url is the server's own address (not a proxy or an old host); otherwise its "
            "operator must fix its OAuth metadata")
        raise LoginError(_flow_error(spec, provider, e), hint=hint) from None
    except httpx2.HTTPError as e:
        raise LoginError(f"cannot reach {spec.name} at {url}: {e}", hint="check spec.url and the network") from None
    if status in (401, 403):
        raise LoginError(f"server {spec.name!r} still refused mcpctl after the sign-in (HTTP {status})",
                         hint="check spec.auth.scopes against what the server needs")


def _registration_error(spec: ServerSpec, metadata: Any, e: Exception) -> LoginError:
    """Dynamic registration failed: said as "it offers none" when the metadata has no
    registration_endpoint, with what to set instead (a metadata document when the server takes
    them, else a client registered there)."""
    preregister = ("register a client there and set spec.auth.clientId (and clientSecret as a ${env:}/${file:} "
                   "reference)")
    if getattr(metadata, "client_id_metadata_document_supported", None) is True:
        hint = ("it takes a Client ID Metadata Document: publish one at an https URL and set "
                f"spec.auth.clientMetadataUrl to it ({_CIMD_DOCS}); or {preregister}")
    else:
        hint = preregister
    if getattr(metadata, "registration_endpoint", None) is None:
        return LoginError(f"the authorization server of {spec.name} offers no dynamic registration (its metadata has "
                          f"no registration_endpoint), so mcpctl cannot register itself with it ({e})", hint=hint)
    return LoginError(f"could not register mcpctl with the authorization server of {spec.name}: {e}",
                      hint=f"if the server does not allow dynamic registration, {hint}")


def _flow_error(spec: ServerSpec, provider: Any, e: Exception) -> str:
    text = str(e)
    if text.startswith("State parameter mismatch"):
        return (f"the sign-in redirect for {spec.name} did not belong to this login (state mismatch); "
                "it may be from an older attempt")
    mismatch = _mismatch(spec, text)
    if mismatch is not None:
        return mismatch
    if provider.context.oauth_metadata is None:
        return (f"server {spec.name!r} asked for a sign-in but publishes no OAuth metadata (neither "
                "/.well-known/oauth-protected-resource nor /.well-known/oauth-authorization-server answered)")
    if text.startswith("Token exchange failed"):
        return f"the authorization server of {spec.name} refused the authorization code ({text.split(':', 1)[0]})"
    return f"sign-in to {spec.name} failed: {text[:300]}"


_CIMD_DOCS: Final = "docs/servers.md, 'Signing in with a Client ID Metadata Document'"
_RESOURCE_MISMATCH: Final = re.compile(r"^Protected resource (\S+) does not match expected (\S+)")
_ISSUER_MISMATCH: Final = re.compile(r"^Authorization server metadata issuer mismatch: (\S+) != (\S+)")


def _mismatch(spec: ServerSpec, text: str) -> str | None:
    """The SDK's refusal of metadata naming someone else, said as that (None: not one)."""
    m = _RESOURCE_MISMATCH.match(text)
    if m is not None:
        return (f"server {spec.name!r} publishes OAuth metadata that names another protected resource: "
                f"{m[1]}, not {m[2]} (RFC 9728): refused, since tokens asked for there would be for another "
                "resource")
    m = _ISSUER_MISMATCH.match(text)
    if m is not None:
        return (f"the authorization server of {spec.name} publishes metadata that names another issuer: {m[1]}, "
                f"not {m[2]} (RFC 8414): refused, since it may not be the server the resource trusts")
    return None


_INITIALIZE: Final = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "mcpctl-login", "version": "1"}},
}
