"""What `mcpctl import` says: an `ImportReport` as the lines a person reads (each server and what
became of it, the project, where secrets went, notes, what was not imported and why) and as the
JSON object a script reads (`-o json`). Plain text, no rich: the CLI only writes it."""

from __future__ import annotations

from typing import Any

from mcpctl.clients.importer import ImportReport
from mcpctl.clients.secretfile import SecretNote


def _secret_line(server: str, note: SecretNote, dry_run: bool) -> str:
    """Where one secret of `server` went: a client's variable stays one; a literal moves to a file."""
    if note.kind == "env":
        return f"  server/{server} {note.field}: stays {note.reference} (the client's variable; set it where the gateway starts)"
    verb = ("would move to" if dry_run else "moved to") if note.changed else "kept in"
    return f"  server/{server} {note.field}: literal secret {verb} {note.reference} (0600)"


def import_text(r: ImportReport) -> str:
    """The report for a person, one line per server, then the project, secrets, notes, what was skipped."""
    suffix = " (dry run)" if r.dry_run else ""
    lines: list[str] = []
    for s in r.servers:
        origin = f" (from {s.entry!r}{', ' + s.scope if s.scope else ''})" if s.renamed or s.scope else ""
        lines.append(f"server/{s.server} {s.action}{suffix}{origin}")
    if r.project is not None:
        lines.append(f"{r.project.ref} {r.project.action}{suffix}")
    secrets = [_secret_line(s.server, n, r.dry_run) for s in r.servers for n in s.secrets]
    if secrets:
        lines += ["secrets:", *secrets]
    notes = [f"  server/{s.server}: {n}" for s in r.servers for n in s.notes]
    if notes:
        lines += ["notes:", *notes]
    if r.skipped:
        lines.append("not imported:")
        for k in r.skipped:
            what = ", ".join(x for x in (k.transport if k.transport not in ("", "?") else "", k.scope) if x)
            lines.append(f"  {k.name!r}{f' ({what})' if what else ''}: {k.reason}")
    return "".join(line + "\n" for line in lines)


def import_json(r: ImportReport) -> dict[str, Any]:
    """The report for `-o json`."""
    return {
        "client": r.client, "file": str(r.file), "dryRun": r.dry_run,
        "servers": [{"entry": s.entry, "scope": s.scope, "server": s.server, "transport": s.transport,
                     "action": s.action, "inProject": s.in_project, "notes": s.notes,
                     "secrets": [{"field": n.field, "kind": n.kind, "reference": n.reference} for n in s.secrets]}
                    for s in r.servers],
        "skipped": [{"entry": k.name, "scope": k.scope, "transport": k.transport, "reason": k.reason} for k in r.skipped],
        "project": None if r.project is None else {"name": r.project.name, "action": r.project.action},
        "warnings": r.warnings,
    }
