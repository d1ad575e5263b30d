"""What `mcpctl connect` and `mcpctl disconnect` say: a `ConnectReport` as the lines a person reads
and as the JSON object a script reads (`-o json`). Plain text, no rich: the CLI only writes it."""

from __future__ import annotations

import json
from typing import Any

from mcpctl.clients.connection import ConnectReport
from mcpctl.clients.registry import get_client


def _target(r: ConnectReport) -> str:
    """How the entry reaches the gateway: its URL, or the stdio command line it starts."""
    e = r.entry if isinstance(r.entry, dict) else {}
    if e.get("url"):
        return f"http: {e['url']}"
    return "stdio: " + " ".join([str(e.get("command", "")), *[str(a) for a in e.get("args") or []]])


def _default(client: str) -> Any:
    """The client's standard configuration file (absolute), or None: `undo` names only another one."""
    path = get_client(client).default_path()
    return path.absolute() if path else None


def connect_text(r: ConnectReport) -> str:
    """`connect`'s report: the entry and where it went, what ran, the backup, what was removed or
    kept, and the line that undoes it."""
    suffix = " (dry run)" if r.dry_run else ""
    where = "Claude Code's user scope (claude mcp)" if r.method == "claude" else str(r.file)
    lines = [f"{r.client}: entry {r.name!r} {r.action}{suffix} in {where} ({_target(r)})"]
    if r.dry_run and r.action != "unchanged":
        lines.append("entry: " + json.dumps(r.entry, ensure_ascii=False))
    lines += [f"{'would run' if r.dry_run else 'ran'}: {c}" for c in r.commands]
    if r.backup:
        lines.append(f"backup: {r.backup}")
    if r.removed:
        lines.append(f"{'would remove' if r.dry_run else 'removed'} (imported; the gateway serves them): "
                     + ", ".join(r.removed))
    lines += [f"kept {k}" for k in r.kept]
    if (not r.dry_run and r.action != "unchanged") or r.removed:
        lines.append(f"undo: mcpctl disconnect {r.client}" + (f" --file {r.file}" if r.method == "file" and
                                                               r.file != _default(r.client) else "")
                     + (f" --name {r.name}" if r.name != "mcpctl" else ""))
    return "".join(line + "\n" for line in lines)


def disconnect_text(r: ConnectReport) -> str:
    """`disconnect`'s report: what became of the entry, what ran, what was put back or kept."""
    suffix = " (dry run)" if r.dry_run else ""
    where = "Claude Code's user scope (claude mcp)" if r.method == "claude" else str(r.file)
    what = {"restored": "removed; original entries restored", "removed": "removed",
            "unchanged": "not found: nothing to do",
            "kept": "left in place: it is not the entry mcpctl connect wrote"}[r.action]
    lines = [f"{r.client}: entry {r.name!r} {what}{suffix} ({where})"]
    lines += [f"{'would run' if r.dry_run else 'ran'}: {c}" for c in r.commands]
    if r.removed:
        lines.append("put back: " + ", ".join(r.removed))
    lines += [f"kept {k}" for k in r.kept]
    if r.backup:
        lines.append(f"backup: {r.backup}")
    return "".join(line + "\n" for line in lines)


def report_json(r: ConnectReport) -> dict[str, Any]:
    """The report for `-o json` (both commands; its keys are pinned by the clients' tests)."""
    return {"client": r.client, "file": str(r.file), "name": r.name, "action": r.action, "method": r.method,
            "project": r.project, "transport": r.transport, "entry": r.entry, "dryRun": r.dry_run,
            "backup": str(r.backup) if r.backup else None, "removed": r.removed, "kept": r.kept,
            "commands": r.commands, "warnings": r.warnings}
