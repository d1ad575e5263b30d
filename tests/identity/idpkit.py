"""The identity tests' kit: the test identity provider (tests/servers/idp_server.py), the
`IdentityProvider` resource that trusts it, and an SDK client that signs in by itself (the SDK's
OAuth client flow, with a scripted browser that follows the sign-in URL)."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

from gwkit import REPO, SLACK, Kit, wait_listening

IDP_SERVER = REPO / "tests" / "servers" / "idp_server.py"


@dataclass
class Idp:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/"      # exactly as its metadata says

    def call(self, method: str, path: str, body: Any = None) -> Any:
        import httpx2

        r = httpx2.request(method, self.issuer.rstrip("/") + path, json=body, timeout=10)
        r.raise_for_status()
        return r.json()

    def person(self, sub: str, groups: list[str], email: str | None = None) -> None:
        self.call("POST", "/test/person", {"sub": sub, "groups": groups, "email": email or f"{sub}@example.com"})

    def sign(self, claims: dict[str, Any], kid: str | None = None) -> str:
        return str(self.call("POST", "/test/sign", {"claims": claims, **({"kid": kid} if kid else {})})["token"])

    def stats(self) -> dict[str, int]:
        return dict(self.call("GET", "/test/stats"))


def start_idp(kit: Kit, *args: str) -> Idp:
    proc = subprocess.Popen([sys.executable, str(IDP_SERVER), "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    assert proc.stdout is not None
    deadline = time.monotonic() + 20 * SLACK
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, "the identity provider did not report its port"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 64)
            assert chunk, "the identity provider exited before reporting its port"
            line += chunk
    port = int(line)
    wait_listening(port, proc, "the identity provider")
    return Idp(proc, port)


def trust(kit: Kit, idp: Idp, grants: dict[str, Any], **spec: Any) -> None:
    """An IdentityProvider `acme` trusting `idp`, with `grants` (project -> {groups, everyone})."""
    kit.store.put({"apiVersion": "mcpctl/v1", "kind": "IdentityProvider", "metadata": {"name": "acme"},
                   "spec": {"issuer": idp.issuer, "projects": grants, **spec}})


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


@contextlib.asynccontextmanager
async def signed_in_client(url: str, storage: Memory | None = None) -> AsyncIterator[Any]:
    """An SDK client with no token: the gateway's 401 sends it to sign in (discovery, dynamic
    registration, authorization code with PKCE, the resource indicator), as Claude Code would."""
    import httpx2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    callback = "http://127.0.0.1:1/callback"       # never contacted: the scripted browser stops there
    seen: dict[str, str] = {}

    async def redirect(url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as browser:
            r = await browser.get(url)               # the authorization server consents at once
        location = r.headers["location"]
        assert location.startswith(callback), location
        query = parse_qs(urlparse(location).query)
        seen["code"], seen["state"] = query["code"][0], query.get("state", [""])[0]

    async def back() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=seen["code"], state=seen["state"] or None)

    auth = OAuthClientProvider(url, OAuthClientMetadata(redirect_uris=[callback], client_name="identity-test",
                                                        grant_types=["authorization_code", "refresh_token"],
                                                        response_types=["code"]),
                               storage or Memory(), redirect_handler=redirect, callback_handler=back)
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60)) as h, \
            Client(streamable_http_client(url, http_client=h), mode="legacy") as c:
        yield c
