"""`mcpctl import FROM`: a client's server entries become Server resources (and join a project).

Each entry is translated by its client format (variables into `${env:…}`), named (a DNS label,
collisions resolved, the same entry keeping its server on every import), stripped of literal
secrets (moved to 0600 files, `secretfile`), validated on its own (a bad entry is reported, it
does not stop the others) and applied with the apply engine, all or nothing. Entries mcpctl
cannot represent are returned with the reason. Nothing is printed here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpctl.clients import state
from mcpctl.clients.base import ClientFormat, RawEntry, Skipped
from mcpctl.clients.jsonc import JsoncError
from mcpctl.clients.registry import get_client
from mcpctl.clients.secretfile import SecretMover, SecretNote
from mcpctl.clients.tomledit import TomlEditError
from mcpctl.errors import InvalidResource, MCPCtlError, NotFound
from mcpctl.resources.apply import Change, apply_documents
from mcpctl.resources.kinds import API_VERSION
from mcpctl.resources.schema import FieldError
from mcpctl.resources.store import ResourceStore
from mcpctl.resources.validate import canonical_or_raw, canonical_spec, validate_document
from mcpctl.resources.yamlio import Document

MAX_NAME = 63


@dataclass
class ImportedServer:
    entry: str                      # the client's name
    scope: str
    server: str                     # the mcpctl server it became
    transport: str
    action: str = ""                # created | configured | unchanged
    notes: list[str] = field(default_factory=list)
    secrets: list[SecretNote] = field(default_factory=list)
    in_project: bool = False

    @property
    def renamed(self) -> bool:
        return self.entry != self.server


@dataclass
class ImportReport:
    client: str
    file: Path
    dry_run: bool
    servers: list[ImportedServer] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    project: Change | None = None
    changes: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def dns_label(name: str) -> str:
    """A client's entry name as a server name: lowercase letters, digits and '-', ≤ 63."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    label = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return label[:MAX_NAME].rstrip("-") or "server"


def _bump(base: str, n: int) -> str:
    suffix = f"-{n}"
    return base[:MAX_NAME - len(suffix)].rstrip("-") + suffix


def resolve_path(fmt: ClientFormat, file: str | Path | None) -> Path:
    if file is not None:
        return Path(file).expanduser().absolute()
    path = fmt.default_path()
    if path is None:
        raise MCPCtlError(f"{fmt.title} has no standard configuration file", hint="name it with --file PATH")
    return path.absolute()


def read_client_file(fmt: ClientFormat, path: Path, *, missing_ok: bool = False) -> tuple[str, Any]:
    """The file's text and its parsed document; a clear error naming the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return "", fmt.editor.load("")
        raise NotFound(f"{fmt.title} configuration not found: {path}",
                       hint="pass the file with --file PATH") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MCPCtlError(f"cannot read {path}: {e}") from None
    try:
        return text, fmt.editor.load(text)
    except (JsoncError, TomlEditError) as e:
        raise InvalidResource(f"{path}: {e}", hint=f"fix the file (it is not valid for {fmt.title})") from None


def _canonical(spec: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return canonical_spec("Server", spec)
    except FieldError:
        return None


@dataclass
class _Planned:
    entry: RawEntry
    server: ImportedServer
    spec: dict[str, Any]
    mover: SecretMover
    key: str
    enabled: bool
    duplicate_of: str | None = None


class _Namer:
    """Server names for one import: recorded names first, then the entry's DNS label, bumped past
    names that are taken by a different server."""

    def __init__(self, store: ResourceStore, records: dict[str, Any]) -> None:
        self.store = store
        self.records = records
        self.stored = set(store.names("Server"))
        self.used: dict[str, dict[str, Any] | None] = {}      # name -> canonical spec planned

    def _fits(self, name: str, spec: dict[str, Any]) -> tuple[bool, SecretMover, dict[str, Any]]:
        mover = SecretMover(name)
        planned = mover.spec(spec)
        canon = _canonical(planned)
        if name in self.used:
            return canon is not None and self.used[name] == canon, mover, planned
        if name in self.stored:
            live = self.store.find("Server", name)
            return live is not None and canon is not None and canonical_or_raw(live) == canon, mover, planned
        return True, mover, planned

    def choose(self, entry_name: str, key: str, spec: dict[str, Any]) -> tuple[str, SecretMover, dict[str, Any], bool]:
        """(name, its secret mover, the spec with secrets moved, whether an earlier entry of this
        import already planned that very server)."""
        recorded = self.records.get(key)
        if isinstance(recorded, str) and recorded in self.stored and recorded not in self.used:
            mover = SecretMover(recorded)
            planned = mover.spec(spec)
            self.used[recorded] = _canonical(planned)
            return recorded, mover, planned, False
        base = dns_label(entry_name)
        n = 1
        while True:
            name = base if n == 1 else _bump(base, n)
            fits, mover, planned = self._fits(name, spec)
            if fits:
                duplicate = name in self.used
                self.used[name] = _canonical(planned)
                return name, mover, planned, duplicate
            n += 1


def import_client(client: str, *, file: str | Path | None = None, project: str | None = None,
                  dry_run: bool = False, store: ResourceStore) -> ImportReport:
    """Import every entry of a client's configuration; see the module docstring."""
    fmt = get_client(client)
    path = resolve_path(fmt, file)
    _, doc = read_client_file(fmt, path)
    entries, skipped = fmt.entries(doc, path)
    report = ImportReport(fmt.name, path, dry_run, skipped=list(skipped))
    with store.locked():
        records = state.load(state.imports_path())
        namer = _Namer(store, records)
        planned: list[_Planned] = []
        for entry in entries:
            t = fmt.translate(entry, path)
            if t.spec is None:
                report.skipped.append(Skipped(entry.name, t.reason or "not representable", entry.scope, t.transport))
                continue
            key = state.source_key(fmt.name, path, entry.pointer)
            name, mover, spec, duplicate = namer.choose(entry.name, key, t.spec)
            data = {"apiVersion": API_VERSION, "kind": "Server", "metadata": {"name": name}, "spec": spec}
            try:
                validate_document(Document(source=f"{path}{entry.pointer}", index=1, data=data))
            except InvalidResource as e:
                report.skipped.append(Skipped(entry.name, e.message.split(": ", 1)[-1], entry.scope, t.transport))
                namer.used.pop(name, None)
                continue
            if spec.get("auth"):
                t.notes.append(f"signs in with OAuth: run mcpctl login {name}")
            server = ImportedServer(entry.name, entry.scope, name, t.transport, notes=t.notes,
                                    secrets=mover.notes, in_project=bool(project) and t.enabled)
            planned.append(_Planned(entry, server, spec, mover, key, t.enabled,
                                    duplicate_of=name if duplicate else None))
        docs = [Document(source=f"{path}{p.entry.pointer}", index=1,
                         data={"apiVersion": API_VERSION, "kind": "Server", "metadata": {"name": p.server.server},
                               "spec": p.spec})
                for p in planned if p.duplicate_of is None]
        if project:
            docs.append(_project_doc(store, project, [p.server.server for p in planned if p.enabled]))
        if not dry_run:
            for p in planned:
                p.mover.write()
        changes, warnings = apply_documents(docs, store, dry_run=dry_run) if docs else ([], [])
        if not dry_run:
            for p in planned:
                records[p.key] = p.server.server
            if planned:
                state.save(state.imports_path(), records)
    actions = {(c.kind, c.name): c.action for c in changes}
    for p in planned:
        p.server.action = actions.get(("Server", p.server.server), "unchanged")
        report.servers.append(p.server)
    report.project = next((c for c in changes if c.kind == "Project"), None)
    report.changes = changes
    report.warnings = warnings
    return report


def _project_doc(store: ResourceStore, project: str, servers: list[str]) -> Document:
    live = store.find("Project", project)
    if live is None:
        spec: dict[str, Any] = {"servers": []}
        meta: dict[str, Any] = {"name": project}
    else:
        spec = dict(live.get("spec") or {})
        lm = live.get("metadata") or {}
        meta = {k: lm[k] for k in ("name", "labels", "annotations") if k in lm}
    current = list(spec.get("servers") or [])
    spec["servers"] = current + [s for s in dict.fromkeys(servers) if s not in current]
    return Document(source=f"mcpctl import --project {project}", index=1,
                    data={"apiVersion": API_VERSION, "kind": "Project", "metadata": meta, "spec": spec})
