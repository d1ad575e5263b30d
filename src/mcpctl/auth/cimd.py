"""mcpctl's own look at its Client ID Metadata Document (`spec.auth.clientMetadataUrl`) before a sign-in.

With a Client ID Metadata Document (CIMD, draft-ietf-oauth-client-id-metadata-document) the
client's id is the https URL of a JSON document describing it; the authorization server fetches
that document when the sign-in starts, instead of the client registering itself. When the
document is wrong, the authorization server refuses the sign-in in the browser, and never
redirects back (RFC 6749 §4.1.2.1: it does not trust the client), so `mcpctl login` would only
wait until its timeout. `mcpctl login` therefore reads the document itself just before sending
the user to the browser, and a document that the authorization server would refuse is an error
that says what to fix. What is checked is what an authorization server checks:

- the document is a JSON object whose `client_id` is exactly its own URL;
- `redirect_uris` cover the loopback redirect of this login (`http://127.0.0.1:PORT/callback`):
  listed as is, or without (or with another) port, which RFC 8252 §7.3 lets match any port;
- it names no shared secret: `token_endpoint_auth_method` is `none` (absent would mean
  `client_secret_basic`, RFC 7591) and there is no `client_secret`; mcpctl is a public client.

A document mcpctl cannot read (no network, a certificate it does not trust) is not an error here:
the authorization server reads it from where it is, so the sign-in goes on.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

import httpx2

LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})
MAX_BYTES: Final = 64 * 1024


class Unreadable(Exception):
    """The document could not be fetched or parsed as JSON (said, not fatal: see the module docstring)."""


def covers(registered: str, asked: str) -> bool:
    """Whether the redirect URI `registered` in the document allows `asked`: the same URI, or both
    http loopback ones that differ only in the port (RFC 8252 §7.3)."""
    if registered == asked:
        return True
    r, a = urlsplit(registered), urlsplit(asked)
    try:
        same_port_rule = r.hostname == a.hostname and (r.hostname or "") in LOOPBACK_HOSTS
    except ValueError:
        return False
    return (same_port_rule and r.scheme == a.scheme == "http" and (r.path or "/") == (a.path or "/")
            and r.query == a.query)


def problems(url: str, doc: object, redirect_uri: str) -> list[str]:
    """What an authorization server would refuse in the document `doc` found at `url`, for a
    sign-in redirected to `redirect_uri` (empty: nothing)."""
    if not isinstance(doc, dict):
        return ["it is not a JSON object"]
    found: list[str] = []
    if doc.get("client_id") != url:
        found.append(f"its client_id is {doc.get('client_id')!r}, not its own URL")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        found.append("it has no redirect_uris list")
    elif not any(covers(u, redirect_uri) for u in uris):
        listed = ", ".join(uris) or "none"
        found.append(f"its redirect_uris ({listed}) do not cover this login's redirect {redirect_uri} "
                     "(list http://127.0.0.1/callback: a loopback redirect matches any port)")
    method = doc.get("token_endpoint_auth_method")
    if method != "none" or "client_secret" in doc:
        said = "it has none (which means client_secret_basic, RFC 7591)" if method is None else f"not {method!r}"
        found.append("it must say token_endpoint_auth_method: none and carry no client_secret (mcpctl is a "
                     f"public client); {said}")
    return found


async def fetch(url: str, timeout: float) -> object:
    """The decoded JSON at `url`; Unreadable when it cannot be had."""
    try:
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as http:
            r = await http.get(url, headers={"Accept": "application/json"})
    except httpx2.HTTPError as e:
        raise Unreadable(str(e) or type(e).__name__) from None
    if r.status_code != 200:
        raise Unreadable(f"HTTP {r.status_code}")
    if len(r.content) > MAX_BYTES:
        raise Unreadable(f"over {MAX_BYTES} bytes")
    try:
        return r.json()
    except ValueError:
        return None             # read, and not JSON: `problems` says so
