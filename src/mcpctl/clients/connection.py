"""What `connect` and `disconnect` share, whichever way they change a client (its file, or Claude
Code's `claude mcp` command): the report, the record `connect` leaves, and the imported entries
`--replace-imported` may remove.

The record (`state.connections_path()`, key `client|file|name`) is keyed by the file's real path,
so a file reached through a symlink and through its target is one connection. It holds the entry
`connect` wrote (`entry`): `disconnect` removes an entry of that name only while it is still that
one, so a user's own entry later written under the same name stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpctl.clients import fileio, state
from mcpctl.clients.base import TOKEN_ENV, ClientFormat, RawEntry
from mcpctl.errors import MCPCtlError
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.resources.store import ResourceStore


@dataclass
class ConnectReport:
    client: str
    title: str
    file: Path
    name: str
    action: str                    # created | configured | unchanged | restored | removed | kept
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

    def restart(self, warnings: Sequence[str]) -> None:
        """Forget what one attempt found (the file changed under it and is read again)."""
        self.removed, self.kept, self.warnings, self.backup = [], [], list(warnings), None


def get(doc: Any, keys: Sequence[str]) -> Any:
    cur = doc
    for k in keys:
        if not isinstance(cur, Mapping) or k not in cur:
            return None
        cur = cur[k]
    return cur


def is_gateway_entry(value: Any) -> bool:
    """Whether a client entry looks like one `connect` wrote (for a disconnect without a record)."""
    if not isinstance(value, Mapping):
        return False
    args = value.get("args") or []
    if isinstance(value.get("command"), str) and isinstance(args, list) and "serve" in args:
        return "mcpctl" in value["command"] or "mcpctl" in args
    text = str(value.get("headersHelper", "")) + str(value.get("headers", "")) + str(value.get("bearer_token_env_var", ""))
    return str(value.get("url", "")).endswith("/mcp") and ("mcpctl" in text or TOKEN_ENV in text)


def ours(existing: Any, record: Mapping[str, Any] | None) -> bool:
    """Whether `existing` is the entry `connect` wrote (records before 0.2 kept no entry: by its look)."""
    if existing is None:
        return False
    if record is not None and "entry" in record:
        return bool(existing == record["entry"])
    return is_gateway_entry(existing) or record is not None


def edit_error(path: Path, e: Exception) -> MCPCtlError:
    return MCPCtlError(f"{path}: {e}", hint="edit the file by hand (mcpctl printed nothing into it), "
                       "or fix what is reported and run the command again")


# -- the record -------------------------------------------------------------------------------------


def find_record(conns: dict[str, Any], fmt: ClientFormat, path: Path, name: str) -> tuple[str, Any]:
    """The record's key (by the file's real path) and the record, moving one kept under the path as
    named (before 0.2) to its real key."""
    key = state.connection_key(fmt.name, fileio.real_path(path), name)
    legacy = state.connection_key(fmt.name, path, name)
    if key not in conns and legacy in conns:
        conns[key] = conns.pop(legacy)
    return key, conns.get(key)


def known_shas(record: Mapping[str, Any]) -> list[str]:
    """The hashes of the file as mcpctl left it (or meant to): restoring its backup then loses
    nothing of anyone else's."""
    shas = [*record.get("shas", []), record.get("after_sha"), record.get("original_sha")]
    return [s for s in shas if isinstance(s, str)]


# -- what --replace-imported removes -------------------------------------------------------------------


def _imported(fmt: ClientFormat, path: Path, entries: list[RawEntry]) -> list[tuple[RawEntry, str]]:
    records = state.load(state.imports_path())
    out = []
    for e in entries:
        server = records.get(state.source_key(fmt.name, path, e.pointer))
        if isinstance(server, str):
            out.append((e, server))
    return out


def replaceable(fmt: ClientFormat, path: Path, doc: Any, name: str, store: ResourceStore, project: ProjectSpec,
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
