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
entry is removed (if it is still the one `connect` wrote) and the removed entries are put back,
keeping the other changes. The file method lives in `connect_file`, the shared parts in `connection`.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcpctl import paths
from mcpctl.clients import claude_code, fileio, state
from mcpctl.clients.base import TOKEN_ENV, ClientFormat, GatewaySettings
from mcpctl.clients.connect_file import backup, connect_file, disconnect_file
from mcpctl.clients.connection import ConnectReport, find_record, get, is_gateway_entry, ours, replaceable
from mcpctl.clients.importer import resolve_path
from mcpctl.clients.registry import get_client
from mcpctl.errors import Conflict, MCPCtlError, NotFound
from mcpctl.resources.kinds import SECRET_REF_RE, ProjectSpec, ServerSpec
from mcpctl.resources.store import ResourceStore

__all__ = ["ConnectReport", "connect", "disconnect", "gateway_settings", "is_gateway_entry"]

TRANSPORTS = ("stdio", "http")
DEFAULT_NAME = "mcpctl"
DEFAULT_PORT = 8765


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


def env_references(store: ResourceStore, project: ProjectSpec) -> tuple[str, ...]:
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
                     store: ResourceStore, create_token: bool = True) -> GatewaySettings:
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


# -- connect --------------------------------------------------------------------------------------------


def connect(client: str, project: str, *, file: str | Path | None = None, transport: str = "stdio",
            host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = DEFAULT_NAME,
            replace_imported: bool = False, dry_run: bool = False, store: ResourceStore) -> ConnectReport:
    fmt = get_client(client)
    if transport not in TRANSPORTS:
        raise MCPCtlError(f"--transport {transport!r}: must be stdio or http", exit_code=2)
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
            connect_file(fmt, path, value, store, spec, replace_imported, report)
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


def _connect_cli(claude: str, fmt: ClientFormat, path: Path, value: Any, store: ResourceStore, project: ProjectSpec,
                 replace_imported: bool, report: ConnectReport) -> None:
    report.method = "claude"
    snap = fileio.read(fmt, path)
    conns = state.load(state.connections_path())
    key, record = find_record(conns, fmt, path, report.name)
    existing = get(snap.doc, (*fmt.container, report.name))
    if existing is not None and existing != value and not (record is not None and ours(existing, record)):
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
        for e, server in replaceable(fmt, path, snap.doc, report.name, store, project, report):
            scope = "local" if e.cwd else "user"
            steps.append((claude_code.remove_args(e.name, scope), e.cwd))
            removed.append({"name": e.name, "scope": scope, "cwd": e.cwd, "value": e.data, "label": e.label})
            report.removed.append(f"{e.label} (now server/{server})")
    report.action = "created" if existing is None else "unchanged" if existing == value else "configured"
    report.commands = [claude_code.display(args, cwd) for args, cwd in steps]
    if not steps or report.dry_run:
        return
    report.backup = backup(fmt, snap)
    first = record or {"original_backup": str(report.backup) if report.backup else None, "removed": []}
    conns[key] = {**first, "client": fmt.name, "file": str(snap.target), "name": report.name, "method": "claude",
                  "project": report.project, "transport": report.transport, "entry": value,
                  "removed": list(first.get("removed") or []) + removed}
    state.save(state.connections_path(), conns)       # the intent first: a kill below loses nothing
    for i, (args, cwd) in enumerate(steps):
        try:
            claude_code.run(claude, args, cwd)
        except MCPCtlError:
            if i == 0:                                 # nothing changed: the record goes back as it was
                if record is None:
                    conns.pop(key)
                else:
                    conns[key] = record
                state.save(state.connections_path(), conns)
            raise


# -- disconnect -----------------------------------------------------------------------------------------


def disconnect(client: str, *, file: str | Path | None = None, name: str = DEFAULT_NAME,
               dry_run: bool = False, store: ResourceStore) -> ConnectReport:
    fmt = get_client(client)
    path = resolve_path(fmt, file)
    with store.locked():
        return _disconnect(fmt, path, name, dry_run, default_file=file is None)


def _disconnect(fmt: ClientFormat, path: Path, name: str, dry_run: bool, *, default_file: bool) -> ConnectReport:
    conns = state.load(state.connections_path())
    key, record = find_record(conns, fmt, path, name)
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
        disconnect_file(fmt, path, record, report)
    if not dry_run and record is not None:
        conns = state.load(state.connections_path())
        find_record(conns, fmt, path, name)
        conns.pop(key, None)
        state.save(state.connections_path(), conns)
    return report


def _disconnect_cli(claude: str, fmt: ClientFormat, path: Path, record: dict[str, Any] | None,
                    report: ConnectReport) -> None:
    report.method = "claude"
    snap = fileio.read(fmt, path)
    doc = snap.doc
    existing = get(doc, (*fmt.container, report.name))
    if record is None and not is_gateway_entry(existing):
        raise NotFound(f"Claude Code has no mcpctl entry {report.name!r} in its user scope",
                       hint="list them with: claude mcp list")
    if record is None:
        report.warnings.append("no record of mcpctl connect for this entry: removed it, nothing to put back")
    steps: list[tuple[list[str], str | None]] = []
    # `claude mcp add-json` may store the entry in its own words: by its look, then
    mine = ours(existing, record) or (record is not None and is_gateway_entry(existing))
    if mine:
        steps.append((claude_code.remove_args(report.name, "user"), None))
    elif existing is not None:
        report.kept.append(f"{report.name!r}: not the entry mcpctl connect wrote (it changed since): left in place")
    for r in (record or {}).get("removed") or []:
        scope_doc = doc if r["scope"] == "user" else get(doc, ("projects", r["cwd"]))
        if get(scope_doc, ("mcpServers", r["name"])) is not None:
            report.kept.append(f"{r['label']}: already there again")
            continue
        steps.append((claude_code.add_json_args(r["name"], r["value"], r["scope"]), r["cwd"]))
        report.removed.append(r["label"])
    report.commands = [claude_code.display(args, cwd) for args, cwd in steps]
    report.action = "restored" if report.removed else "removed" if mine else "kept"
    if existing is None:
        report.action = "restored" if report.removed else "unchanged"
        report.warnings.append(f"Claude Code has no user-scope server {report.name!r} any more")
    if report.dry_run:
        return
    if steps:
        report.backup = backup(fmt, snap)
    for args, cwd in steps:
        claude_code.run(claude, args, cwd)
