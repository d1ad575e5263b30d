"""Bearer credentials of a project's HTTP gateway, each selecting a profile (a view).

A token is a `Token` resource (project, profile, expiry: what `get tokens` shows) plus the SHA-256
of its secret, kept apart in `state_dir()/credentials/<name>.json` (0600), or in the database's
`token_hashes` table when the store is on PostgreSQL (`Store.token_hashes`). The secret itself is
printed once by `mcpctl create token` and stored nowhere. The HTTP front looks a presented secret
up by its hash (`TokenIndex`), re-reading the tokens whenever one is created, changed or deleted,
so a revocation takes effect on the running gateway's next request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from typing import Final

from mcpctl.errors import InvalidResource, MCPCtlError
from mcpctl.resources.kinds import TokenSpec
from mcpctl.resources.store import ResourceStore

log = logging.getLogger("mcpctl.gateway")
SECRET_PREFIX: Final = "mcpctl_"
_DURATION = re.compile(r"^(\d+)([mhdw])$")
_UNITS: Final = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str | bytes) -> str:
    data = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hashlib.sha256(data).hexdigest()


def write_hash(name: str, secret: str, store: ResourceStore) -> None:
    """Keep the hash of `name`'s secret (pass the store whose `locked()` the caller holds)."""
    store.put_token_hash(name, digest(secret))


def delete_hash(name: str, store: ResourceStore) -> None:
    store.delete_token_hash(name)


def has_hash(name: str, store: ResourceStore) -> bool:
    return store.token_hash(name) is not None


def parse_expires(value: str, now: dt.datetime | None = None) -> str:
    """`30d`, `12h`, `2w`, `90m`, a date `2026-12-31` or `2026-12-31T00:00:00Z` -> a UTC timestamp."""
    now = now or dt.datetime.now(dt.UTC)
    m = _DURATION.match(value.strip())
    if m:
        when = now + dt.timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
    else:
        try:
            when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidResource(f"--expires {value!r}: expected a duration (30d, 12h, 2w, 90m) or a date "
                                  "(2026-12-31 or 2026-12-31T00:00:00Z)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        if when <= now:
            raise InvalidResource(f"--expires {value!r} is in the past")
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def expired(token: TokenSpec, now: dt.datetime | None = None) -> bool:
    if not token.expires:
        return False
    when = dt.datetime.strptime(token.expires, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    return (now or dt.datetime.now(dt.UTC)) >= when


@dataclass(frozen=True)
class Credential:
    """Who a request is: a token's name and profile (None: the project's own token, full view)."""

    name: str | None
    profile: str | None


class TokenIndex:
    """The tokens of one project by the hash of their secret, reloaded when any changes."""

    def __init__(self, project: str, store: ResourceStore) -> None:
        self.project = project
        self.store = store
        self._stamp: object = None
        self._by_hash: dict[str, TokenSpec] = {}

    def _reload(self) -> None:
        by_hash: dict[str, TokenSpec] = {}
        hashes = self.store.token_hashes()
        for res in self.store.list("Token"):
            try:
                tok = TokenSpec.from_resource(res)
            except (ValueError, KeyError, TypeError):
                continue
            if tok.project == self.project and tok.name in hashes:
                by_hash[hashes[tok.name]] = tok     # a token without its hash cannot be presented
        self._by_hash = by_hash

    def lookup(self, secret: bytes) -> TokenSpec | None:
        """The unexpired token whose secret this is, or None."""
        try:
            stamp = self.store.tokens_stamp()
            if stamp != self._stamp or stamp is None:
                self._reload()
                self._stamp = stamp
        except MCPCtlError as e:        # the database is away: nothing can change meanwhile, keep what we know
            log.warning("cannot re-read the tokens of %s (%s); using those read before", self.project, e)
        if not secret.startswith(SECRET_PREFIX.encode()):
            return None
        # Looked up by the SHA-256 of the secret: any timing difference is about the digest,
        # which tells nothing about a secret (the stored value is never compared byte by byte).
        tok = self._by_hash.get(digest(secret))
        if tok is None or expired(tok):
            return None
        return tok
