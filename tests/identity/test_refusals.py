"""Access tokens the gateway refuses, each for its reason (issue 35), checked by `auth.identity`
against the test identity provider's real keys over HTTP; and one through the real HTTP front:
a refused token gets a 401 naming the reason and where to sign in, and a static token still works
while the provider's keys cannot be loaded."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import pytest
from gwkit import Kit
from idpkit import Idp, trust
from test_serve_http import http_client, http_gateway_process

from mcpctl.auth.identity import Identities, Refused
from mcpctl.resources.idp import IdentityProviderSpec

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:9/mcp"
GRANTS = {"p": {"groups": {"engineers": "all", "support": "read-only"}, "everyone": None}}


def _identities(idp: Idp, **spec: Any) -> Identities:
    res = {"metadata": {"name": "acme"}, "spec": {"issuer": idp.issuer, "projects": GRANTS, **spec}}
    return Identities("p", [IdentityProviderSpec.from_resource(res)], RESOURCE)


def _claims(idp: Idp, **over: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": idp.issuer, "sub": "alice", "email": "alice@example.com", "groups": ["engineers"],
            "aud": RESOURCE, "iat": now, "nbf": now, "exp": now + 600, **over}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(claims: dict[str, Any], header: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}."


async def _refused(ids: Identities, token: str, says: str, status: int = 401) -> None:
    with pytest.raises(Refused) as e:
        await ids.authenticate(token)
    assert says in e.value.reason and e.value.status == status, (e.value.reason, e.value.status)


async def test_a_good_token_is_the_person_with_their_groups_profile(idp: Idp) -> None:
    ids = _identities(idp)
    person = await ids.authenticate(idp.sign(_claims(idp)))
    assert (person.identity, person.profile, person.group) == ("alice (alice@example.com)", "all", "engineers")
    support = await ids.authenticate(idp.sign(_claims(idp, sub="bob", email=None, groups=["support", "x"])))
    assert (support.identity, support.profile) == ("bob", "read-only")
    await _refused(ids, idp.sign(_claims(idp, groups=["marketing"])), "none of their groups may use", 403)


async def test_expired_and_not_yet_valid(idp: Idp) -> None:
    ids, now = _identities(idp), int(time.time())
    await _refused(ids, idp.sign(_claims(idp, exp=now - 120)), "has expired")
    await _refused(ids, idp.sign(_claims(idp, nbf=now + 600)), "not valid yet")


async def test_wrong_issuer_and_wrong_audience(idp: Idp) -> None:
    ids = _identities(idp)
    await _refused(ids, idp.sign(_claims(idp, iss="https://evil.example/")), "are not accepted here")
    await _refused(ids, idp.sign(_claims(idp, aud="http://127.0.0.1:9/other")), "for another resource")
    await _refused(ids, idp.sign({k: v for k, v in _claims(idp).items() if k != "aud"}), "lacks the 'aud' claim")


async def test_unsigned_and_hmac_signed_with_the_public_key(idp: Idp) -> None:
    ids = _identities(idp)
    await _refused(ids, _unsigned(_claims(idp), {"alg": "none", "typ": "JWT"}), "algorithm 'none' is not accepted")
    # the classic confusion: HS256 keyed with the issuer's public key (as the JWKS publishes it)
    jwk = idp.call("GET", "/jwks")["keys"][0]
    public = json.dumps(jwk, sort_keys=True).encode()
    head = _b64(json.dumps({"alg": "HS256", "kid": jwk["kid"]}).encode()) + "." + _b64(json.dumps(_claims(idp)).encode())
    forged = head + "." + _b64(hmac.new(public, head.encode(), hashlib.sha256).digest())
    await _refused(ids, forged, "algorithm 'HS256' is not accepted")
    # a token claiming RS256 but signed with nothing valid
    await _refused(ids, head.replace(head.split(".")[0], _b64(b'{"alg":"RS256","kid":"k1"}')) + "." + _b64(b"x" * 256),
                   "signature does not verify")


async def test_a_key_id_not_in_the_jwks_and_a_rotation(idp: Idp) -> None:
    ids = _identities(idp)
    assert (await ids.authenticate(idp.sign(_claims(idp)))).sub == "alice"
    await _refused(ids, _unsigned(_claims(idp), {"alg": "RS256", "kid": "nobody"}) + "c2ln", "key id 'nobody'")
    fetched = idp.stats()["jwks"]
    await _refused(ids, _unsigned(_claims(idp), {"alg": "RS256", "kid": "nobody"}) + "c2ln", "key id 'nobody'")
    assert idp.stats()["jwks"] == fetched, "an unknown key id fetched the keys again at once"
    kid = idp.call("POST", "/test/rotate")["kid"]
    ids.keys[idp.issuer].attempted -= 60      # (as KEY_REFETCH_S later)
    assert (await ids.authenticate(idp.sign(_claims(idp, sub="rotated"), kid=kid))).sub == "rotated"


async def test_keys_that_fail_to_load_are_a_clear_refusal_and_the_last_ones_are_kept(idp: Idp) -> None:
    idp.call("POST", "/test/jwks", {"fail": True})
    ids = _identities(idp, jwksUri=idp.issuer.rstrip("/") + "/jwks")
    await _refused(ids, idp.sign(_claims(idp)), "could not be loaded (GET http://127.0.0.1:")
    idp.call("POST", "/test/jwks", {"fail": False})
    keys = ids.keys[idp.issuer]
    keys.attempted -= 60
    assert (await ids.authenticate(idp.sign(_claims(idp)))).sub == "alice"
    idp.call("POST", "/test/jwks", {"fail": True})       # the issuer away once its keys went stale:
    keys.fetched -= 3600                                  # the keys it published last still verify
    keys.attempted -= 60
    assert (await ids.authenticate(idp.sign(_claims(idp, sub="later")))).sub == "later"


async def test_a_checked_token_is_cached_until_it_expires(idp: Idp) -> None:
    ids = _identities(idp)
    token = idp.sign(_claims(idp, exp=int(time.time()) + 600))
    first = await ids.authenticate(token)
    assert ids.cached(token) == first
    ids.clock = lambda: time.time() + 601     # (the clock past its exp)
    assert ids.cached(token) is None


async def test_opaque_tokens_by_introspection(idp: Idp) -> None:
    ids = _identities(idp, introspection={"endpoint": idp.issuer.rstrip("/") + "/introspect"})
    idp.call("POST", "/test/introspect", {"token": "opaque-1", "claims": {
        "sub": "olga", "groups": ["support"], "exp": int(time.time()) + 60, "aud": RESOURCE}})
    person = await ids.authenticate("opaque-1")
    assert (person.sub, person.profile) == ("olga", "read-only")
    await _refused(ids, "opaque-2", "not a valid token (not active)")


async def test_through_the_front_a_refused_token_is_told_why_and_static_tokens_still_work(kit: Kit, idp: Idp) -> None:
    import httpx2

    kit.server("good")
    kit.project("p", ["good"], profiles={"all": {}})
    trust(kit, idp, GRANTS)
    with http_gateway_process(kit, "p") as gw:
        def ping(token: str) -> Any:
            return httpx2.post(gw.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={
                "authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"})

        idp.call("POST", "/test/jwks", {"fail": True})      # the provider's keys cannot be had
        r = ping(idp.sign(_claims(idp, aud=gw.url)))
        assert r.status_code == 401 and "could not be loaded" in r.json()["error_description"], r.text
        async with http_client(gw.url, gw.token) as c:
            assert "good__echo" in {t.name for t in (await c.list_tools()).tools}
        challenge = r.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge, challenge
        fetched = idp.stats()["jwks"]
        assert ping(idp.sign(_claims(idp, aud=gw.url))).status_code == 401
        assert idp.stats()["jwks"] == fetched, "a failed fetch of the keys was tried again at once"
    assert "identity provider acme: cannot load its keys" in gw.stderr.read_text()
