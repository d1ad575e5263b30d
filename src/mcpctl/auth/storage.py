"""Tokens and registered client information at rest: one 0600 JSON file per server.

`token_path(server)` is `state_dir()/auth/<server>.json`, written atomically (temp file + fsync +
replace, 0600, in a 0700 directory). The file holds the token response (access and refresh
token, scope), when it was obtained and when the access token expires (absolute, so a gateway
started later knows), the server's URL (a file for another URL is ignored), and the client the
authorization server registered (or the pre-registered one). Nothing else in mcpctl stores,
logs or prints these values: `SignInState` is the only view of the file the CLI shows.

`FileTokenStorage` is the SDK's `TokenStorage` protocol over that file. It remembers the stat of
what it last read or wrote (`changed()`), which is how a running gateway notices a new `login`
with one `stat` per request and no polling thread.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mcpctl import paths

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

FORMAT: Final = 1


def auth_dir() -> Path:
    return paths.state_dir() / "auth"


def token_path(server: str) -> Path:
    return auth_dir() / f"{server}.json"


def file_stamp(path: Path) -> tuple[int, int] | None:
    """What changes when the file is rewritten (mtime in ns, inode); None when there is none."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ino)


def read_record(server: str) -> dict[str, Any]:
    path = token_path(server)
    try:
        paths.tighten(path)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def write_record(server: str, record: dict[str, Any]) -> None:
    from mcpctl.resources.store import atomic_write

    record = {**record, "format": FORMAT, "server": server}
    atomic_write(token_path(server), json.dumps(record, indent=1, sort_keys=True) + "\n", mode=0o600)


def forget(server: str) -> bool:
    """Remove the server's tokens and registration; whether there were any."""
    try:
        token_path(server).unlink()
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class SignInState:
    """What may be shown about a server's sign-in: never a token."""

    state: str                        # signed-in | expired | signed-out
    expires_at: float | None = None   # the access token's expiry (epoch seconds)
    refreshable: bool = False
    scope: str | None = None
    obtained_at: float | None = None
    refused: bool = False             # expired because the server refused these tokens and their renewal

    def describe(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self.state == "signed-out":
            return "not signed in"
        if self.refused:
            return "expired (refused by the server): sign in again"
        if self.expires_at is None:
            when = "no expiry"
        else:
            left = self.expires_at - now
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.expires_at))
            when = f"access token expires {stamp}" if left > 0 else f"access token expired {stamp}"
        renew = "renews itself" if self.refreshable else "no refresh token: sign in again when it expires"
        return f"signed in ({when}; {renew})"

    def short(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self.state == "signed-out":
            return "signed-out"
        if self.refused:
            return "expired (refused by the server)"
        if self.expires_at is not None and self.expires_at <= now and not self.refreshable:
            return "expired"
        if self.expires_at is None:
            return "signed-in"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.expires_at))
        return f"signed-in (until {stamp}{', renews' if self.refreshable else ''})"


def sign_in_state(server: str, url: str | None = None, refused_at: str | None = None) -> SignInState:
    """What may be shown of the server's sign-in. `refused_at`: when a gateway (or a listing) last
    saw the server refuse the stored tokens and their renewal (the server's observed status,
    `signInRefused`); tokens obtained before it are expired whatever their own expiry says."""
    record = read_record(server)
    tokens = record.get("tokens")
    if not isinstance(tokens, dict) or not tokens.get("access_token") or (url and record.get("url") not in (None, url)):
        return SignInState("signed-out")
    expires = record.get("expiresAt")
    refreshable = bool(tokens.get("refresh_token"))
    obtained = record.get("obtainedAt")
    refused = _before(obtained, refused_at)
    state = "expired" if refused or (isinstance(expires, (int, float)) and expires <= time.time() and not refreshable) \
        else "signed-in"
    return SignInState(state, float(expires) if isinstance(expires, (int, float)) else None, refreshable,
                       tokens.get("scope") if isinstance(tokens.get("scope"), str) else None,
                       obtained, refused)


def _before(obtained: Any, refused_at: str | None) -> bool:
    """Tokens obtained at `obtained` (epoch seconds) before `refused_at` (ISO-8601 UTC, milliseconds)."""
    if not refused_at:
        return False
    whole, _, frac = refused_at.rstrip("Z").partition(".")
    try:
        refused = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{frac or 0}")
    except ValueError:
        return False
    return not isinstance(obtained, (int, float)) or obtained < refused


class FileTokenStorage:
    """The SDK's `TokenStorage` over `token_path(server)` (see the module docstring).

    `fresh=True` (what `login` uses) starts with no tokens, so the SDK signs in again rather than
    reuse what is stored. `buffered=True` (also `login`'s) keeps what it obtains (registration,
    tokens) in memory until `commit()` writes it in one atomic write: a running gateway, which
    reconnects when the file changes, never sees a new registration beside the old, revoked tokens."""

    def __init__(self, server: str, url: str, *, fresh: bool = False, buffered: bool = False) -> None:
        self.server = server
        self.url = url
        self.path = token_path(server)
        self._fresh = fresh
        self._stamp: tuple[int, int] | None = None
        self._pending: dict[str, Any] | None = None if not buffered else self._read()
        self._buffered = buffered

    def commit(self) -> None:
        """Write what a buffered storage holds (nothing to do unbuffered)."""
        if self._buffered and self._pending is not None:
            write_record(self.server, self._pending)
            self._stamp = file_stamp(self.path)

    # -- what the provider needs beyond the protocol ----------------------------------------------

    @property
    def seen(self) -> tuple[int, int] | None:
        """The stat of the file as this storage last read or wrote it."""
        return self._stamp

    def changed(self) -> bool:
        """The file was rewritten (or removed) by someone else since this storage last saw it."""
        return file_stamp(self.path) != self._stamp

    def expires_at(self) -> float | None:
        value = self._record().get("expiresAt")
        return float(value) if isinstance(value, (int, float)) else None

    def lifetime(self) -> float | None:
        value = self._record().get("lifetime")
        return float(value) if isinstance(value, (int, float)) else None

    def _record(self) -> dict[str, Any]:
        if self._buffered and self._pending is not None:
            return dict(self._pending)
        return self._read()

    def _write(self, record: dict[str, Any]) -> None:
        if self._buffered:
            self._pending = record
            return
        write_record(self.server, record)
        self._stamp = file_stamp(self.path)

    def _read(self) -> dict[str, Any]:
        self._stamp = file_stamp(self.path)
        record = read_record(self.server)
        if record.get("url") not in (None, self.url):    # another URL's tokens: not ours to send
            return {}
        return record

    def _update(self, **fields: Any) -> None:
        record = self._record()
        record.update(fields, url=self.url)
        self._write(record)

    # -- TokenStorage ------------------------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        if self._fresh:
            return None
        data = self._record().get("tokens")
        if not isinstance(data, dict):
            return None
        with contextlib.suppress(ValueError):
            return OAuthToken.model_validate(data)
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        now = time.time()
        expires = now + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._fresh = False
        self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), obtainedAt=now,
                     expiresAt=expires, lifetime=tokens.expires_in)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        data = self._record().get("client")
        if not isinstance(data, dict):
            return None
        with contextlib.suppress(ValueError):
            return OAuthClientInformationFull.model_validate(data)
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._update(client=client_info.model_dump(mode="json", exclude_none=True))

    def drop_client_info(self) -> None:
        record = self._record()
        if record.pop("client", None) is not None:
            self._write(record)


