"""Servers whose sign-in lapsed in this gateway process, and the wait for the next `login`.

A refresh the authorization server refuses (or a server the user never signed in to) cannot be
healed by the gateway: only `mcpctl login SERVER` can. The transport `mark`s the server here (with
the stat of its token file at that moment) and ends the connection; the upstream's supervisor
then reports it down with `message(server)` and, instead of reconnecting with backoff, waits in
`wait_for_login` until the token file changes: a stat every `POLL` seconds, so a new login is
picked up within a second, without a restart and without a busy loop.
"""

from __future__ import annotations

import time
from typing import Final

import anyio

from mcpctl.auth.storage import file_stamp, token_path

POLL: Final = 0.25

_expired: dict[str, tuple[tuple[int, int] | None, bool]] = {}   # server -> (file stamp, ever signed in)


class SignInRequired(Exception):
    """The server needs `mcpctl login`: no usable tokens and no way to renew them here."""

    def __init__(self, server: str) -> None:
        super().__init__(message(server))
        self.server = server


def message(server: str) -> str:
    signed_in = _expired.get(server, (None, True))[1]
    if not signed_in:
        return f"not signed in to {server}: run mcpctl login {server}"
    return f"sign-in expired for {server}: run mcpctl login {server}"


def mark(server: str, *, signed_in: bool = True, seen: tuple[int, int] | bool | None = False) -> None:
    """`seen`: the token file's stat when the tokens that failed were read (a login that wrote
    the file since then is not waited for again); by default, its stat now."""
    stamp = file_stamp(token_path(server)) if seen is False else seen
    _expired[server] = (stamp if not isinstance(stamp, bool) else None, signed_in)


def is_expired(server: str) -> bool:
    return server in _expired


def refused(server: str) -> bool:
    """The server's sign-in lapsed here although it had been signed in: the authorization server
    refused the stored tokens (and their renewal)."""
    entry = _expired.get(server)
    return entry is not None and entry[1]


def status_fields(server: str, state: str) -> dict[str, str | None]:
    """What a server's observed status (`get servers`, `describe`, `doctor`) records of its sign-in:
    `signInRefused`, when the server refused the stored sign-in (kept until it is up again, so the
    CLI does not show the token file's own expiry beside a refusal). For servers with `spec.auth`."""
    if state == "up":
        return {"signInRefused": None}
    if state == "down" and refused(server):
        now = time.time()
        return {"signInRefused": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"}
    return {}


def clear(server: str) -> None:
    _expired.pop(server, None)


async def wait_for_login(server: str) -> None:
    """Return once the server's token file differs from when its sign-in lapsed."""
    baseline = _expired.get(server, (file_stamp(token_path(server)), True))[0]
    path = token_path(server)
    while file_stamp(path) == baseline or file_stamp(path) is None:
        await anyio.sleep(POLL)
    clear(server)
