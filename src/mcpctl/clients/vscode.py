"""VS Code: the user profile's `mcp.json` (or a workspace's `.vscode/mcp.json`), key `servers`.

JSONC (comments, trailing commas). Entries have a `type` (`stdio`, `http`, `sse`); values may use
`${env:NAME}`, `${userHome}`, `${workspaceFolder}` and `${input:ID}` (prompted for by VS Code,
declared under `inputs`): mcpctl cannot prompt, so an input becomes an environment variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platformdirs import PlatformDirs

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


class VSCode:
    name = "vscode"
    title = "VS Code"
    container = ("servers",)
    editor = JsonEditor()
    http = True

    def default_path(self) -> Path:
        return PlatformDirs("Code", appauthor=False, roaming=True).user_config_path / "User" / "mcp.json"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        return json_entries(doc, self.container), []

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        ws = workspace_of(path, ".vscode")
        return translate_json(entry.data, lambda v, n, w: editor_vars(v, n, w, workspace=ws, inputs=True),
                              extra_ignored=("dev", "gallery", "version"))

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport == "http":
            return {"type": "http", "url": s.url,
                    "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}, []
        return stdio_entry(s, lambda v: f"${{env:{v}}}", type_field=True)


FORMAT = VSCode()
