"""`connect` and `disconnect` by editing the client's own file (every client but Claude Code with
its `claude` command installed).

Order of writes, so that a kill at any point loses nothing: the backup of the file, then the
record saying how to undo (with the hash of the file about to be written), then the file. A
record whose file was never written describes a file that still hashes as one mcpctl knows, so
`disconnect` restores the backup byte for byte either way. The file is replaced only if it still
holds what was read (`fileio.replace`); when the client wrote it meanwhile, the edit is made
again on the fresh file, up to `ATTEMPTS` times, and then refused with a message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpctl.clients import fileio, state
from mcpctl.clients.base import ClientFormat, check_container
from mcpctl.clients.connection import (
    ConnectReport,
    edit_error,
    find_record,
    get,
    known_shas,
    ours,
    replaceable,
)
from mcpctl.clients.jsonc import JsoncError
from mcpctl.clients.tomledit import TomlEditError
from mcpctl.errors import Conflict, NotFound
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.resources.store import ResourceStore

ATTEMPTS = 8


def _busy(path: Path) -> Conflict:
    return Conflict(f"{path} changed {ATTEMPTS} times while mcpctl was editing it (its client rewrites it "
                    "while running)", hint="quit the client, run the command again, then start the client; "
                    "the file is as the client last wrote it")


def _save_record(fmt: ClientFormat, path: Path, name: str, record: dict[str, Any] | None) -> Any:
    """Set (or, None, drop) the record; returns the one it replaced."""
    conns = state.load(state.connections_path())
    key, before = find_record(conns, fmt, path, name)
    if record is None:
        conns.pop(key, None)
    else:
        conns[key] = record
    state.save(state.connections_path(), conns)
    return before


def backup(fmt: ClientFormat, snap: fileio.Snapshot) -> Path | None:
    """A copy of the file as read (None: there was none); a message when it cannot be written."""
    if snap.data is None:
        return None
    try:
        return state.backup(fmt.name, snap.target, snap.data)
    except OSError as e:
        raise fileio.io_error(state.clients_dir() / "backups", e, "write a backup in") from None


def _write(snap: fileio.Snapshot, data: bytes | None, *, before: Callable[[], None] | None = None) -> None:
    """Replace (or, None, remove) the file; OSError becomes a message naming it."""
    try:
        if data is None:
            fileio.remove(snap)
        else:
            fileio.replace(snap, data, before=before)
    except OSError as e:
        raise fileio.io_error(snap.path, e, "write") from None


# -- connect ------------------------------------------------------------------------------------------


def connect_file(fmt: ClientFormat, path: Path, value: Any, store: ResourceStore, project: ProjectSpec,
                 replace_imported: bool, report: ConnectReport) -> None:
    warnings = list(report.warnings)
    _, prior = find_record(state.load(state.connections_path()), fmt, path, report.name)
    for _ in range(ATTEMPTS):
        report.restart(warnings)
        snap = fileio.read(fmt, path)
        planned = _plan(fmt, snap, value, prior, store, project, replace_imported, report)
        if planned is None:
            return
        try:
            _commit(fmt, snap, value, *planned, prior, report)
            return
        except fileio.FileChanged:
            continue
        except BaseException:
            with contextlib.suppress(OSError):
                _save_record(fmt, path, report.name, prior)
            raise
    _save_record(fmt, path, report.name, prior)
    raise _busy(path)


def _plan(fmt: ClientFormat, snap: fileio.Snapshot, value: Any, record: dict[str, Any] | None, store: ResourceStore,
          project: ProjectSpec, replace_imported: bool, report: ConnectReport) -> tuple[str, list[dict[str, Any]]] | None:
    """The new text and the entries it removes; None when nothing is to be written."""
    check_container(fmt, snap.path, snap.doc)
    text = snap.text
    existing = get(snap.doc, (*fmt.container, report.name))
    if existing is not None and existing != value and not (record is not None and ours(existing, record)):
        raise Conflict(f"{snap.path} already has an entry {report.name!r} that mcpctl did not write",
                       hint="choose another entry name with --name, or remove that entry first")
    try:
        new_text = text if existing == value else fmt.editor.set(text, fmt.container, report.name, value)
        removed: list[dict[str, Any]] = []
        if replace_imported:
            for e, server in replaceable(fmt, snap.path, fmt.editor.load(new_text), report.name, store, project,
                                         report):
                raw = fmt.editor.raw(new_text, e.container, e.name)
                if raw is None:
                    continue
                new_text = fmt.editor.remove(new_text, e.container, e.name)
                removed.append({"container": list(e.container), "name": e.name, "raw": raw[0], "indent": raw[1],
                                "label": e.label})
                report.removed.append(f"{e.label} (now server/{server})")
    except (JsoncError, TomlEditError) as e:
        raise edit_error(snap.path, e) from None
    report.action = "created" if existing is None else "unchanged" if existing == value else "configured"
    if new_text == text or report.dry_run:
        return None
    fileio.check_writable(snap)
    return new_text, removed


def _commit(fmt: ClientFormat, snap: fileio.Snapshot, value: Any, new_text: str, removed: list[dict[str, Any]],
            prior: dict[str, Any] | None, report: ConnectReport) -> None:
    """Backup, record (the intent), then the file; `FileChanged` if the client wrote it meanwhile
    (the record is rewritten by the next attempt, or put back by the caller)."""
    report.backup = backup(fmt, snap)
    data = new_text.encode("utf-8")
    first = prior or {
        "original_backup": str(report.backup) if report.backup else None,
        "original_sha": state.sha256(snap.data),
        "created_file": snap.data is None,
        "created_container": get(snap.doc, fmt.container) is None,
        "removed": [],
    }
    shas = [*known_shas(first), state.sha256(data)]
    record = {**first, "client": fmt.name, "file": str(snap.target), "name": report.name, "method": "file",
              "project": report.project, "transport": report.transport, "entry": value,
              "after_sha": state.sha256(data), "shas": list(dict.fromkeys(shas)),
              "removed": list(first.get("removed") or []) + removed}

    def intent() -> None:
        try:
            _save_record(fmt, snap.path, report.name, record)
        except OSError as e:
            raise fileio.io_error(state.connections_path(), e, "write") from None
        fileio.pause("connect:between-writes")

    _write(snap, data, before=intent)


# -- disconnect ---------------------------------------------------------------------------------------


def disconnect_file(fmt: ClientFormat, path: Path, record: dict[str, Any] | None, report: ConnectReport) -> None:
    warnings = list(report.warnings)
    for _ in range(ATTEMPTS):
        report.restart(warnings)
        snap = fileio.read(fmt, path)
        try:
            _disconnect_once(fmt, snap, record, report)
            return
        except fileio.FileChanged:
            continue
    raise _busy(path)


def _restore(snap: fileio.Snapshot, record: dict[str, Any], report: ConnectReport) -> bool:
    """The file is as mcpctl left it: the original comes back (or goes, if connect created it)."""
    if record.get("created_file"):
        original = None
    else:
        backup = record.get("original_backup")
        original = state.read_bytes(Path(backup)) if backup else None
        if original is None or state.sha256(original) != record.get("original_sha"):
            return False
    report.action = "restored"
    report.removed = [r["label"] for r in record.get("removed") or []]
    if not report.dry_run and original != snap.data:
        if snap.data is not None:
            fileio.check_writable(snap)
        _write(snap, original)
    return True


def _disconnect_once(fmt: ClientFormat, snap: fileio.Snapshot, record: dict[str, Any] | None,
                     report: ConnectReport) -> None:
    existing = get(snap.doc, (*fmt.container, report.name))
    if record is None:
        if not ours(existing, None):
            raise NotFound(f"{snap.path} has no mcpctl entry {report.name!r}",
                           hint="name the file with --file, or the entry with --name")
        report.warnings.append("no record of mcpctl connect for this entry: removed it, nothing to put back")
    current_sha = state.sha256(snap.data)
    if record is not None and current_sha in known_shas(record) and _restore(snap, record, report):
        return
    if snap.data is None:
        report.action = "unchanged"
        report.warnings.append(f"{snap.path} no longer exists")
        return
    mine = ours(existing, record)
    if existing is not None and not mine:
        report.kept.append(f"{report.name!r}: not the entry mcpctl connect wrote (it changed since): left in place")
    new_text = _undo_edits(fmt, snap, record, report, remove_entry=mine)
    if record is not None:
        report.warnings.append(f"{snap.path} changed since mcpctl connect: "
                               + ("removed the gateway entry" if mine else "kept the entry now there")
                               + (" and put back the entries it had replaced" if report.removed else "")
                               + "; the other changes are kept")
    report.action = "restored" if report.removed else "removed" if mine else \
        "kept" if existing is not None else "unchanged"
    if new_text == snap.text or report.dry_run:
        return
    fileio.check_writable(snap)
    report.backup = backup(fmt, snap)
    _write(snap, new_text.encode("utf-8"))


def _undo_edits(fmt: ClientFormat, snap: fileio.Snapshot, record: dict[str, Any] | None, report: ConnectReport,
                *, remove_entry: bool) -> str:
    """The text without the gateway entry and with the removed entries back."""
    try:
        new_text = fmt.editor.remove(snap.text, fmt.container, report.name) if remove_entry else snap.text
        for r in (record or {}).get("removed") or []:
            if get(fmt.editor.load(new_text), (*r["container"], r["name"])) is not None:
                report.kept.append(f"{r['label']}: already there again")
                continue
            new_text = fmt.editor.insert_raw(new_text, r["container"], r["name"], (r["raw"], r["indent"]))
            report.removed.append(r["label"])
        if record is not None and record.get("created_container") and \
                get(fmt.editor.load(new_text), fmt.container) == {}:
            new_text = fmt.editor.remove(new_text, fmt.container[:-1], fmt.container[-1])
    except (JsoncError, TomlEditError) as e:
        raise edit_error(snap.path, e) from None
    return new_text
