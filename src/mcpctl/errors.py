"""The exceptions mcpctl raises for users, each with a hint and an exit code.

Core code raises these; the CLI turns them into one message on stderr and the exit
code documented in the README. No I/O happens here.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# Exit codes (documented in README.md, "Exit codes").
EXIT_USER = 1          # bad input, invalid resource, failed operation
EXIT_USAGE = 2         # unknown flag or command (typer's own)
EXIT_NOT_FOUND = 3     # a named object does not exist
EXIT_CONFLICT = 4      # AlreadyExists, in use, concurrent modification
EXIT_UPSTREAM = 5      # an upstream MCP server failed


class MCPCtlError(Exception):
    """An error meant for the user: a message, an optional hint and an exit code."""

    exit_code: int = EXIT_USER

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class InvalidResource(MCPCtlError):
    """A manifest, document or field is not valid (`problems`: each of several, one line each)."""

    problems: tuple[str, ...] = ()


class NotFound(MCPCtlError):
    exit_code = EXIT_NOT_FOUND


class AlreadyExists(MCPCtlError):
    exit_code = EXIT_CONFLICT


class Conflict(MCPCtlError):
    exit_code = EXIT_CONFLICT


class UpstreamError(MCPCtlError):
    exit_code = EXIT_UPSTREAM


class SecretError(MCPCtlError):
    """A `${env:NAME}` or `${file:PATH}` reference could not be resolved."""


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 3) -> str | None:
    """Return "did you mean: a, b?" for the closest choices, or None."""
    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    if not close:
        return None
    return "did you mean: " + ", ".join(close) + "?"
