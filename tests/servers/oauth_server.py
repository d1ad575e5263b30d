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

`--port 0` binds a free loopback port; the bound port is printed on stdout once it listens.
Tools: echo(text) -> "<name>: <text>", whoami -> the client id the token was issued to.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
import time
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcpctl import heap

heap.at_exit()   # the process ends without the collector's last walk of the SDK's models

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--name", default="remote")
p.add_argument("--access-ttl", type=float, default=3600.0)
p.add_argument("--deny", action="store_true")
p.add_argument("--sse", action="store_true", help="serve the legacy HTTP+SSE transport at /sse instead of /mcp")
opts = p.parse_args()

ISSUED: list[str] = []          # every token handed out, for the tests' leak scan (GET /test/issued)
STATS: dict[str, int] = {"registrations": 0, "code_exchanges": 0, "refreshes": 0, "refused_tokens": 0,
                         "refused_refreshes": 0}


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
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]),
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
    return JSONResponse(STATS)


@server.custom_route("/test/issued", methods=["GET"])
async def issued(request: Request) -> Response:
    return JSONResponse({"tokens": ISSUED, "clients": [c.client_secret for c in provider.clients.values()
                                                       if c.client_secret]})


async def main() -> None:
    app: Any = server.sse_app() if opts.sse else server.streamable_http_app()
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
