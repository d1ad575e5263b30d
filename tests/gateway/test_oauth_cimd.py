"""`mcpctl login` with a Client ID Metadata Document (CIMD) end to end (issue 39).

The authorization server is tests/servers/oauth_server.py: with `--cimd` it knows clients only by
their metadata documents (it advertises `client_id_metadata_document_supported` and offers no
registration), which it fetches over real HTTPS from a loopback server here whose certificate
comes from a test CA (trustme); without it, it offers only dynamic registration. The real CLI
signs in (the scripted browser of oauthkit follows the redirects) and the gateway serves through
the sign-in and renews it.
"""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import trustme
from gwkit import SLACK, Kit, LoopbackHTTP, text_of, wait_tools
from oauthkit import OAuthServer, login, mcpctl, oauth_upstream

pytestmark = pytest.mark.anyio

DOC_PATH = "/mcpctl/client.json"


class DocumentServer(LoopbackHTTP):
    """An HTTPS server on 127.0.0.1 (a free port) serving `documents` (path -> JSON value) with a
    certificate from a test CA, whose PEM is at `ca_file`; `fetches` counts the GETs per path."""

    def __init__(self, tmp: Path) -> None:
        self.ca = trustme.CA()
        self.ca_file = tmp / "cimd-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.documents: dict[str, Any] = {}
        self.fetches: dict[str, int] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches[self.path] = owner.fetches.get(self.path, 0) + 1
                if self.path not in owner.documents:
                    self.send_error(404)
                    return
                body = json.dumps(owner.documents[self.path]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert("127.0.0.1").configure_cert(ctx)
        self._serve(Handler, tls=ctx)

    def address(self, path: str = DOC_PATH) -> str:
        return f"{self.url}{path}"

    def document(self, path: str = DOC_PATH, **changes: Any) -> dict[str, Any]:
        """mcpctl's document as docs/servers.md shows it, published at `path` (`changes` applied)."""
        doc = {"client_id": self.address(path), "client_name": "mcpctl", "redirect_uris": ["http://127.0.0.1/callback"],
               "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
               "token_endpoint_auth_method": "none", **changes}
        self.documents[path] = doc
        return doc


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DocumentServer]:
    """The document server; `mcpctl login` (which reads the document to check it) trusts its CA."""
    server = DocumentServer(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(server.ca_file))
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def cimd_upstream(kit: Kit, docs: DocumentServer, name: str, *args: str,
                  auth: dict[str, Any] | None = None) -> Iterator[OAuthServer]:
    """The CIMD-only authorization server (and its protected MCP server) registered as `name`."""
    with oauth_upstream(kit, name, "--cimd", "--ca", str(docs.ca_file), *args, auth=auth) as srv:
        yield srv


def _with_url(url: str) -> dict[str, Any]:
    return {"type": "oauth", "clientMetadataUrl": url}


async def test_login_with_a_metadata_document_signs_in_without_registering_and_renews_with_it(
        kit: Kit, docs: DocumentServer) -> None:
    docs.document()
    with cimd_upstream(kit, docs, "remote", "--access-ttl", "2", auth=_with_url(docs.address())) as srv:
        kit.project("p", ["remote"])
        meta = srv.get("/.well-known/oauth-authorization-server")
        assert meta["client_id_metadata_document_supported"] is True and "registration_endpoint" not in meta
        done = login(kit, "remote")
        assert done.returncode == 0, done.stderr
        assert f"Signing in as the client of {docs.address()}" in done.stderr and "signed in" in done.stderr
        stats = srv.get("/test/stats")
        assert stats["registrations"] == 0 and stats["code_exchanges"] == 1 and stats["cimd_refused"] == []
        assert stats["cimd_fetches"] >= 2                       # at /authorize and at /token, by the server
        assert stats["token_clients"] == [["authorization_code", docs.address()]]
        stored = json.loads((kit.home / "state" / "auth" / "remote.json").read_text())
        assert json.dumps(stored).count(docs.address()) >= 1 and "client_secret\": \"" not in json.dumps(stored)

        async with kit.client("p") as c:
            await wait_tools(c, {"remote__whoami"}, timeout=30 * SLACK)
            r = await c.call_tool("remote__whoami", {})
            assert not r.is_error and text_of(r) == docs.address(), text_of(r)
            await anyio.sleep(2.5)                              # the access token has expired: renewed
            r = await c.call_tool("remote__echo", {"text": "renewed"})
            assert not r.is_error and text_of(r) == "remote: renewed", text_of(r)
        stats = srv.get("/test/stats")
        refreshes = [c for grant, c in stats["token_clients"] if grant == "refresh_token"]
        assert stats["refreshes"] >= 1 and refreshes and set(refreshes) == {docs.address()}, stats
        assert stats["registrations"] == 0
        described = mcpctl(kit, "describe", "server", "remote")
        assert described.returncode == 0 and f"client metadata {docs.address()}" in described.stdout


def test_without_a_document_the_cimd_only_server_says_what_to_set(kit: Kit, docs: DocumentServer) -> None:
    with cimd_upstream(kit, docs, "remote") as srv:
        r = login(kit, "remote", browse=False, timeout=20)
        assert r.returncode == 5, r.stderr
        assert "offers no dynamic registration (its metadata has no registration_endpoint)" in r.stderr, r.stderr
        assert "spec.auth.clientMetadataUrl" in r.stderr and "Client ID Metadata Document" in r.stderr, r.stderr
        assert srv.get("/test/stats")["code_exchanges"] == 0


@pytest.mark.parametrize(("changes", "said", "refused"), [
    ({"client_id": "https://elsewhere.example/client.json"},
     "its client_id is 'https://elsewhere.example/client.json', not its own URL", "names another client_id"),
    ({"redirect_uris": ["http://127.0.0.1/elsewhere", "https://app.example/cb"]},
     "do not cover this login's redirect http://127.0.0.1:", "does not list the redirect URI http://127.0.0.1:"),
])
def test_a_document_the_server_would_refuse_is_refused_saying_why(
        kit: Kit, docs: DocumentServer, changes: dict[str, Any], said: str, refused: str) -> None:
    """mcpctl reads its document before the browser: the server would refuse it there (and never
    redirect back), so `mcpctl login` says what is wrong at once. The server itself refuses the
    same document with an OAuth error, asked directly as a browser would."""
    docs.document(**changes)
    with cimd_upstream(kit, docs, "remote", auth=_with_url(docs.address())) as srv:
        r = login(kit, "remote", browse=False, timeout=20)
        assert r.returncode == 5, r.stderr
        assert "would be refused by the authorization server" in r.stderr and said in r.stderr, r.stderr
        assert "spec.auth.clientMetadataUrl" in r.stderr and "fix the document" in r.stderr, r.stderr
        assert "Sign in to remote in your browser" not in r.stderr
        page = httpx2.get(f"{srv.base}/authorize", params={
            "client_id": docs.address(), "redirect_uri": "http://127.0.0.1:40123/callback", "response_type": "code",
            "code_challenge": "x" * 43, "code_challenge_method": "S256", "state": "s"}, timeout=10 * SLACK)
        assert page.status_code == 400 and "location" not in page.headers
        assert refused in page.json()["error_description"], page.text
        assert page.json()["error"] in ("invalid_client", "invalid_request")
        assert srv.get("/test/stats")["code_exchanges"] == 0


def test_the_server_checks_the_document_itself(kit: Kit, docs: DocumentServer) -> None:
    """The CIMD server's own checks, asked as a browser and a client would (no mcpctl in between):
    a good document with a loopback redirect on any port is taken; a secret, a missing document, and
    a token request for a document that turned bad are refused with OAuth errors."""
    good, secret = docs.document(), docs.document("/secret.json", token_endpoint_auth_method="client_secret_post")
    with cimd_upstream(kit, docs, "remote") as srv:
        def authorize(client_id: str) -> httpx2.Response:
            return httpx2.get(f"{srv.base}/authorize", params={
                "client_id": client_id, "redirect_uri": "http://127.0.0.1:51234/callback", "response_type": "code",
                "code_challenge": "x" * 43, "code_challenge_method": "S256", "state": "s"}, timeout=10 * SLACK)

        ok = authorize(good["client_id"])
        assert ok.status_code == 302 and ok.headers["location"].startswith("http://127.0.0.1:51234/callback?code=")
        bad = authorize(secret["client_id"])
        assert bad.status_code == 400 and "token_endpoint_auth_method: none" in bad.json()["error_description"]
        missing = authorize(docs.address("/nowhere.json"))
        assert missing.status_code == 400 and "answered HTTP 404" in missing.json()["error_description"]
        docs.document(client_id="https://changed.example/c.json")
        token = httpx2.post(f"{srv.base}/token", data={"grant_type": "refresh_token", "refresh_token": "rt-x",
                                                       "client_id": good["client_id"]}, timeout=10 * SLACK)
        assert token.status_code == 401 and token.json()["error"] == "invalid_client"
        assert srv.get("/test/stats")["registrations"] == 0


def test_a_server_that_takes_both_is_signed_in_to_with_the_document_when_one_is_set(
        kit: Kit, docs: DocumentServer) -> None:
    """Where the server also offers registration, a document set is what signs in (nothing is
    registered); without one, mcpctl registers itself as before."""
    docs.document()
    with cimd_upstream(kit, docs, "both", "--register", auth=_with_url(docs.address())) as srv:
        assert "registration_endpoint" in srv.get("/.well-known/oauth-authorization-server")
        done = login(kit, "both")
        assert done.returncode == 0, done.stderr
        assert f"Signing in as the client of {docs.address()}" in done.stderr
        stats = srv.get("/test/stats")
        assert stats["registrations"] == 0 and stats["token_clients"] == [["authorization_code", docs.address()]]
    with cimd_upstream(kit, docs, "both2", "--register") as srv:
        done = login(kit, "both2")
        assert done.returncode == 0, done.stderr
        stats = srv.get("/test/stats")
        assert stats["registrations"] == 1 and docs.address() not in [c for _, c in stats["token_clients"]]


def test_a_registration_only_server_registers_whether_or_not_a_document_is_set(
        kit: Kit, docs: DocumentServer) -> None:
    """The SDK uses the document only where the server says it takes one: elsewhere mcpctl
    registers itself as before, and says so when a document was set."""
    docs.document()
    with oauth_upstream(kit, "dcr", auth=_with_url(docs.address())) as srv:
        done = login(kit, "dcr")
        assert done.returncode == 0, done.stderr
        assert "does not take Client ID Metadata Documents" in done.stderr and "registered itself" in done.stderr
        stats = srv.get("/test/stats")
        assert stats["registrations"] == 1 and stats["code_exchanges"] == 1
    assert docs.fetches.get(DOC_PATH, 0) == 0                  # nobody needed it
    with oauth_upstream(kit, "plain") as srv:
        done = login(kit, "plain")
        assert done.returncode == 0, done.stderr
        assert "Client ID Metadata" not in done.stderr
        assert srv.get("/test/stats")["registrations"] == 1


def test_a_document_mcpctl_cannot_read_is_left_to_the_server(kit: Kit, docs: DocumentServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """mcpctl does not trust the document server's CA (the authorization server does): it says it
    could not check the document, and the sign-in goes on and succeeds."""
    monkeypatch.delenv("SSL_CERT_FILE")
    docs.document()
    with cimd_upstream(kit, docs, "remote", auth=_with_url(docs.address())) as srv:
        done = login(kit, "remote")
        assert done.returncode == 0, done.stderr
        assert f"could not read the client metadata document {docs.address()} to check it" in done.stderr, done.stderr
        assert srv.get("/test/stats")["token_clients"] == [["authorization_code", docs.address()]]
