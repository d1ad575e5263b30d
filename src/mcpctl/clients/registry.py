"""The client formats mcpctl reads and writes, by the name the CLI takes."""

from __future__ import annotations

import importlib
from typing import Final

from mcpctl.clients.base import ClientFormat
from mcpctl.errors import MCPCtlError, did_you_mean

# name -> module (one per format); the order is the order of help texts.
MODULES: Final = {
    "claude-desktop": "claude_desktop",
    "claude-code": "claude_code",
    "cursor": "cursor",
    "vscode": "vscode",
    "codex": "codex",
    "mcp-json": "mcp_json",
}
NAMES: Final = tuple(MODULES)


def get_client(name: str) -> ClientFormat:
    module = MODULES.get(name.lower())
    if module is None:
        hint = did_you_mean(name.lower(), NAMES)
        raise MCPCtlError(f"unknown client {name!r}", hint=(hint + " " if hint else "") + f"known: {', '.join(NAMES)}",
                          exit_code=2)
    fmt: ClientFormat = importlib.import_module(f"mcpctl.clients.{module}").FORMAT
    return fmt


def complete_clients(incomplete: str) -> list[tuple[str, str]]:
    return [(n, f"{get_client(n).title} configuration") for n in NAMES if n.startswith(incomplete)]
