"""Claude Code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set).

User-scope servers sit under the top-level `mcpServers`; local-scope ones under
`projects["/abs/dir"].mcpServers`, one set per directory. `import claude-code` reads the user
scope and the local scope of the current directory (other directories' entries are listed, not
imported). Entries have a `type` (`stdio`, `http`, `sse`, `ws`); values use `${NAME}` and
`${NAME:-default}`. Claude Code rewrites this file itself, so `connect` goes through its own
`claude mcp add-json -s user` when `claude` is installed, and edits the file otherwise.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcpctl.clients.base import (
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
from mcpctl.errors import MCPCtlError

CLI_TIMEOUT = 120.0


def _cwd_keys() -> set[str]:
    cwd = Path.cwd()
    return {str(cwd), os.path.realpath(cwd)}


class ClaudeCode:
    name = "claude-code"
    title = "Claude Code"
    container = ("mcpServers",)
    editor = JsonEditor()
    http = True

    def default_path(self) -> Path:
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else Path.home()) / ".claude.json"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        found = json_entries(doc, self.container, "user")
        skipped: list[Skipped] = []
        projects = doc.get("projects") if isinstance(doc, Mapping) else None
        if isinstance(projects, Mapping):
            here = _cwd_keys()
            for directory, settings in projects.items():
                local = json_entries(settings, ("mcpServers",))
                if directory in here:
                    found += [RawEntry(e.name, ("projects", directory, "mcpServers"), e.data,
                                       f"local {directory}", cwd=directory) for e in local]
                else:
                    skipped += [Skipped(e.name, f"local to {directory}: run mcpctl import claude-code from there",
                                        f"local {directory}") for e in local]
        return found, skipped

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        return translate_json(entry.data, claude_vars)

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport == "http":
            # headersHelper runs when Claude Code connects: the token stays in its 0600 file.
            helper = (f"printf '{{\"Authorization\": \"Bearer %s\"}}' "
                      f"\"$(cat {shlex.quote(str(s.token_file))})\"")
            return {"type": "http", "url": s.url, "headersHelper": helper}, []
        return stdio_entry(s, lambda v: f"${{{v}}}", type_field=True)


FORMAT = ClaudeCode()


# -- the `claude` command line ---------------------------------------------------------------------


def find_claude() -> str | None:
    return shutil.which("claude")


def cli_command(claude: str, *args: str) -> list[str]:
    return [claude, "mcp", *args]


def add_json_args(name: str, value: Any, scope: str) -> list[str]:
    return ["add-json", "-s", scope, name, json.dumps(value, ensure_ascii=False)]


def remove_args(name: str, scope: str) -> list[str]:
    return ["remove", "-s", scope, name]


def run(claude: str, args: Sequence[str], cwd: str | None = None) -> str:
    """Run `claude mcp ARGS` (in `cwd` for the local scope); MCPCtlError with its output on failure."""
    argv = cli_command(claude, *args)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT, cwd=cwd,
                           stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MCPCtlError(f"{shlex.join(argv[:4])} … failed: {e}") from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()
        raise MCPCtlError(f"{shlex.join(argv[:5])} … exited {r.returncode}: {detail[-1] if detail else ''}",
                          hint="run it yourself to see the whole message, or pass --file ~/.claude.json "
                               "to edit the file instead")
    return r.stdout


def display(args: Sequence[str], cwd: str | None = None) -> str:
    text = "claude mcp " + shlex.join(args)
    return f"(cd {shlex.quote(cwd)} && {text})" if cwd else text
