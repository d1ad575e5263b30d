"""mcpctl.auth.cimd: what `mcpctl login` finds wrong in a Client ID Metadata Document before the
browser (the authorization server would refuse the same), and the loopback redirect rule."""

from __future__ import annotations

from typing import Any

import pytest

from mcpctl.auth.cimd import covers, problems

URL = "https://example.com/mcpctl-client.json"
REDIRECT = "http://127.0.0.1:53117/callback"


def _doc(**changes: Any) -> dict[str, Any]:
    """The document docs/servers.md shows, with `changes`."""
    return {"client_id": URL, "client_name": "mcpctl", "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", **changes}


@pytest.mark.parametrize(("registered", "asked", "ok"), [
    ("http://127.0.0.1/callback", REDIRECT, True),                 # no port: any port (RFC 8252 §7.3)
    ("http://127.0.0.1:9/callback", REDIRECT, True),               # another port: still the loopback rule
    (REDIRECT, REDIRECT, True),
    ("http://[::1]/callback", "http://[::1]:4000/callback", True),
    ("http://127.0.0.1/other", REDIRECT, False),                   # the path must match
    ("http://localhost/callback", REDIRECT, False),                # another host
    ("https://127.0.0.1/callback", REDIRECT, False),               # another scheme
    ("http://app.example/callback", "http://app.example:8080/callback", False),   # not loopback: exact
])
def test_a_loopback_redirect_matches_on_any_port_and_nothing_else_does(registered: str, asked: str, ok: bool) -> None:
    assert covers(registered, asked) is ok


def test_the_documented_document_has_no_problems() -> None:
    assert problems(URL, _doc(), REDIRECT) == []


@pytest.mark.parametrize(("doc", "said"), [
    (["not", "an", "object"], "it is not a JSON object"),
    (None, "it is not a JSON object"),
    (_doc(client_id="https://example.com/other.json"), "its client_id is 'https://example.com/other.json', not its own URL"),
    (_doc(redirect_uris=["https://app.example/cb"]), "do not cover this login's redirect http://127.0.0.1:53117/callback"),
    (_doc(redirect_uris="http://127.0.0.1/callback"), "it has no redirect_uris list"),
    (_doc(token_endpoint_auth_method="client_secret_post"), "token_endpoint_auth_method: none"),
    (_doc(client_secret="s3cret"), "carry no client_secret"),
    ({k: v for k, v in _doc().items() if k != "token_endpoint_auth_method"}, "which means client_secret_basic"),
])
def test_each_problem_is_named(doc: object, said: str) -> None:
    found = problems(URL, doc, REDIRECT)
    assert len(found) == 1 and said in found[0], found
