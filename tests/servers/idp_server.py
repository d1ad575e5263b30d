"""A team's identity provider for the identity tests: a real OAuth 2.1 authorization server (the
official SDK's auth routes: metadata, dynamic registration, `/authorize`, `/token` with PKCE,
`/revoke`) that issues **JWT access tokens** signed RS256 (PyJWT over `cryptography`), with the
person's `sub`, `email` and `groups`, the `aud` the client asked for (RFC 8707 `resource`), and
its keys at `/jwks` (also named by `/.well-known/openid-configuration`).

`/authorize` consents at once as the current person (the scripted browser follows redirects).

Test hooks (no auth): `POST /test/person {"sub", "email", "groups"}` sets who signs in next;
`POST /test/rotate` signs with a new key from then on (the JWKS holds both); `POST /test/jwks
{"fail": true}` makes `/jwks` answer 500; `POST /test/sign {"claims": {...}, "kid"?: ...}` signs any
claims with the current key (for refused tokens); `GET /test/stats` counts JWKS fetches and
code exchanges; `POST /test/introspect {"token", "claims"}` registers an opaque token that
`POST /introspect` (RFC 7662) answers with those claims (active).

`--port 0` binds a free loopback port; the bound port is printed on stdout once it listens.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import time
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--access-ttl", type=float, default=3600.0)
opts = p.parse_args()

STATS: dict[str, int] = {"jwks": 0, "code_exchanges": 0, "refreshes": 0}
STATE: dict[str, Any] = {"person": {"sub": "alice", "email": "alice@example.com", "groups": ["engineers"]},
                         "jwks_fail": False}
KEYS: list[tuple[str, Any]] = []        # (kid, private key), newest last
OPAQUE: dict[str, dict[str, Any]] = {}


def new_key() -> None:
    KEYS.append((f"k{len(KEYS) + 1}", rsa.generate_private_key(public_exponent=65537, key_size=2048)))


new_key()


def sign(claims: dict[str, Any], kid: str | None = None) -> str:
    kid = kid or KEYS[-1][0]
    key = dict(KEYS).get(kid, KEYS[-1][1])
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, tuple[AuthorizationCode, dict[str, Any]]] = {}
        self.refresh: dict[str, tuple[RefreshToken, dict[str, Any]]] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = (AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource),
            dict(STATE["person"]))
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found[0] if found else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, person: dict[str, Any]) -> OAuthToken:
        now = int(time.time())
        person = {**person, **{k: v for k, v in STATE["person"].items() if k == "groups"}} \
            if person.get("sub") == STATE["person"].get("sub") else person   # groups as they are now
        claims = {"iss": ISSUER, "sub": person["sub"], "email": person.get("email"), "groups": person.get("groups", []),
                  "aud": resource or "", "iat": now, "nbf": now, "exp": now + int(opts.access_ttl),
                  "client_id": client_id, "scope": " ".join(scopes)}
        refresh = "rt-" + secrets.token_urlsafe(24)
        self.refresh[refresh] = (RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource),
                                 person)
        return OAuthToken(access_token=sign(claims), expires_in=int(opts.access_ttl), refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> OAuthToken:
        _, person = self.codes.pop(code.code)
        STATS["code_exchanges"] += 1
        return self._issue(client.client_id, code.scopes, code.resource, person)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found[0] if found else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        found = self.refresh.pop(refresh_token.token, None)
        if found is None:
            raise TokenError("invalid_grant", "refresh token unknown")
        STATS["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource, found[1])

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh.pop(token.token, None)


async def jwks(request: Request) -> Response:
    STATS["jwks"] += 1
    if STATE["jwks_fail"]:
        return JSONResponse({"error": "down"}, status_code=500)
    keys = []
    for kid, key in KEYS:
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
    return JSONResponse({"keys": keys}, headers={"cache-control": "max-age=300"})


async def openid(request: Request) -> Response:
    return JSONResponse({"issuer": ISSUER, "jwks_uri": f"{BASE}/jwks"})


async def set_person(request: Request) -> Response:
    STATE["person"] = await request.json()
    return JSONResponse(STATE["person"])


async def rotate(request: Request) -> Response:
    new_key()
    return JSONResponse({"kid": KEYS[-1][0]})


async def jwks_fail(request: Request) -> Response:
    STATE["jwks_fail"] = bool((await request.json()).get("fail"))
    return JSONResponse({"fail": STATE["jwks_fail"]})


async def sign_any(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"token": sign(body["claims"], body.get("kid"))})


async def stats(request: Request) -> Response:
    return JSONResponse(STATS)


async def add_opaque(request: Request) -> Response:
    body = await request.json()
    OPAQUE[body["token"]] = body["claims"]
    return JSONResponse({"ok": True})


async def introspect(request: Request) -> Response:
    form = await request.form()
    claims = OPAQUE.get(str(form.get("token")))
    return JSONResponse({"active": True, **claims} if claims else {"active": False})


sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", opts.port))
port = sock.getsockname()[1]
BASE = f"http://127.0.0.1:{port}"
ISSUER = BASE + "/"      # as the SDK's metadata writes it (a URL with its path '/')
routes = create_auth_routes(Provider(), AnyHttpUrl(BASE),
                            client_registration_options=ClientRegistrationOptions(enabled=True),
                            revocation_options=RevocationOptions(enabled=True))
routes += [Route("/jwks", jwks), Route("/.well-known/openid-configuration", openid),
           Route("/test/person", set_person, methods=["POST"]), Route("/test/rotate", rotate, methods=["POST"]),
           Route("/test/jwks", jwks_fail, methods=["POST"]), Route("/test/sign", sign_any, methods=["POST"]),
           Route("/test/stats", stats), Route("/test/introspect", add_opaque, methods=["POST"]),
           Route("/introspect", introspect, methods=["POST"])]
app = Starlette(routes=routes)
config = uvicorn.Config(app, log_level="warning")
server = uvicorn.Server(config)
sock.listen(128)
print(port, flush=True)
server.run(sockets=[sock])
