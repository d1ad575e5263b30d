"""Codex: `~/.codex/config.toml` (`$CODEX_HOME/config.toml` when set), `[mcp_servers.NAME]`.

Entries are stdio (`command`, `args`, `env`, `env_vars` — variables passed through — and `cwd`)
or streamable HTTP (`url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`). Codex
expands no variables inside values; its `*_env_var(s)` settings name variables, which become
`${env:NAME}` references here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpctl.clients.base import (
    TOKEN_ENV,
    Editor,
    GatewaySettings,
    RawEntry,
    Skipped,
    TomlEditor,
    Translation,
    Unsupported,
    check_container,
    remote_kind,
)

_STDIO = {"command", "args", "env", "env_vars", "cwd"}
_HTTP = {"url", "bearer_token_env_var", "http_headers", "env_http_headers"}
_COMMON = {"enabled", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "transport"}


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Unsupported(f"{where} is not a list of strings")
    return list(value)


def _table(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Unsupported(f"{where} is not a table")
    out = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise Unsupported(f"{where}.{k} is not a string")
        out[str(k)] = str(v)
    return out



def _stdio_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """command, args, env (env_vars as ${env:VAR}) and cwd of a stdio entry."""
    if not isinstance(data["command"], str):
        raise Unsupported("command is not a string")
    spec: dict[str, Any] = {"command": data["command"], "args": _strings(data.get("args"), "args")}
    env = _table(data.get("env"), "env")
    for var in _strings(data.get("env_vars"), "env_vars"):
        env.setdefault(var, "${env:" + var + "}")
    spec["env"] = env
    if isinstance(data.get("cwd"), str):
        spec["cwd"] = data["cwd"]
    return spec


def _remote_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """url and headers (env_http_headers and bearer_token_env_var as ${env:VAR}) of a remote entry."""
    if not isinstance(data["url"], str):
        raise Unsupported("url is not a string")
    headers = _table(data.get("http_headers"), "http_headers")
    for header, var in _table(data.get("env_http_headers"), "env_http_headers").items():
        headers[header] = "${env:" + var + "}"
    token_var = data.get("bearer_token_env_var")
    if isinstance(token_var, str) and token_var:
        headers["Authorization"] = "Bearer ${env:" + token_var + "}"
    return {"url": data["url"], "headers": headers}


def _timeouts(data: Mapping[str, Any]) -> dict[str, float]:
    timeouts: dict[str, float] = {}
    if isinstance(data.get("startup_timeout_sec"), int | float):
        timeouts["connect"] = float(data["startup_timeout_sec"])
    elif isinstance(data.get("startup_timeout_ms"), int | float):
        timeouts["connect"] = float(data["startup_timeout_ms"]) / 1000
    if isinstance(data.get("tool_timeout_sec"), int | float):
        timeouts["call"] = float(data["tool_timeout_sec"])
    return timeouts

class Codex:
    name = "codex"
    title = "Codex"
    container: tuple[str, ...] = ("mcp_servers",)
    editor: Editor = TomlEditor()
    http = True

    def default_path(self) -> Path:
        base = os.environ.get("CODEX_HOME")
        return (Path(base).expanduser() if base else Path.home() / ".codex") / "config.toml"

    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]:
        check_container(self, path, doc)
        servers = doc.get("mcp_servers") if isinstance(doc, Mapping) else None
        if not isinstance(servers, Mapping):
            return [], []
        return [RawEntry(str(n), self.container, v) for n, v in servers.items()], []

    def translate(self, entry: RawEntry, path: Path) -> Translation:
        data = entry.data
        if not isinstance(data, Mapping):
            return Translation("?", reason="the entry is not a table")
        if data.get("command") and data.get("url"):
            return Translation("?", reason="the entry has both a command and a url")
        kind = "stdio" if data.get("command") else remote_kind(data.get("transport"), data.get("url")) \
            if data.get("url") else None
        if kind is None:
            return Translation("?", reason="the entry has neither a command nor a url")
        notes = [f"field {k!r} is not imported" for k in data
                 if k not in (_STDIO if kind == "stdio" else _HTTP) | _COMMON
                 and k not in ("enabled_tools", "disabled_tools")]
        if data.get("enabled_tools") or data.get("disabled_tools"):
            notes.append("Codex's enabled_tools/disabled_tools are not imported: curate with "
                         "mcpctl tools disable --project P 'server/tool'")
        try:
            spec: dict[str, Any] = {"transport": kind}
            spec.update(_stdio_spec(data) if kind == "stdio" else _remote_spec(data))
        except Unsupported as e:
            return Translation(kind, reason=str(e))
        timeouts = _timeouts(data)
        if timeouts:
            spec["timeouts"] = timeouts
        enabled = data.get("enabled", True) is not False
        if not enabled:
            notes.append("disabled in Codex (enabled = false)")
        return Translation(kind, spec=spec, notes=notes, enabled=enabled)

    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]:
        if s.transport == "http":
            return {"url": s.url, "bearer_token_env_var": TOKEN_ENV}, []
        entry: dict[str, Any] = {"command": s.command, "args": list(s.args)}
        if s.env:
            entry["env"] = dict(s.env)
        if s.passthrough:
            entry["env_vars"] = [v for v in s.passthrough if v not in s.env]
        return entry, []


FORMAT = Codex()
