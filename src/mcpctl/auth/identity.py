"""People signed in with a team's identity provider: access tokens checked, groups to profiles.

The HTTP gateway is an OAuth 2.1 protected resource (RFC 9728) for the `IdentityProvider`s that
grant its project something (`resources.idp`). A bearer value that is not one of mcpctl's own
tokens is checked here:

- **a JWT** (three dot-separated parts): its `iss` picks the provider; the signature is checked
  with PyJWT against the provider's published keys (JWKS: fetched from `jwksUri` or the issuer's
  metadata, kept for the `Cache-Control` max-age (60 s to a day; 10 minutes without one), and
  fetched again, at most every KEY_REFETCH_S, when a token names a key id the set lacks: a
  rotation); only the provider's `algorithms` (asymmetric) are accepted, and only with a key of
  that algorithm's type; `exp`, `nbf` (LEEWAY_S of clock skew), `iss`, and `aud` holding the
  gateway's resource URI (RFC 8707) or the provider's `audience`, and `sub` are required;
- **anything else**: the token introspection endpoint (RFC 7662) of a provider that has one, as
  that provider's client; an `active` answer is read like a JWT's claims.

A token that passes is cached by its SHA-256 until it expires (at most CACHE_S), so a request of
a signed-in person costs a dict lookup; PyJWT checks it once. The person's profile is the first
group of theirs the provider lists for the project (`groupsClaim`, a dotted path), else the
provider's `everyone`; none: refused (403). Their identity everywhere (the log, the shares, the
limits) is `Person.identity`: the `sub`, with the email or name where the token has them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.resources.idp import IdentityProviderSpec

log = logging.getLogger("mcpctl.gateway")

LEEWAY_S: Final = 30.0
KEY_REFETCH_S: Final = 10.0       # an unknown key id fetches the keys again at most this often
KEYS_DEFAULT_MAX_AGE_S: Final = 600.0
KEYS_MAX_AGE_RANGE: Final = (60.0, 86400.0)
CACHE_S: Final = 300.0            # a checked token is trusted from the cache at most this long
CACHE_SIZE: Final = 10_000
FETCH_TIMEOUT_S: Final = 10.0
_KTY: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


@dataclass(frozen=True)
class Person:
    """Who a checked token says is calling, and what they get."""

    sub: str
    provider: str
    profile: str
    group: str | None = None       # the group that gave the profile (None: `everyone`)
    email: str | None = None
    name: str | None = None
    expires: float = 0.0

    @property
    def identity(self) -> str:
        """The person as the log, the shares and the limits name them."""
        shown = self.email or self.name
        return f"{self.sub} ({shown})" if shown and shown != self.sub else self.sub


class Refused(Exception):
    """A token that does not get in: `status` 401 (not a valid token: sign in again) or 403
    (valid, but nothing is granted to this person here); `reason` is said to the client."""

    def __init__(self, reason: str, status: int = 401) -> None:
        super().__init__(reason)
        self.reason, self.status = reason, status


Fetch = Callable[[str, str, Mapping[str, str], bytes | None], Any]   # (method, url, headers, body) -> response


def _b64json(part: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def peek(token: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A JWT's header and claims, unchecked (to choose the provider and the key); None: not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, claims = _b64json(parts[0]), _b64json(parts[1])
    except (ValueError, UnicodeDecodeError):
        return None
    return (header, claims) if isinstance(header, dict) and isinstance(claims, dict) else None


def claim(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def groups_of(claims: Mapping[str, Any], path: str) -> frozenset[str]:
    """The groups a claim holds: a list, or a space-separated string (as `scope` is)."""
    value = claim(claims, path)
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(str(v) for v in value)
    return frozenset()


class Keys:
    """One issuer's signing keys (its JWKS), fetched on demand and kept (see the module's text)."""

    def __init__(self, spec: IdentityProviderSpec, fetch: Fetch, clock: Callable[[], float] = time.monotonic) -> None:
        self.spec, self.fetch, self.clock = spec, fetch, clock
        self.keys: dict[str, tuple[Any, str | None]] = {}    # kid ("" if none) -> (PyJWK, the alg it declares)
        self.fetched = self.attempted = -1e18
        self.max_age = KEYS_DEFAULT_MAX_AGE_S
        self.error: str | None = None
        self._lock = asyncio.Lock()

    def fresh(self) -> bool:
        return self.clock() - self.fetched < self.max_age

    def get(self, kid: str | None) -> tuple[Any, str | None] | None:
        key = self.keys.get(kid or "")
        if key is None and kid is None and len(self.keys) == 1:
            key = next(iter(self.keys.values()))
        return key

    async def key(self, kid: str | None) -> tuple[Any, str | None]:
        """The key for `kid`, fetching the set when it is stale or lacks it (an attempt at most
        every KEY_REFETCH_S; while the issuer cannot be reached, the keys it published last are
        used); raises Refused when none can be had."""
        key = self.get(kid) if self.fresh() else None
        if key is not None:
            return key
        async with self._lock:
            key = self.get(kid) if self.fresh() else None
            if key is None and self.clock() - self.attempted >= KEY_REFETCH_S:
                await self._load()
            key = self.get(kid)
        if key is None:
            if self.error is not None and not self.keys:
                raise Refused(f"the keys of {self.spec.issuer} could not be loaded ({self.error})")
            raise Refused(f"the token's key id {kid!r} is not among {self.spec.issuer}'s published keys")
        return key

    async def _load(self) -> None:
        import jwt

        self.attempted = self.clock()
        try:
            url = self.spec.jwks_uri or await self._discover()
            response = await self.fetch("GET", url, {"accept": "application/json"}, None)
            if response.status_code != 200:
                raise ValueError(f"GET {url}: HTTP {response.status_code}")
            keys: dict[str, tuple[Any, str | None]] = {}
            for jwk in response.json().get("keys") or []:
                if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                    continue
                try:
                    declared = jwk.get("alg")
                    keys[str(jwk.get("kid") or "")] = (jwt.PyJWK(jwk), declared if isinstance(declared, str) else None)
                except (jwt.exceptions.PyJWKError, jwt.exceptions.InvalidKeyError):
                    continue        # a key type or curve this build cannot use: not a reason to fail
            self.keys, self.error, self.fetched = keys, None, self.clock()
            self.max_age = _max_age(response.headers.get("cache-control", ""))
        except Exception as e:      # the network, JSON, HTTP status: say it, keep the keys held
            self.error = str(e) or type(e).__name__
            log.warning("identity provider %s: cannot load its keys: %s", self.spec.name, self.error)

    async def _discover(self) -> str:
        """The issuer's `jwks_uri` from its metadata (RFC 8414, then OpenID Connect discovery)."""
        base = self.spec.issuer.rstrip("/")
        from urllib.parse import urlparse

        u = urlparse(base)
        tried = []
        for url in (f"{u.scheme}://{u.netloc}/.well-known/oauth-authorization-server{u.path}",
                    f"{base}/.well-known/openid-configuration"):
            tried.append(url)
            response = await self.fetch("GET", url, {"accept": "application/json"}, None)
            if response.status_code == 200:
                uri = response.json().get("jwks_uri")
                if isinstance(uri, str) and uri:
                    return uri
        raise ValueError(f"no jwks_uri in the issuer's metadata ({', '.join(tried)}); set spec.jwksUri")


def _max_age(cache_control: str) -> float:
    for part in cache_control.split(","):
        name, _, value = part.strip().partition("=")
        if name.lower() == "max-age" and value.isdigit():
            lo, hi = KEYS_MAX_AGE_RANGE
            return min(hi, max(lo, float(value)))
    return KEYS_DEFAULT_MAX_AGE_S


class Identities:
    """The identity providers that grant `project` something, checking tokens for its gateway."""

    def __init__(self, project: str, providers: Sequence[IdentityProviderSpec], resource: str,
                 fetch: Fetch | None = None, clock: Callable[[], float] = time.time) -> None:
        self.project, self.resource, self.clock = project, resource, clock
        self.providers = [p for p in providers if project in p.projects]
        self.fetch = fetch or _http_fetch
        self.keys = {p.issuer: Keys(p, self.fetch) for p in self.providers}
        self.by_issuer = {p.issuer: p for p in self.providers}
        self._cache: OrderedDict[str, Person] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self.providers)

    @property
    def issuers(self) -> list[str]:
        return list(self.by_issuer)

    def cached(self, token: str) -> Person | None:
        """A token checked before and not yet expired (no I/O, no signature check)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        person = self._cache.get(key)
        if person is None:
            return None
        if person.expires <= self.clock():
            self._cache.pop(key, None)
            return None
        return person

    async def authenticate(self, token: str) -> Person:
        """The person a token is, or Refused."""
        person = self.cached(token)
        if person is not None:
            return person
        peeked = peek(token)
        if peeked is not None:
            person = await self._jwt(token, *peeked)
        else:
            person = await self._introspect(token)
        self._remember(token, person)
        return person

    def _remember(self, token: str, person: Person) -> None:
        self._cache[hashlib.sha256(token.encode()).hexdigest()] = person
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _jwt(self, token: str, header: dict[str, Any], unchecked: dict[str, Any]) -> Person:
        import jwt

        provider = self.by_issuer.get(str(unchecked.get("iss")))
        if provider is None:
            raise Refused(f"tokens of issuer {unchecked.get('iss')!r} are not accepted here "
                          f"(accepted: {', '.join(self.issuers)})")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in provider.algorithms:
            raise Refused(f"signing algorithm {alg!r} is not accepted (accepted: {', '.join(provider.algorithms)})")
        kid = header.get("kid")
        key, declared = await self.keys[provider.issuer].key(str(kid) if kid is not None else None)
        if _KTY.get(alg[:2]) != key.key_type or declared not in (None, alg):
            raise Refused(f"the token's algorithm {alg} does not match its key ({key.key_type}"
                          f"{', ' + declared if declared else ''})")
        try:
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=list(provider.audience) or [self.resource],
                                issuer=provider.issuer, leeway=LEEWAY_S,
                                options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.exceptions.InvalidTokenError as e:
            raise Refused(_why(e)) from None
        return self._person(provider, claims)

    async def _introspect(self, token: str) -> Person:
        providers = [p for p in self.providers if p.introspection is not None]
        if not providers:
            raise Refused("not a valid token (not a JWT, and no identity provider here introspects tokens)")
        last = "not active"
        for provider in providers:
            try:
                claims = await self._ask_introspection(provider, token)
            except Refused as e:
                last = e.reason
                continue
            if claims.get("active") is True:
                return self._checked_introspection(provider, claims)
        raise Refused(f"not a valid token ({last})")

    async def _ask_introspection(self, provider: IdentityProviderSpec, token: str) -> dict[str, Any]:
        from urllib.parse import urlencode

        from mcpctl.resources.secrets import resolve

        intro = provider.introspection
        assert intro is not None
        headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
        if intro.client_id:
            secret = resolve(intro.client_secret, where=f"identityprovider/{provider.name} introspection.clientSecret") \
                if intro.client_secret else ""
            basic = base64.b64encode(f"{intro.client_id}:{secret}".encode()).decode()
            headers["authorization"] = f"Basic {basic}"
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        try:
            response = await self.fetch("POST", intro.endpoint, headers, body)
            answer = response.json() if response.status_code == 200 else None
        except Exception as e:
            log.warning("identity provider %s: introspection failed: %s", provider.name, e)
            raise Refused(f"{provider.issuer}'s introspection could not be reached") from None
        if not isinstance(answer, dict):
            raise Refused(f"{provider.issuer}'s introspection answered HTTP {response.status_code}")
        return answer

    def _checked_introspection(self, provider: IdentityProviderSpec, claims: dict[str, Any]) -> Person:
        now = self.clock()
        exp = claims.get("exp")
        if isinstance(exp, int | float) and exp + LEEWAY_S <= now:
            raise Refused("the token has expired")
        iss = claims.get("iss")
        if iss is not None and iss != provider.issuer:
            raise Refused(f"the token was issued by {iss!r}, not {provider.issuer!r}")
        aud = claims.get("aud")
        wanted = set(provider.audience) or {self.resource}
        if aud is not None and not wanted & set([aud] if isinstance(aud, str) else aud):
            raise Refused("the token is for another resource (its audience is not this gateway)")
        if not claims.get("sub"):
            raise Refused("the token names nobody (no sub)")
        return self._person(provider, claims)

    def _person(self, provider: IdentityProviderSpec, claims: Mapping[str, Any]) -> Person:
        sub = str(claims["sub"])
        groups = groups_of(claims, provider.groups_claim)
        profile, group = provider.projects[self.project].profile_for(groups)
        email = claims.get("email") if isinstance(claims.get("email"), str) else None
        name = claims.get("name") if isinstance(claims.get("name"), str) else None
        shown = email or name or sub
        if profile is None:
            raise Refused(f"{shown} is signed in, but none of their groups may use project {self.project!r} "
                          f"(identityprovider/{provider.name})", status=403)
        exp = claims.get("exp")
        expires = min(float(exp) if isinstance(exp, int | float) else self.clock() + CACHE_S,
                      self.clock() + CACHE_S)
        return Person(sub, provider.name, profile, group, email, name, expires)

    @property
    def metadata_url(self) -> str:
        """Where this gateway's protected-resource metadata is (RFC 9728: the well-known path
        inserted between the resource's host and its path)."""
        from urllib.parse import urlparse

        u = urlparse(self.resource)
        return f"{u.scheme}://{u.netloc}/.well-known/oauth-protected-resource{u.path.rstrip('/')}"

    def metadata(self, scopes: Iterable[str] = ()) -> dict[str, Any]:
        """This gateway's protected-resource metadata (RFC 9728)."""
        doc: dict[str, Any] = {"resource": self.resource, "authorization_servers": self.issuers,
                               "bearer_methods_supported": ["header"],
                               "resource_name": f"mcpctl gateway of project {self.project}"}
        if scopes:
            doc["scopes_supported"] = list(scopes)
        return doc


def _why(e: Exception) -> str:
    import jwt

    if isinstance(e, jwt.exceptions.ExpiredSignatureError):
        return "the token has expired"
    if isinstance(e, jwt.exceptions.ImmatureSignatureError):
        return "the token is not valid yet (nbf)"
    if isinstance(e, jwt.exceptions.InvalidAudienceError):
        return "the token is for another resource (its audience is not this gateway)"
    if isinstance(e, jwt.exceptions.InvalidIssuerError):
        return "the token's issuer is not the identity provider's"
    if isinstance(e, jwt.exceptions.InvalidSignatureError):
        return "the token's signature does not verify"
    if isinstance(e, jwt.exceptions.MissingRequiredClaimError):
        return f"the token lacks the {e.claim!r} claim"
    return f"not a valid token ({e})"


async def _http_fetch(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Any:
    import httpx2

    async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as client:
        return await client.request(method, url, headers=dict(headers), content=body)


def load(project: str, resources: Iterable[Mapping[str, Any]], resource: str) -> Identities:
    """The providers of the store's `IdentityProvider` resources that grant `project` something."""
    specs = []
    for res in resources:
        try:
            specs.append(IdentityProviderSpec.from_resource(res))
        except (KeyError, TypeError, ValueError) as e:
            log.warning("identityprovider/%s is not readable (%s): left out",
                        (res.get("metadata") or {}).get("name"), e)
    return Identities(project, specs, resource)
