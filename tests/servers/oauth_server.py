"""A protected MCP server with its own authorization server (official SDK, server-side auth).

One loopback process is both: the SDK's auth routes (`/.well-known/oauth-authorization-server`,
`/authorize`, `/token`, `/register`, `/revoke`) over an in-memory `OAuthAuthorizationServerProvider`,
and an `MCPServer` resource at `/mcp` behind the SDK's bearer middleware, publishing its
protected-resource metadata (RFC 9728) and answering 401 with a `WWW-Authenticate` challenge.
PKCE is checked by the SDK's token handler (the code verifier against the stored challenge).

`/authorize` consents at once (the scripted browser just follows redirects) unless `--deny`,
which redirects back with `error=access_denied`. Access tokens live `--access-ttl` seconds
(checked to the sub-second here, not by the SDK's whole-second check); refresh tokens rotate.

Test hooks (no auth): `POST /test/revoke` revokes every refresh token (the next refresh fails;
`?access=1`: every access token too); `POST /test/ttl {"seconds": S}` sets how long the access
tokens issued from then on live;
`GET /test/stats` counts registrations, code exchanges, refreshes and refused tokens;
`GET /test/issued` lists every token (and client secret) handed out, for leak scans.

`--sse` serves the legacy HTTP+SSE transport (`/sse`, `/messages/`) behind the same sign-in.

`--cimd` makes the authorization server one that knows clients only by a Client ID Metadata
Document (draft-ietf-oauth-client-id-metadata-document): its metadata says
`client_id_metadata_document_supported: true` and has no `registration_endpoint` (no `/register`
either), so dynamic registration cannot work (`--register`: it offers both). A `client_id` that is an https URL is accepted at
`/authorize` and `/token` by fetching that document (a real HTTPS GET, trusting the CA in
`--ca`, a PEM file) and checking it: JSON, its `client_id` equal to the URL, `redirect_uris` that
cover the redirect asked for (a loopback `http://127.0.0.1/...` one with any port, RFC 8252
§7.3), `token_endpoint_auth_method: none` and no `client_secret`. A document that fails is
refused with an OAuth error (`invalid_client`, or `invalid_request` for the redirect) whose
description says why; `GET /test/stats` then also counts the fetches (`cimd_fetches`), lists the
refusals (`cimd_refused`) and the client id of every `/token` grant (`token_clients`).

`--port 0` binds a free loopback port; the bound port is printed on stdout once it listens.
Tools: echo(text) -> "<name>: <text>", whoami -> the client id the token was issued to.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import ssl
import sys
import time
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpctl import heap

heap.at_exit()   # the process ends without the collector's last walk of the SDK's models

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--name", default="remote")
p.add_argument("--access-ttl", type=float, default=3600.0)
p.add_argument("--deny", action="store_true")
p.add_argument("--sse", action="store_true", help="serve the legacy HTTP+SSE transport at /sse instead of /mcp")
p.add_argument("--cimd", action="store_true", help="know clients only by Client ID Metadata Documents (no registration)")
p.add_argument("--register", action="store_true", help="with --cimd: offer dynamic registration as well")
p.add_argument("--ca", help="with --cimd: a PEM file of the CA to trust when fetching a client's metadata document")
opts = p.parse_args()

ISSUED: list[str] = []          # every token handed out, for the tests' leak scan (GET /test/issued)
STATS: dict[str, int] = {"registrations": 0, "code_exchanges": 0, "refreshes": 0, "refused_tokens": 0,
                         "refused_refreshes": 0}
CIMD: dict[str, Any] = {"cimd_fetches": 0, "cimd_refused": [], "token_clients": []}
LOOPBACK_HOSTS = ("127.0.0.1", "[::1]", "::1", "localhost")
MAX_DOCUMENT_BYTES = 5 * 1024      # the draft's advice: an AS should not read more


class DocumentClient(OAuthClientInformationFull):
    """A client known by its metadata document; a loopback redirect matches whatever its port
    (RFC 8252 §7.3: a native client's loopback redirect is on a port chosen at run time)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is not None and any(covers(str(u), str(redirect_uri)) for u in self.redirect_uris or []):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


def covers(registered: str, asked: str) -> bool:
    """Whether redirect URI `registered` allows `asked`: equal, or both loopback http ones that
    differ only in the port."""
    if registered == asked:
        return True
    r, a = AnyUrl(registered), AnyUrl(asked)
    return (r.scheme == a.scheme == "http" and r.host == a.host and (r.host or "") in LOOPBACK_HOSTS
            and (r.path or "/") == (a.path or "/") and r.query == a.query)


class Refused(Exception):
    """A client id document that cannot be used: `error` (an OAuth error code) and why."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error, self.description = error, description


async def fetch_document(client_id: str, redirect_uri: str | None) -> DocumentClient:
    """Fetch the metadata document at `client_id` and check it (module docstring); Refused if not."""
    CIMD["cimd_fetches"] += 1
    verify: Any = ssl.create_default_context(cafile=opts.ca) if opts.ca else True
    try:
        async with httpx2.AsyncClient(verify=verify, timeout=10, follow_redirects=False) as http:
            r = await http.get(client_id, headers={"Accept": "application/json"})
    except httpx2.HTTPError as e:
        raise Refused("invalid_client", f"the client metadata document at {client_id} could not be fetched: "
                      f"{e}") from None
    if r.status_code != 200:
        raise Refused("invalid_client", f"the client metadata document at {client_id} answered HTTP {r.status_code}")
    if len(r.content) > MAX_DOCUMENT_BYTES:
        raise Refused("invalid_client", f"the client metadata document at {client_id} is over {MAX_DOCUMENT_BYTES} bytes")
    try:
        doc = r.json()
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise Refused("invalid_client", f"the client metadata document at {client_id} is not a JSON object")
    if doc.get("client_id") != client_id:
        raise Refused("invalid_client", f"the client metadata document at {client_id} names another client_id "
                      f"({doc.get('client_id')!r}); it must be the document's own URL")
    if "client_secret" in doc or doc.get("token_endpoint_auth_method") != "none":
        raise Refused("invalid_client", f"the client metadata document at {client_id} must say "
                      "token_endpoint_auth_method: none and carry no client_secret")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise Refused("invalid_client", f"the client metadata document at {client_id} has no redirect_uris")
    if redirect_uri is not None and not any(covers(u, redirect_uri) for u in uris):
        raise Refused("invalid_request", f"the client metadata document at {client_id} does not list the "
                      f"redirect URI {redirect_uri} (its redirect_uris: {', '.join(uris)})")
    return DocumentClient(client_id=client_id, redirect_uris=uris, token_endpoint_auth_method="none",
                          grant_types=doc.get("grant_types") or ["authorization_code"],
                          response_types=doc.get("response_types") or ["code"],
                          client_name=doc.get("client_name"), scope="mcp")


class Provider:
    """In-memory authorization server state (clients, codes, tokens)."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, tuple[AccessToken, float]] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        STATS["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if opts.deny:
            return construct_redirect_uri(str(params.redirect_uri), error="access_denied",
                                          error_description="the user said no", state=params.state)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        ISSUED.extend((access, refresh))
        self.access[access] = (AccessToken(token=access, client_id=client_id, scopes=scopes, resource=resource,
                                           expires_at=int(time.time() + opts.access_ttl) + 1),
                               time.time() + opts.access_ttl)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        ttl = opts.access_ttl
        return OAuthToken(access_token=access, expires_in=int(ttl) if ttl >= 1 else 1, refresh_token=refresh,
                          scope=" ".join(scopes))

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(code.code, None)
        STATS["code_exchanges"] += 1
        return self._issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None:
            STATS["refused_refreshes"] += 1
        return found

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            STATS["refused_refreshes"] += 1
            raise TokenError("invalid_grant", "refresh token revoked")
        STATS["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or found[1] < time.time():
            STATS["refused_tokens"] += 1
            return None
        return found[0]

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh.pop(token.token, None)
        self.access.pop(token.token, None)


sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", opts.port))
port = sock.getsockname()[1]
base = f"http://127.0.0.1:{port}"
provider = Provider()
server = MCPServer(opts.name, auth_server_provider=provider, auth=AuthSettings(
    issuer_url=base, resource_server_url=f"{base}/sse" if opts.sse else f"{base}/mcp", validate_token_resource=False,
    client_registration_options=ClientRegistrationOptions(enabled=not opts.cimd or opts.register, valid_scopes=["mcp"],
                                                          default_scopes=["mcp"]),
    revocation_options=RevocationOptions(enabled=True), required_scopes=["mcp"]))


@server.tool()
def echo(text: str) -> str:
    """Echo text back."""
    return f"{opts.name}: {text}"


@server.tool()
def whoami() -> str:
    """The client the caller's token was issued to."""
    token = get_access_token()
    return token.client_id if token else "nobody"


@server.custom_route("/test/revoke", methods=["POST"])
async def revoke_all(request: Request) -> Response:
    n = len(provider.refresh)
    provider.refresh.clear()
    if request.query_params.get("access"):          # ?access=1: the access tokens too (refused at once)
        n += len(provider.access)
        provider.access.clear()
    return JSONResponse({"revoked": n})


@server.custom_route("/test/ttl", methods=["POST"])
async def set_ttl(request: Request) -> Response:
    """How long access tokens issued from now on live (seconds; 0: refused as soon as issued)."""
    opts.access_ttl = float((await request.json())["seconds"])
    return JSONResponse({"ttl": opts.access_ttl})


@server.custom_route("/test/stats", methods=["GET"])
async def stats(request: Request) -> Response:
    return JSONResponse({**STATS, **CIMD})


@server.custom_route("/test/issued", methods=["GET"])
async def issued(request: Request) -> Response:
    return JSONResponse({"tokens": ISSUED, "clients": [c.client_secret for c in provider.clients.values()
                                                       if c.client_secret]})


def _refusal(e: Refused, status: int) -> Response:
    CIMD["cimd_refused"].append(e.description)
    return JSONResponse({"error": e.error, "error_description": e.description}, status_code=status,
                        headers={"Cache-Control": "no-store"})


async def cimd_authorize(request: Request) -> Response:
    """/authorize: a URL client id's document fetched and checked, then the SDK's handler. A refusal
    is answered to the browser, never redirected (RFC 6749 §4.1.2.1: the client is not trusted)."""
    params: Any = request.query_params if request.method == "GET" else await request.form()
    client_id = str(params.get("client_id") or "")
    if client_id.startswith("https://"):
        try:
            provider.clients[client_id] = await fetch_document(client_id, params.get("redirect_uri"))
        except Refused as e:
            return _refusal(e, 400)
    return await AuthorizationHandler(provider).handle(request)


async def cimd_token(request: Request) -> Response:
    """/token: the document fetched and checked again (it may have changed), then the SDK's handler."""
    form = await request.form()
    client_id = str(form.get("client_id") or "")
    CIMD["token_clients"].append([str(form.get("grant_type")), client_id])
    if client_id.startswith("https://"):
        redirect = form.get("redirect_uri")
        try:
            provider.clients[client_id] = await fetch_document(client_id, str(redirect) if redirect else None)
        except Refused as e:
            return _refusal(Refused("invalid_client", e.description), 401)
    return await TokenHandler(provider, ClientAuthenticator(provider)).handle(request)


async def cimd_metadata(request: Request) -> Response:
    """The SDK's metadata, saying it takes metadata documents (and, with registration off, no
    registration_endpoint)."""
    meta = build_metadata(server.settings.auth.issuer_url, None,  # type: ignore[union-attr]
                          ClientRegistrationOptions(enabled=opts.register, valid_scopes=["mcp"]),
                          RevocationOptions(enabled=True))
    meta.client_id_metadata_document_supported = True
    meta.token_endpoint_auth_methods_supported = ["none", "client_secret_post"] if opts.register else ["none"]
    return JSONResponse(meta.model_dump(mode="json", exclude_none=True))


async def main() -> None:
    app: Any = server.sse_app() if opts.sse else server.streamable_http_app()
    if opts.cimd:       # ahead of the SDK's own routes for the same paths
        app.router.routes[:0] = [Route("/.well-known/oauth-authorization-server", cimd_metadata, methods=["GET"]),
                                 Route("/authorize", cimd_authorize, methods=["GET", "POST"]),
                                 Route("/token", cimd_token, methods=["POST"])]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)
    sock.listen(128)
    print(port, flush=True)
    await userver.serve(sockets=[sock])


if __name__ == "__main__":
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
