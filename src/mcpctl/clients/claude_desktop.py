"""Claude Desktop: `claude_desktop_config.json`, key `mcpServers`, stdio entries only.

The file lives in the per-OS application folder (`~/Library/Application Support/Claude` on
macOS, `%APPDATA%\\Claude` on Windows, `$XDG_CONFIG_HOME/Claude` on Linux). Values are literal:
Claude Desktop expands no variables, so the gateway entry cannot pass variables through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platformdirs import PlatformDirs

from mcpctl.clients.base import (
    GatewaySettings,
    JsonEditor,
    RawEntry,
    Skipped,
    Translation,
    json_entries,
    stdio_entry,
    translate_json,
)


def _literal(value: str, notes: list[str], where: str) -> str:
    return value


class ClaudeDesktop:
    name = "claude-desktop"
    title = "Claude Desktop"
    container = ("mcpServers",)
    editor = JsonEditor()
    http = False

    def default_path(self) -> Path:
        return PlatformDirs("Claude", appauthor=False, roaming=True).user_config_path / "claude_desktop_config.json"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        return json_entries(doc, self.container), []

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        return translate_json(entry.data, _literal)

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport != "stdio":
            from mcpctl.errors import MCPCtlError

            raise MCPCtlError("Claude Desktop starts its servers over stdio; its configuration file has no "
                              "HTTP entries", hint="use --transport stdio (the default)")
        return stdio_entry(s, None, type_field=False)


FORMAT = ClaudeDesktop()
