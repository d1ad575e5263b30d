"""A plain `.mcp.json` (the project-scope file Claude Code and other clients read), key
`mcpServers`; `--file` names it, `./.mcp.json` by default.

Variables are Claude Code's `${NAME}` / `${NAME:-default}`; `${env:NAME}` is kept as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpctl.clients.base import (
    TOKEN_ENV,
    GatewaySettings,
    JsonEditor,
    RawEntry,
    Skipped,
    Translation,
    claude_vars,
    json_entries,
    stdio_entry,
    translate_json,
)


class McpJson:
    name = "mcp-json"
    title = ".mcp.json"
    container = ("mcpServers",)
    editor = JsonEditor()
    http = True

    def default_path(self) -> Path:
        return Path.cwd() / ".mcp.json"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        return json_entries(doc, self.container), []

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        return translate_json(entry.data, claude_vars)

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport == "http":
            return {"type": "http", "url": s.url,
                    "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}, []
        return stdio_entry(s, lambda v: f"${{{v}}}", type_field=True)


FORMAT = McpJson()
