"""`mcpctl connect CLIENT --project P` and `mcpctl disconnect CLIENT`: the gateway entry in a
client's own configuration.

`connect` writes one entry (named `mcpctl` unless told otherwise) that starts `mcpctl serve
--project P` (stdio) or reaches the HTTP gateway (http), carrying what the gateway needs from an
environment the client keeps small: the store's location (`MCPCTL_HOME`) and the variables the
project's `${env:…}` references read. The file is backed up first and edited surgically
(`jsonc`, `tomledit`); `--replace-imported` also removes the entries `import` brought into the
store, so the client sees only the gateway. Claude Code is driven through its own `claude mcp`
command when installed (it rewrites `~/.claude.json` itself), unless `--file` names the file.

`disconnect` undoes it from the record `connect` left (`state.connections_path()`): when the file
is as `connect` left it, the original bytes come back exactly; when it changed since, the gateway
entry is removed and the removed entries are put back, keeping the other changes.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpctl import paths
from mcpctl.clients import claude_code, state
from mcpctl.clients.base import TOKEN_ENV, ClientFormat, GatewaySettings, RawEntry
from mcpctl.clients.importer import read_client_file, resolve_path
from mcpctl.clients.jsonc import JsoncError
from mcpctl.clients.registry import get_client
from mcpctl.clients.tomledit import TomlEditError
from mcpctl.errors import Conflict, MCPCtlError, NotFound
from mcpctl.resources.kinds import SECRET_REF_RE, ProjectSpec, ServerSpec
from mcpctl.resources.store import Store

TRANSPORTS = ("stdio", "http")
DEFAULT_NAME = "mcpctl"
DEFAULT_PORT = 8765


@dataclass
class ConnectReport:
    client: str
    title: str
    file: Path
    name: str
    action: str                    # created | configured | unchanged | restored | removed
    method: str = "file"           # file | claude (the `claude mcp` command line)
    project: str | None = None
    transport: str | None = None
    entry: Any = None
    dry_run: bool = False
    backup: Path | None = None
    removed: list[str] = field(default_factory=list)     # connect: entries removed; disconnect: put back
    kept: list[str] = field(default_factory=list)        # entries left in place, and why
    commands: list[str] = field(default_factory=list)    # `claude mcp …` run (or to run, dry run)
    warnings: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)


# -- what the entry carries -------------------------------------------------------------------------


def mcpctl_command() -> tuple[str, tuple[str, ...]]:
    """An absolute way to run mcpctl: clients start servers with their own, small PATH."""
    found = shutil.which("mcpctl")
    if found:
        return str(Path(found).absolute()), ()
    beside = Path(sys.executable).parent / "mcpctl"
    if beside.exists():
        return str(beside), ()
    return sys.executable, ("-m", "mcpctl")


def store_env() -> dict[str, str]:
    """The variables that decide where the store is, when the user set them."""
    home = paths.home_override()
    if home is not None:
        return {paths.ENV_HOME: str(home.absolute())}
    return {k: os.environ[k] for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME") if os.environ.get(k)}


def env_references(store: Store, project: ProjectSpec) -> tuple[str, ...]:
    """The variables the project's servers read through `${env:NAME}`, in order."""
    names: dict[str, None] = {}
    for server in project.servers:
        res = store.find("Server", server)
        if res is None:
            continue
        s = ServerSpec.from_resource(res)
        values = [s.command or "", *s.args, *s.env.values(), s.cwd or "", s.url or "", *s.headers.values()]
        for v in values:
            for m in SECRET_REF_RE.finditer(str(v)):
                if m.group(1) == "env":
                    names[m.group(2).strip()] = None
    return tuple(names)


def gateway_settings(project: str, transport: str, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                     store: Store | None = None, create_token: bool = True) -> GatewaySettings:
    store = store or Store()
    spec = ProjectSpec.from_resource(store.get("Project", project))
    command, prefix = mcpctl_command()
    url = token_file = None
    if transport == "http":
        from mcpctl.gateway.http import load_or_create_token, token_path, url_host

        url = f"http://{url_host(host)}:{port}/mcp"
        token_file = token_path(project)
        if create_token:
            load_or_create_token(token_file)
    return GatewaySettings(project, transport, command, (*prefix, "serve", "--project", project), store_env(),
                           env_references(store, spec), url, token_file)


def is_gateway_entry(value: Any) -> bool:
    """Whether a client entry looks like one `connect` wrote (for a disconnect without a record)."""
    if not isinstance(value, Mapping):
        return False
    args = value.get("args") or []
    if isinstance(value.get("command"), str) and isinstance(args, list) and "serve" in args:
        return "mcpctl" in value["command"] or "mcpctl" in args
    text = str(value.get("headersHelper", "")) + str(value.get("headers", "")) + str(value.get("bearer_token_env_var", ""))
    return str(value.get("url", "")).endswith("/mcp") and ("mcpctl" in text or TOKEN_ENV in text)


# -- helpers ------------------------------------------------------------------------------------------


def _get(doc: Any, keys: Sequence[str]) -> Any:
    cur = doc
    for k in keys:
        if not isinstance(cur, Mapping) or k not in cur:
            return None
        cur = cur[k]
    return cur


def _edit_error(path: Path, e: Exception) -> MCPCtlError:
    return MCPCtlError(f"{path}: {e}", hint="edit the file by hand (mcpctl printed nothing into it), "
                       "or fix what is reported and run the command again")


def _imported(fmt: ClientFormat, path: Path, entries: list[RawEntry]) -> list[tuple[RawEntry, str]]:
    records = state.load(state.imports_path())
    out = []
    for e in entries:
        server = records.get(state.source_key(fmt.name, path, e.pointer))
        if isinstance(server, str):
            out.append((e, server))
    return out


def _replaceable(fmt: ClientFormat, path: Path, doc: Any, name: str, store: Store, project: ProjectSpec,
                 report: ConnectReport) -> list[tuple[RawEntry, str]]:
    """The imported entries `--replace-imported` removes; the report says which stay and why."""
    entries, _ = fmt.entries(doc, path)
    entries = [e for e in entries if not (e.name == name and e.container == fmt.container)]
    imported = _imported(fmt, path, entries)
    prefix = state.source_key(fmt.name, path, "")
    if not any(k.startswith(prefix) for k in state.load(state.imports_path())):
        report.warnings.append(f"no entry of {path} was imported; nothing to replace "
                               f"(mcpctl import {fmt.name}{'' if path == fmt.default_path() else f' --file {path}'} first)")
    out = []
    done = {e.pointer for e, _ in imported}
    for e, server in imported:
        if store.find("Server", server) is None:
            report.kept.append(f"{e.label}: server/{server} is no longer registered")
        elif server not in project.servers:
            report.kept.append(f"{e.label}: server/{server} is not in project {project.name!r} "
                               f"(add it: mcpctl import {fmt.name} --project {project.name})")
        else:
            out.append((e, server))
    report.kept += [f"{e.label}: not imported" for e in entries if e.pointer not in done]
    return out


# -- connect --------------------------------------------------------------------------------------------


def connect(client: str, project: str, *, file: str | Path | None = None, transport: str = "stdio",
            host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = DEFAULT_NAME,
            replace_imported: bool = False, dry_run: bool = False, store: Store | None = None) -> ConnectReport:
    fmt = get_client(client)
    if transport not in TRANSPORTS:
        raise MCPCtlError(f"--transport {transport!r}: must be stdio or http", exit_code=2)
    store = store or Store()
    spec = ProjectSpec.from_resource(store.get("Project", project))
    settings = gateway_settings(project, transport, host=host, port=port, store=store, create_token=not dry_run)
    value, warnings = fmt.gateway_entry(settings)
    path = resolve_path(fmt, file)
    report = ConnectReport(fmt.name, fmt.title, path, name, "unchanged", project=project, transport=transport,
                           entry=value, dry_run=dry_run, warnings=list(warnings))
    claude = claude_code.find_claude() if fmt.name == "claude-code" and file is None else None
    with store.locked():          # one writer of the records (and of the client file) at a time
        if claude:
            _connect_cli(claude, fmt, path, value, store, spec, replace_imported, report)
        else:
            _connect_file(fmt, path, value, store, spec, replace_imported, report)
    if transport == "http":
        report.hints.append(f"the HTTP gateway must be running: mcpctl serve --project {project} --transport http "
                            f"--port {port}")
        if fmt.name in ("cursor", "vscode", "codex", "mcp-json"):
            report.hints.append(f'the client reads the bearer token from ${TOKEN_ENV}: export {TOKEN_ENV}="$(cat '
                                f'{settings.token_file})" where the client starts')
    elif settings.passthrough and fmt.name != "claude-desktop":
        report.hints.append(f"the client passes {', '.join(settings.passthrough)} through to the gateway (the "
                            "project's servers reference them): set them where the client starts")
    return report


def _connect_file(fmt: ClientFormat, path: Path, value: Any, store: Store, project: ProjectSpec,
                  replace_imported: bool, report: ConnectReport) -> None:
    original = state.read_bytes(path)
    text, doc = read_client_file(fmt, path, missing_ok=True)
    conns = state.load(state.connections_path())
    key = state.connection_key(fmt.name, path, report.name)
    record = conns.get(key)
    existing = _get(doc, (*fmt.container, report.name))
    if existing is not None and record is None and existing != value:
        raise Conflict(f"{path} already has an entry {report.name!r} that mcpctl did not write",
                       hint="choose another entry name with --name, or remove that entry first")
    try:
        new_text = text if existing == value else fmt.editor.set(text, fmt.container, report.name, value)
        removed: list[dict[str, Any]] = []
        if replace_imported:
            for e, server in _replaceable(fmt, path, fmt.editor.load(new_text), report.name, store, project, report):
                raw = fmt.editor.raw(new_text, e.container, e.name)
                if raw is None:
                    continue
                new_text = fmt.editor.remove(new_text, e.container, e.name)
                removed.append({"container": list(e.container), "name": e.name, "raw": raw[0], "indent": raw[1],
                                "label": e.label})
                report.removed.append(f"{e.label} (now server/{server})")
    except (JsoncError, TomlEditError) as e:
        raise _edit_error(path, e) from None
    report.action = "created" if existing is None else "unchanged" if existing == value else "configured"
    if new_text == text or report.dry_run:
        return
    if original is not None:
        report.backup = state.backup(fmt.name, path, original)
    data = new_text.encode("utf-8")
    state.write_client_file(path, data)
    first = record or {
        "original_backup": str(report.backup) if report.backup else None,
        "original_sha": state.sha256(original),
        "created_file": original is None,
        "created_container": _get(doc, fmt.container) is None,
        "removed": [],
    }
    conns[key] = {**first, "client": fmt.name, "file": str(path), "name": report.name, "method": "file",
                  "project": report.project, "transport": report.transport, "after_sha": state.sha256(data),
                  "removed": list(first.get("removed") or []) + removed}
    state.save(state.connections_path(), conns)


def _connect_cli(claude: str, fmt: ClientFormat, path: Path, value: Any, store: Store, project: ProjectSpec,
                 replace_imported: bool, report: ConnectReport) -> None:
    report.method = "claude"
    original = state.read_bytes(path)
    _, doc = read_client_file(fmt, path, missing_ok=True)
    conns = state.load(state.connections_path())
    key = state.connection_key(fmt.name, path, report.name)
    record = conns.get(key)
    existing = _get(doc, (*fmt.container, report.name))
    if existing is not None and record is None and existing != value:
        raise Conflict(f"Claude Code already has a user-scope server {report.name!r} that mcpctl did not add",
                       hint="choose another entry name with --name, or remove it: claude mcp remove -s user "
                            f"{report.name}")
    steps: list[tuple[list[str], str | None]] = []
    if existing is not None and existing != value:
        steps.append((claude_code.remove_args(report.name, "user"), None))
    if existing != value:
        steps.append((claude_code.add_json_args(report.name, value, "user"), None))
    removed: list[dict[str, Any]] = []
    if replace_imported:
        for e, server in _replaceable(fmt, path, doc, report.name, store, project, report):
            scope = "local" if e.cwd else "user"
            steps.append((claude_code.remove_args(e.name, scope), e.cwd))
            removed.append({"name": e.name, "scope": scope, "cwd": e.cwd, "value": e.data, "label": e.label})
            report.removed.append(f"{e.label} (now server/{server})")
    report.action = "created" if existing is None else "unchanged" if existing == value else "configured"
    report.commands = [claude_code.display(args, cwd) for args, cwd in steps]
    if not steps or report.dry_run:
        return
    if original is not None:
        report.backup = state.backup(fmt.name, path, original)
    for args, cwd in steps:
        claude_code.run(claude, args, cwd)
    first = record or {"original_backup": str(report.backup) if report.backup else None, "removed": []}
    conns[key] = {**first, "client": fmt.name, "file": str(path), "name": report.name, "method": "claude",
                  "project": report.project, "transport": report.transport,
                  "removed": list(first.get("removed") or []) + removed}
    state.save(state.connections_path(), conns)


# -- disconnect -----------------------------------------------------------------------------------------


def disconnect(client: str, *, file: str | Path | None = None, name: str = DEFAULT_NAME,
               dry_run: bool = False) -> ConnectReport:
    fmt = get_client(client)
    path = resolve_path(fmt, file)
    with Store().locked():
        return _disconnect(fmt, path, name, dry_run, default_file=file is None)


def _disconnect(fmt: ClientFormat, path: Path, name: str, dry_run: bool, *, default_file: bool) -> ConnectReport:
    conns = state.load(state.connections_path())
    key = state.connection_key(fmt.name, path, name)
    record = conns.get(key)
    report = ConnectReport(fmt.name, fmt.title, path, name, "removed", dry_run=dry_run)
    if record is not None:
        report.project, report.transport = record.get("project"), record.get("transport")
    claude = claude_code.find_claude() if fmt.name == "claude-code" and default_file else None
    if (record is not None and record.get("method") == "claude") or (record is None and claude):
        if claude is None:
            raise MCPCtlError("mcpctl connected Claude Code through its `claude` command, which is no longer on PATH",
                              hint=f"put claude on PATH, or remove the entry by hand: claude mcp remove -s user {name}")
        _disconnect_cli(claude, fmt, path, record, report)
    else:
        _disconnect_file(fmt, path, record, report)
    if not dry_run and record is not None:
        conns.pop(key, None)
        state.save(state.connections_path(), conns)
    return report


def _disconnect_cli(claude: str, fmt: ClientFormat, path: Path, record: dict[str, Any] | None,
                    report: ConnectReport) -> None:
    report.method = "claude"
    _, doc = read_client_file(fmt, path, missing_ok=True)
    existing = _get(doc, (*fmt.container, report.name))
    if record is None and not is_gateway_entry(existing):
        raise NotFound(f"Claude Code has no mcpctl entry {report.name!r} in its user scope",
                       hint="list them with: claude mcp list")
    if record is None:
        report.warnings.append("no record of mcpctl connect for this entry: removed it, nothing to put back")
    steps: list[tuple[list[str], str | None]] = []
    if existing is not None:
        steps.append((claude_code.remove_args(report.name, "user"), None))
    for r in (record or {}).get("removed") or []:
        scope_doc = doc if r["scope"] == "user" else _get(doc, ("projects", r["cwd"]))
        if _get(scope_doc, ("mcpServers", r["name"])) is not None:
            report.kept.append(f"{r['label']}: already there again")
            continue
        steps.append((claude_code.add_json_args(r["name"], r["value"], r["scope"]), r["cwd"]))
        report.removed.append(r["label"])
    report.commands = [claude_code.display(args, cwd) for args, cwd in steps]
    report.action = "restored" if report.removed else "removed"
    if existing is None:
        report.action = "restored" if report.removed else "unchanged"
        report.warnings.append(f"Claude Code has no user-scope server {report.name!r} any more")
    if report.dry_run:
        return
    original = state.read_bytes(path)
    if original is not None and steps:
        report.backup = state.backup(fmt.name, path, original)
    for args, cwd in steps:
        claude_code.run(claude, args, cwd)


def _disconnect_file(fmt: ClientFormat, path: Path, record: dict[str, Any] | None, report: ConnectReport) -> None:
    current = state.read_bytes(path)
    text, doc = read_client_file(fmt, path, missing_ok=True)
    existing = _get(doc, (*fmt.container, report.name))
    if record is None:
        if not is_gateway_entry(existing):
            raise NotFound(f"{path} has no mcpctl entry {report.name!r}",
                           hint="name the file with --file, or the entry with --name")
        report.warnings.append("no record of mcpctl connect for this entry: removed it, nothing to put back")
    untouched = record is not None and current is not None and state.sha256(current) == record.get("after_sha")
    original: bytes | None = None
    if untouched and record is not None:
        if record.get("created_file"):
            report.action = "restored"
            report.removed = [r["label"] for r in record.get("removed") or []]
            if not report.dry_run:
                state.remove_file(path)
            return
        backup = record.get("original_backup")
        original = state.read_bytes(Path(backup)) if backup else None
        if original is not None and state.sha256(original) == record.get("original_sha"):
            report.action = "restored"
            report.removed = [r["label"] for r in record.get("removed") or []]
            if not report.dry_run:
                state.write_client_file(path, original)
            return
    if current is None:
        report.action = "unchanged"
        report.warnings.append(f"{path} no longer exists")
        return
    try:
        new_text = fmt.editor.remove(text, fmt.container, report.name) if existing is not None else text
        for r in (record or {}).get("removed") or []:
            if _get(fmt.editor.load(new_text), (*r["container"], r["name"])) is not None:
                report.kept.append(f"{r['label']}: already there again")
                continue
            new_text = fmt.editor.insert_raw(new_text, r["container"], r["name"], (r["raw"], r["indent"]))
            report.removed.append(r["label"])
        if record is not None and record.get("created_container") and _get(fmt.editor.load(new_text), fmt.container) == {}:
            new_text = fmt.editor.remove(new_text, fmt.container[:-1], fmt.container[-1])
    except (JsoncError, TomlEditError) as e:
        raise _edit_error(path, e) from None
    if record is not None:
        report.warnings.append(f"{path} changed since mcpctl connect: removed the gateway entry"
                               + (" and put back the entries it had replaced" if report.removed else "")
                               + "; the other changes are kept")
    if existing is None and not report.removed:
        report.action = "unchanged"
        return
    report.action = "removed" if not report.removed else "restored"
    if new_text == text or report.dry_run:
        return
    report.backup = state.backup(fmt.name, path, current)
    state.write_client_file(path, new_text.encode("utf-8"))
