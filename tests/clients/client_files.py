"""Configuration files in each client's own format, as users have them.

Each holds stdio entries (one with a literal token in `env`), a streamable-HTTP entry, an SSE
entry (imported as transport: sse) and an entry of an unknown type; the JSONC and TOML ones hold comments, trailing commas and
other settings mcpctl must leave alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Env:
    """The temporary HOME, working directory and MCPCTL_HOME of one test."""

    home: Path          # $HOME
    work: Path          # the current directory
    mcpctl_home: Path

    def path(self, client: str) -> Path:
        from mcpctl.clients.registry import get_client

        return get_client(client).default_path()

    def write(self, client: str, text: str | None = None) -> Path:
        """Write the fixture file of `client` (or `text`) at its standard location; returns the path."""
        p = self.path(client)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(FILES[client](self) if text is None else text, encoding="utf-8")
        return p


TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"       # a GitHub-style literal token
HTTP_TOKEN = "sk-live-0123456789abcdefghijklmnop"


def claude_desktop(env: Any) -> str:
    return """{
  "mcpServers": {
    "GitHub": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "@TOKEN@"
      }
    },
    "calc": {
      "command": "mcpctl",
      "args": ["example-server", "calc"]
    },
    "legacy-sse": {
      "type": "sse",
      "url": "http://127.0.0.1:9000/sse"
    },
    "socket": {
      "type": "websocket",
      "url": "ws://127.0.0.1:9001"
    }
  },
  "globalShortcut": "Ctrl+Space"
}
""".replace("@TOKEN@", TOKEN)


def claude_code(env: Any) -> str:
    doc = {
        "numStartups": 12,
        "theme": "dark",
        "mcpServers": {
            "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
            "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp",
                       "headers": {"Authorization": f"Bearer {HTTP_TOKEN}"}},
            "linear": {"type": "sse", "url": "https://mcp.linear.app/sse"},
            "socket": {"type": "ws", "url": "ws://127.0.0.1:9001"},
        },
        "projects": {
            str(env.work): {
                "allowedTools": [],
                "mcpServers": {
                    "calc": {"type": "stdio", "command": "mcpctl", "args": ["example-server", "calc"],
                             "env": {"CALC_MODE": "${CALC_MODE:-fast}"}},
                },
            },
            "/somewhere/else": {"mcpServers": {"other": {"command": "other-server"}}},
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def cursor(env: Any) -> str:
    return """{
  // Cursor: MCP servers for every workspace
  "mcpServers": {
    "GitHub": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "@TOKEN@" }, // pasted from github.com
    },
    /* the calculator from mcpctl's examples */
    "calc": { "command": "mcpctl", "args": ["example-server", "calc"] },
    "notes": {
      "command": "mcpctl",
      "args": ["example-server", "notes", "--dir", "${userHome}/notes"]
    },
    "remote": {
      "url": "https://mcp.example.com/mcp",
      "headers": { "Authorization": "Bearer ${env:REMOTE_TOKEN}" }
    },
    "events": { "url": "https://mcp.example.com/sse" },
    "tunnel": { "type": "grpc", "url": "grpc://127.0.0.1:7000" },
  },
}
""".replace("@TOKEN@", TOKEN)


def vscode(env: Any) -> str:
    return """// VS Code user MCP configuration
{
\t"inputs": [
\t\t{ "type": "promptString", "id": "sentry-token", "description": "Sentry token", "password": true }
\t],
\t"servers": {
\t\t// stdio, with a literal token
\t\t"github": {
\t\t\t"type": "stdio",
\t\t\t"command": "npx",
\t\t\t"args": ["-y", "@modelcontextprotocol/server-github"],
\t\t\t"env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "@TOKEN@" }
\t\t},
\t\t"calc": { "type": "stdio", "command": "mcpctl", "args": ["example-server", "calc"] },
\t\t"sentry": {
\t\t\t"type": "http",
\t\t\t"url": "https://mcp.sentry.dev/mcp",
\t\t\t"headers": { "Authorization": "Bearer ${input:sentry-token}" }
\t\t},
\t\t"ws-files": { "type": "stdio", "command": "mcp-files", "args": ["${workspaceFolder}"] },
\t\t"events": { "type": "sse", "url": "https://mcp.example.com/sse" },
\t\t"magic": { "type": "quantum", "url": "https://example.com" }
\t},
\t"chat.mcp.discovery.enabled": true
}
""".replace("@TOKEN@", TOKEN)


def codex(env: Any) -> str:
    return '''# Codex configuration
model = "o3"
approval_policy = "on-request"
notes = """
[mcp_servers.not_a_table]
this is a multi-line string
"""

[tui]
theme = "dark" # trailing comment

# GitHub, with its token in clear
[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[mcp_servers.github.env]
GITHUB_PERSONAL_ACCESS_TOKEN = "@TOKEN@"

[mcp_servers.calc]
command = "mcpctl"
args = [
  "example-server",
  "calc",
]
env_vars = ["CALC_MODE"]
startup_timeout_sec = 20
tool_timeout_sec = 90

[mcp_servers.sentry]
url = "https://mcp.sentry.dev/mcp"
bearer_token_env_var = "SENTRY_TOKEN"

[mcp_servers.broken]
enabled = false

[profiles.fast]
model = "o4-mini"
'''.replace("@TOKEN@", TOKEN)


def mcp_json(env: Any) -> str:
    return json.dumps({"mcpServers": {
        "calc": {"command": "mcpctl", "args": ["example-server", "calc"]},
        "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp",
                   "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"}},
        "linear": {"type": "sse", "url": "https://mcp.linear.app/sse"},
    }}, indent=2) + "\n"


FILES: dict[str, Callable[[Any], str]] = {
    "claude-desktop": claude_desktop,
    "claude-code": claude_code,
    "cursor": cursor,
    "vscode": vscode,
    "codex": codex,
    "mcp-json": mcp_json,
}

# What each fixture gives: server name -> transport, and entry -> why it is not imported (a word of it).
EXPECTED: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "claude-desktop": ({"github": "stdio", "calc": "stdio", "legacy-sse": "sse"},
                       {"socket": "unknown server type"}),
    "claude-code": ({"github": "stdio", "sentry": "http", "linear": "sse", "calc": "stdio"},
                    {"socket": "unknown server type", "other": "local to /somewhere/else"}),
    "cursor": ({"github": "stdio", "calc": "stdio", "notes": "stdio", "remote": "http", "events": "sse"},
               {"tunnel": "unknown server type"}),
    "vscode": ({"github": "stdio", "calc": "stdio", "sentry": "http", "events": "sse"},
               {"magic": "unknown server type", "ws-files": "workspaceFolder"}),
    "codex": ({"github": "stdio", "calc": "stdio", "sentry": "http"},
              {"broken": "neither a command nor a url"}),
    "mcp-json": ({"calc": "stdio", "sentry": "http", "linear": "sse"}, {}),
}
