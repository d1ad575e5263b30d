"""`mcpctl db copy`: move a store between the files backend and a database (either way).

Every object (servers, projects, tokens) and every token hash is copied in one writer lock of the
target (on PostgreSQL: one transaction, so a failed copy leaves the database as it was). An
object already in the target is left alone when identical, and is a conflict otherwise unless
`overwrite`. Observed status, the catalogue cache and the log are not part of the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from mcpctl.errors import Conflict, MCPCtlError
from mcpctl.resources.kinds import KIND_ORDER
from mcpctl.resources.store import ResourceStore

FILES: Final = "files"


@dataclass
class CopyReport:
    copied: dict[str, int] = field(default_factory=dict)       # kind -> objects written
    unchanged: dict[str, int] = field(default_factory=dict)    # kind -> identical already
    hashes: int = 0

    def line(self) -> str:
        def part(counts: dict[str, int]) -> str:
            return ", ".join(f"{n} {k.lower()}{'' if n == 1 else 's'}" for k, n in counts.items() if n) or "nothing"

        return (f"copied {part(self.copied)} and {self.hashes} token hash{'' if self.hashes == 1 else 'es'}; "
                f"unchanged: {part(self.unchanged)}")


def check_end(where: str) -> None:
    """Refuse an end of `db copy` that is neither `files` nor a postgresql:// URL (the store at it
    is opened by `mcpctl.storage.Storage.at`)."""
    if where == FILES or where.startswith(("postgresql://", "postgres://")):
        return
    if where == "sqlite":
        raise MCPCtlError("db copy moves the store (servers, projects, tokens); 'sqlite' is the invocation log's "
                          "backend, which db copy does not move yet", hint="use --from files or --to files")
    raise MCPCtlError(f"{where!r}: expected 'files' or a postgresql:// URL", hint="mcpctl db copy --from files --to $URL")


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    from mcpctl.resources.validate import user_view

    return user_view(a) == user_view(b)


def copy_store(source: ResourceStore, target: ResourceStore, *, overwrite: bool = False, dry_run: bool = False) -> CopyReport:
    report = CopyReport()
    objects = {k: source.list(k) for k in KIND_ORDER}
    hashes = source.token_hashes()
    with target.locked():
        clashes = [f"{k.lower()}/{o['metadata']['name']}" for k, objs in objects.items() for o in objs
                   if (live := target.find(k, o["metadata"]["name"])) is not None and not _same(live, o)]
        if clashes and not overwrite:
            shown = ", ".join(clashes[:5]) + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
            raise Conflict(f"the target already has different objects of the same name: {shown}; nothing was copied",
                           hint="pass --overwrite to replace them with the source's")
        for k, objs in objects.items():
            for o in objs:
                live = target.find(k, o["metadata"]["name"])
                if live is not None and _same(live, o):
                    report.unchanged[k] = report.unchanged.get(k, 0) + 1
                    continue
                if not dry_run:
                    target.put({**o, "metadata": dict(o["metadata"])})
                report.copied[k] = report.copied.get(k, 0) + 1
        for name, sha in hashes.items():
            if target.token_hash(name) != sha:
                if not dry_run:
                    target.put_token_hash(name, sha)
                report.hashes += 1
    return report
