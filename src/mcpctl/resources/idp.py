"""The `IdentityProvider` kind: a team's OAuth authorization server, and what its people get.

A project's HTTP gateway accepts, besides its own token and its `Token`s, access tokens issued
by an identity provider to the gateway (the token's audience is the gateway's resource URI, RFC
8707): JWTs checked against the issuer's published keys, or opaque tokens checked by the
issuer's introspection endpoint (RFC 7662). Who may use which project follows the person's
groups, read from a claim of the token (`groupsClaim`, a dotted path for nested claims):

    kind: IdentityProvider
    metadata: {name: acme}
    spec:
      issuer: https://login.acme.example
      groupsClaim: groups
      projects:
        demo:
          groups: {engineers: all, support: read-only}    # group -> the project's profile
          everyone: null                                   # the rest: nothing (the default)

The first group listed that a person belongs to decides their profile; `everyone` is what the
signed-in people in none of them get (null: they are refused). `auth.identity` does the checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mcpctl.resources.schema import (
    ListOf,
    MapOf,
    Obj,
    Scalar,
    check_name,
    check_profile_name,
    check_reference,
)

# Asymmetric signatures only: an HMAC secret would be shared with every resource the issuer
# serves, and a public key must never be read as one (the classic `alg` confusion).
ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
DEFAULT_ALGORITHMS: Final = ("RS256", "PS256", "ES256", "EdDSA")


def _check_url(value: str) -> str | None:
    from urllib.parse import urlparse

    u = urlparse(value)
    if u.scheme == "https" and u.netloc:
        return None
    if u.scheme == "http" and u.hostname in ("127.0.0.1", "localhost", "::1"):
        return None       # a loopback issuer (a test, or a provider on the same host)
    return f"{value!r} is not an https:// URL (http:// only on loopback)"


def _check_claim(value: str) -> str | None:
    parts = value.split(".")
    return None if all(p.strip() for p in parts) else f"{value!r} is not a claim name (dotted for a nested claim)"


IDP_SPEC: Final = Obj({
    "issuer": Scalar(str, required=True, check=_check_url),
    # where the issuer's keys are (default: its metadata's jwks_uri, RFC 8414 or OpenID discovery)
    "jwksUri": Scalar(str, nullable=True, check=_check_url),
    # what a token's `aud` must hold (default: the gateway's own resource URI)
    "audience": ListOf(Scalar(str), default_empty=True),
    "algorithms": ListOf(Scalar(str, enum=ALGORITHMS), default_empty=False),
    "groupsClaim": Scalar(str, default="groups", check=_check_claim),
    # opaque (non-JWT) access tokens: RFC 7662 introspection, as this client
    "introspection": Obj({
        "endpoint": Scalar(str, required=True, check=_check_url),
        "clientId": Scalar(str, nullable=True),
        "clientSecret": Scalar(str, nullable=True, check=check_reference),
    }, omit_if_default=True),
    "projects": MapOf(Obj({
        "groups": MapOf(Scalar(str, check=check_profile_name)),
        "everyone": Scalar(str, nullable=True, check=check_profile_name),
    }), key_check=check_name),
    "description": Scalar(str, nullable=True),
})


@dataclass(frozen=True)
class Grants:
    """One project's grants of a provider: group -> profile (in the order written), and the rest's."""

    groups: tuple[tuple[str, str], ...] = ()
    everyone: str | None = None

    def profile_for(self, groups: frozenset[str]) -> tuple[str | None, str | None]:
        """(the profile, the group that gave it): the first group listed that `groups` holds,
        else `everyone` (group None); (None, None): nothing."""
        for group, profile in self.groups:
            if group in groups:
                return profile, group
        return self.everyone, None


@dataclass(frozen=True)
class Introspection:
    endpoint: str
    client_id: str | None = None
    client_secret: str | None = None      # a ${env:…}/${file:…} reference, resolved when used


@dataclass(frozen=True)
class IdentityProviderSpec:
    name: str
    issuer: str
    jwks_uri: str | None = None
    audience: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    groups_claim: str = "groups"
    introspection: Introspection | None = None
    projects: Mapping[str, Grants] = field(default_factory=dict)

    @classmethod
    def from_resource(cls, res: Mapping[str, Any]) -> IdentityProviderSpec:
        s = res.get("spec") or {}
        intro = s.get("introspection")
        projects = {str(p): Grants(tuple((str(g), str(v)) for g, v in (grant.get("groups") or {}).items()),
                                   grant.get("everyone"))
                    for p, grant in (s.get("projects") or {}).items()}
        return cls(
            name=str(res["metadata"]["name"]),
            issuer=str(s["issuer"]),
            jwks_uri=s.get("jwksUri"),
            audience=tuple(s.get("audience") or ()),
            algorithms=tuple(s.get("algorithms") or DEFAULT_ALGORITHMS),
            groups_claim=str(s.get("groupsClaim") or "groups"),
            introspection=Introspection(str(intro["endpoint"]), intro.get("clientId"), intro.get("clientSecret"))
            if intro else None,
            projects=projects,
        )
