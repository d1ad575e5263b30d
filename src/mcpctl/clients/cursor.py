"""Cursor: `~/.cursor/mcp.json` (or a workspace's `.cursor/mcp.json`), key `mcpServers`.

Entries are stdio (`command`) or remote (`url`, streamable HTTP or SSE by what the server
answers). Values may use `${env:NAME}`, `${userHome}` and, in a workspace file,
`${workspaceFolder}`.
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
    editor_vars,
    json_entries,
    stdio_entry,
    translate_json,
    workspace_of,
)


class Cursor:
    name = "cursor"
    title = "Cursor"
    container = ("mcpServers",)
    editor = JsonEditor()
    http = True

    def default_path(self) -> Path:
        return Path.home() / ".cursor" / "mcp.json"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        return json_entries(doc, self.container), []

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        ws = workspace_of(path, ".cursor")
        return translate_json(entry.data, lambda v, n, w: editor_vars(v, n, w, workspace=ws, inputs=False))

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport == "http":
            return {"url": s.url, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}, []
        return stdio_entry(s, lambda v: f"${{env:{v}}}", type_field=False)


FORMAT = Cursor()
