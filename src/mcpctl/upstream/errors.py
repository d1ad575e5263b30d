"""What goes wrong with an upstream, and how the gateway says it in one line.

- A relayed call fails with `UpstreamUnavailable` (the upstream is down, crashed mid-call or
  is still starting) or `UpstreamTimeout` (no answer within `timeouts.call`; the request was
  cancelled), each with the `outcome` the invocation log records; an error the upstream itself
  answers stays the SDK's `MCPError` and is relayed as it is.
- A connect attempt fails with `ConfigError` when the server cannot be started as configured
  (not retried), or with a protocol error to `initialize` that `refused_handshake` recognises
  (the server does not speak the handshake era: it is spoken to in the 2026-07-28 era instead);
  anything else is retried with backoff.
- `describe_error` turns any of these, or a (nested) exception group from the SDK's context
  managers, into the one line shown to clients and kept as the upstream's `lastError`;
  `leaves` lists a group's exceptions.
"""

from __future__ import annotations

from typing import Final

import mcp.types as t
from mcp import MCPError

# How a server that does not speak the handshake era answers `initialize`.
_REFUSED_HANDSHAKE: Final = (t.UNSUPPORTED_PROTOCOL_VERSION, -32601, -32600)


class UpstreamUnavailable(Exception):
    """The upstream cannot take the request: down, crashed mid-call, or still starting."""

    outcome = "upstream_down"


class UpstreamTimeout(Exception):
    """The upstream did not answer within the per-call timeout (the request was cancelled)."""

    outcome = "timeout"


class ConfigError(Exception):
    """The server cannot be started as configured (missing secret, command not found)."""


def describe_error(exc: BaseException) -> str:
    """One line for a (possibly nested) exception group from the SDK's context managers."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"{exc.message} (code {exc.code})"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = " ".join(str(exc).split()) or type(exc).__name__      # one line, whatever the error's own lines
    return text if len(text) < 300 else text[:300] + "…"


def refused_handshake(e: BaseException) -> bool:
    """The server answered `initialize` with a protocol error (it does not speak that era)."""
    return any(isinstance(x, MCPError) and x.code in _REFUSED_HANDSHAKE for x in leaves(e))


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions in `e`, however deeply grouped (`e` itself when it is not a group)."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in leaves(sub)]
    return [e]
