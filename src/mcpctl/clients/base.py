"""What every client format shares: entries, translations, the gateway entry and file editors.

A `ClientFormat` knows where a client keeps its configuration, which entries it declares
(`entries`), how one entry reads as an mcpctl Server spec (`translate`: the client's own variable
syntax becomes `${env:NAME}`, what mcpctl cannot represent becomes a reason), and what the gateway
entry looks like in that client (`gateway_entry`). The JSON clients differ in little more than
their variable syntax and key names, so most of the work is here; `codex` brings its own TOML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcpctl.clients import jsonc, tomledit
from mcpctl.errors import InvalidResource
from mcpctl.upstream.probe import sse_url

TOKEN_ENV = "MCPCTL_TOKEN"     # the variable clients read the HTTP gateway's bearer token from


def remote_kind(transport: Any, url: Any) -> str:
    """sse for an entry whose transport says so or whose URL is an SSE endpoint, else http."""
    if str(transport or "").lower() == "sse" or (isinstance(url, str) and sse_url(url)):
        return "sse"
    return "http"


class Unsupported(Exception):
    """An entry (or a value in it) that mcpctl cannot represent; the message says why."""


def pointer(parts: Sequence[str]) -> str:
    """A JSON pointer (RFC 6901) naming an entry inside its file."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True)
class RawEntry:
    """One server entry as a client declares it."""

    name: str                          # the client's name for it
    container: tuple[str, ...]         # the keys of the object holding it, e.g. ("mcpServers",)
    data: Any                          # the entry's value, as parsed from the file
    scope: str = ""                    # e.g. "user", "local /path/to/project" (Claude Code)
    cwd: str | None = None             # Claude Code local scope: the project directory

    @property
    def pointer(self) -> str:
        return pointer((*self.container, self.name))

    @property
    def label(self) -> str:
        return f"{self.name!r}" + (f" ({self.scope})" if self.scope else "")


@dataclass(frozen=True)
class Skipped:
    """An entry mcpctl does not import, and why."""

    name: str
    reason: str
    scope: str = ""
    transport: str = ""


@dataclass
class Translation:
    """An entry read as an mcpctl Server spec (references in mcpctl's syntax), or why not."""

    transport: str                                   # stdio | http | sse | the client's own word
    spec: dict[str, Any] | None = None
    reason: str | None = None                        # set when spec is None
    notes: list[str] = field(default_factory=list)
    enabled: bool = True                             # False: the client has it switched off


@dataclass(frozen=True)
class GatewaySettings:
    """What a client needs to start (stdio) or reach (http) `mcpctl serve --project P`."""

    project: str
    transport: str                          # stdio | http
    command: str                            # absolute path of mcpctl (clients have a small PATH)
    args: tuple[str, ...]
    env: Mapping[str, str]                  # literal values: MCPCTL_HOME when set
    passthrough: tuple[str, ...] = ()       # variables the project's ${env:…} references need
    url: str | None = None
    token_file: Path | None = None


# -- variable syntaxes ------------------------------------------------------------------------------

_ANY_VAR = re.compile(r"\$\{([^}]*)\}")
_SHELL_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def claude_vars(value: str, notes: list[str], where: str) -> str:
    """Claude Code (`.mcp.json`, `~/.claude.json`): `${NAME}` and `${NAME:-default}`."""

    def sub(m: re.Match[str]) -> str:
        if m.group(2) is not None:
            notes.append(f"{where}: the default of ${{{m.group(1)}:-…}} is dropped: mcpctl needs "
                         f"{m.group(1)} set when the server starts")
        return "${env:" + m.group(1) + "}"

    return _SHELL_VAR.sub(sub, value)


def editor_vars(value: str, notes: list[str], where: str, *, workspace: Path | None,
                inputs: bool) -> str:
    """VS Code and Cursor: `${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${pathSeparator}`,
    and (VS Code) `${input:ID}`, which prompts the user: mcpctl reads a variable instead."""

    def sub(m: re.Match[str]) -> str:
        inner = m.group(1)
        if inner.startswith(("env:", "file:")):
            return m.group(0)
        if inner == "userHome":
            return str(Path.home())
        if inner in ("pathSeparator", "/"):
            return os.sep
        if inner in ("workspaceFolder", "workspaceRoot", "workspaceFolderBasename"):
            if workspace is None:
                raise Unsupported(f"{where} uses ${{{inner}}}, which has no meaning outside a workspace "
                                  "(import the workspace's own file with --file DIR/.vscode/mcp.json)")
            return workspace.name if inner == "workspaceFolderBasename" else str(workspace)
        if inputs and inner.startswith("input:"):
            var = re.sub(r"[^A-Za-z0-9]+", "_", inner[len("input:"):]).strip("_").upper() or "INPUT"
            notes.append(f"{where}: ${{{inner}}} is prompted for by the client; mcpctl reads ${{env:{var}}} "
                         f"instead (export {var}=…, or replace it with a ${{file:…}} reference)")
            return "${env:" + var + "}"
        raise Unsupported(f"{where} uses ${{{inner}}}, a client variable mcpctl cannot resolve")

    return _ANY_VAR.sub(sub, value)


VarFn = Callable[[str, list[str], str], str]


# -- JSON entries ------------------------------------------------------------------------------------

_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http"}
_IGNORED = {"type", "transport", "description", "disabled", "alwaysAllow", "autoApprove", "timeout"}
_UNREPRESENTABLE = {
    "envFile": "envFile is not supported: list the variables under env",
    "headersHelper": "headersHelper computes headers with a command; mcpctl needs static headers or "
                     "${env:…}/${file:…} references",
}


def _str(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Unsupported(f"{where} is not a string")
    return str(value)


def _str_map(value: Any, where: str, fn: VarFn, notes: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Unsupported(f"{where} is not an object")
    return {str(k): fn(_str(v, f"{where}.{k}"), notes, f"{where}.{k}") for k, v in value.items()}


def _oauth(value: Any, notes: list[str]) -> dict[str, Any]:
    """A client's `oauth` block (Claude Code: clientId, callbackPort, scopes) as spec.auth."""
    auth: dict[str, Any] = {"type": "oauth"}
    if isinstance(value, Mapping):
        if isinstance(value.get("clientId"), str) and value["clientId"]:
            auth["clientId"] = value["clientId"]
        scopes = value.get("scopes", value.get("scope"))
        if isinstance(scopes, str):
            scopes = scopes.split()
        if isinstance(scopes, list) and all(isinstance(x, str) and x for x in scopes) and scopes:
            auth["scopes"] = list(scopes)
        if value.get("clientSecret"):
            notes.append("oauth.clientSecret is not imported: set spec.auth.clientSecret to a ${env:…}/${file:…} "
                         "reference")
        if value.get("callbackPort"):
            notes.append(f"oauth.callbackPort: sign in with mcpctl login --port {value['callbackPort']}")
    return auth


def _json_kind(data: Mapping[str, Any]) -> str | Translation:
    """The entry's transport (stdio, http or sse), or the Translation that says why it has none."""
    raw_type = data.get("type", data.get("transport"))
    kind = str(raw_type).lower() if raw_type is not None else None
    if kind is None:
        if data.get("command") and data.get("url"):
            return Translation("?", reason="the entry has both a command and a url and no type")
        kind = "stdio" if data.get("command") else "http" if data.get("url") else None
        if kind is None:
            return Translation("?", reason="the entry has neither a command nor a url")
        if kind == "http":      # Cursor: a url alone; its path says SSE (`/sse`) or streamable HTTP
            kind = remote_kind(None, data.get("url"))
    if kind in _HTTP_TYPES:
        return "http"
    if kind not in ("stdio", "sse"):
        return Translation(str(raw_type), reason=f"unknown server type {raw_type!r} (mcpctl knows stdio, http "
                           "and sse)")
    return kind


def _json_spec(data: Mapping[str, Any], kind: str, fn: VarFn, notes: list[str]) -> dict[str, Any] | str:
    """The server spec of an entry of a known kind, or why it cannot be one.

    Raises:
        Unsupported: a field mcpctl cannot represent.
    """
    spec: dict[str, Any] = {"transport": kind}
    if kind == "stdio":
        if not data.get("command"):
            return "a stdio entry without a command"
        spec["command"] = fn(_str(data["command"], "command"), notes, "command")
        args = data.get("args") or []
        if not isinstance(args, list):
            raise Unsupported("args is not a list")
        spec["args"] = [fn(_str(a, f"args[{i}]"), notes, f"args[{i}]") for i, a in enumerate(args)]
        spec["env"] = _str_map(data.get("env"), "env", fn, notes)
        if data.get("cwd"):
            spec["cwd"] = fn(_str(data["cwd"], "cwd"), notes, "cwd")
    else:
        if not data.get("url"):
            return f"an {kind.upper()} entry without a url"
        spec["url"] = fn(_str(data["url"], "url"), notes, "url")
        spec["headers"] = _str_map(data.get("headers"), "headers", fn, notes)
        if "oauth" in data:
            spec["auth"] = _oauth(data["oauth"], notes)
    if isinstance(data.get("description"), str):
        spec["description"] = data["description"]
    return spec


def translate_json(data: Any, fn: VarFn, *, extra_ignored: Sequence[str] = ()) -> Translation:
    """The common shape: `command`/`args`/`env`/`cwd` for stdio, `url`/`headers` for HTTP, with
    an optional `type` (`stdio`, `http`, `sse`, …)."""
    if not isinstance(data, Mapping):
        return Translation("?", reason="the entry is not an object")
    kind = _json_kind(data)
    if isinstance(kind, Translation):
        return kind
    for key, why in _UNREPRESENTABLE.items():
        if key in data:
            return Translation(kind, reason=why)
    allowed = {"command", "args", "env", "cwd"} if kind == "stdio" else {"url", "headers"}
    notes = [f"field {key!r} is not imported" for key in data
             if key not in allowed and key not in _IGNORED and key not in extra_ignored]
    try:
        spec = _json_spec(data, kind, fn, notes)
    except Unsupported as e:
        return Translation(kind, reason=str(e))
    if isinstance(spec, str):
        return Translation(kind, reason=spec)
    enabled = not bool(data.get("disabled"))
    if not enabled:
        notes.append("disabled in the client")
    return Translation(kind, spec=spec, notes=notes, enabled=enabled)


def json_entries(doc: Any, container: tuple[str, ...], scope: str = "") -> list[RawEntry]:
    obj: Any = doc
    for key in container:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(obj, Mapping):
        return []
    return [RawEntry(str(name), container, value, scope) for name, value in obj.items()]


# -- the format protocol and the file editors ------------------------------------------------------


class Editor(Protocol):
    """Surgical edits of one syntax: entries live in a container object at a key path."""

    def load(self, text: str) -> Any: ...
    def set(self, text: str, container: Sequence[str], name: str, value: Any) -> str: ...
    def remove(self, text: str, container: Sequence[str], name: str) -> str: ...
    def raw(self, text: str, container: Sequence[str], name: str) -> tuple[str, str] | None: ...
    def insert_raw(self, text: str, container: Sequence[str], name: str, raw: tuple[str, str]) -> str: ...


class JsonEditor:
    def load(self, text: str) -> Any:
        return jsonc.loads(text) if text.strip() else {}

    def set(self, text: str, container: Sequence[str], name: str, value: Any) -> str:
        return jsonc.set_member(text, container, name, value)

    def remove(self, text: str, container: Sequence[str], name: str) -> str:
        return jsonc.remove_member(text, container, name) if text.strip() else text

    def raw(self, text: str, container: Sequence[str], name: str) -> tuple[str, str] | None:
        return jsonc.member_text(text, container, name) if text.strip() else None

    def insert_raw(self, text: str, container: Sequence[str], name: str, raw: tuple[str, str]) -> str:
        return jsonc.insert_raw_member(text, container, name, raw)


class TomlEditor:
    def load(self, text: str) -> Any:
        return tomledit.loads(text)

    def set(self, text: str, container: Sequence[str], name: str, value: Any) -> str:
        key = (*container, name)
        return tomledit.append_table(tomledit.remove_table(text, key), key, value)

    def remove(self, text: str, container: Sequence[str], name: str) -> str:
        return tomledit.remove_table(text, (*container, name))

    def raw(self, text: str, container: Sequence[str], name: str) -> tuple[str, str] | None:
        found = tomledit.table_text(text, (*container, name))
        return (found, "") if found is not None else None

    def insert_raw(self, text: str, container: Sequence[str], name: str, raw: tuple[str, str]) -> str:
        return tomledit.insert_raw_table(text, (*container, name), raw[0])


class ClientFormat(Protocol):
    name: str                      # the CLI's word: claude-code
    title: str                     # Claude Code
    container: tuple[str, ...]     # where `connect` writes the gateway entry
    editor: Editor
    http: bool                     # whether the client can reach an HTTP server from this file

    def default_path(self) -> Path | None: ...
    def entries(self, doc: Any, path: Path) -> tuple[list[RawEntry], list[Skipped]]: ...
    def translate(self, entry: RawEntry, path: Path) -> Translation: ...
    def gateway_entry(self, s: GatewaySettings) -> tuple[Any, list[str]]: ...


def check_container(fmt: ClientFormat, path: Path, doc: Any) -> None:
    """The object holding the entries must be one (Codex's `[[mcp_servers]]` is an array)."""
    holder: Any = doc
    for key in fmt.container:
        holder = holder.get(key) if isinstance(holder, Mapping) else None
    if holder is None or isinstance(holder, Mapping):
        return
    where = ".".join(fmt.container)
    if fmt.name == "codex" and isinstance(holder, list):
        raise InvalidResource(f"{path}: [[{where}]] is an array of tables; Codex reads one [{where}.NAME] "
                              "table per server", hint=f"rewrite each [[{where}]] block as [{where}.NAME] "
                              "(NAME: the server's name) and run the command again; the file is unchanged")
    raise InvalidResource(f"{path}: {where} is a {type(holder).__name__}, not an object of servers",
                          hint=f"fix the file ({fmt.title} keeps its servers under {where} by name); "
                               "it is unchanged")


def workspace_of(path: Path, folder: str) -> Path | None:
    """The workspace of a per-workspace file (`<ws>/.vscode/mcp.json`), or None for a user file."""
    return path.parent.parent if path.parent.name == folder else None


def stdio_entry(s: GatewaySettings, env_ref: Callable[[str], str] | None, *,
                type_field: bool) -> tuple[dict[str, Any], list[str]]:
    """The gateway as a JSON stdio entry: the absolute command, MCPCTL_HOME, and the variables the
    project's ${env:…} references need passed through in the client's own syntax."""
    warnings: list[str] = []
    env = dict(s.env)
    if s.passthrough:
        if env_ref is None:
            warnings.append("this client cannot pass environment variables through; the project's servers "
                            f"reference {', '.join(s.passthrough)}: move them to ${{file:…}} references "
                            "(or set them in the entry by hand)")
        else:
            env.update({v: env_ref(v) for v in s.passthrough if v not in env})
    entry: dict[str, Any] = {"type": "stdio"} if type_field else {}
    entry.update(command=s.command, args=list(s.args))
    if env:
        entry["env"] = env
    return entry, warnings
