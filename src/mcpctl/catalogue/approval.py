"""Which pending pin changes `mcpctl tools approve` accepts, and what poisoning their listed
definitions carry (`catalogue.pins` keeps the pins; this is the choosing), and the error that
refuses flagged ones without --yes. No rich, no typer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.catalogue.pins import Change
    from mcpctl.catalogue.poison import Flag
    from mcpctl.errors import MCPCtlError


def change_json(c: Change, flags: list[Flag]) -> dict[str, Any]:
    """One change as `tools changes -o json` shows it."""
    return {"id": c.id, "server": c.server, "tool": c.tool, "kind": c.kind, "pinned": c.before,
            "listed": c.after, "flags": [{"kind": f.kind, "why": f.why, "text": f.text} for f in flags]}


def chosen_changes(project: str, servers: list[str], listings: dict[str, list[dict[str, Any]]], ids: list[str],
            all_: bool) -> dict[str, set[str]]:
    """server -> the tools whose changes `ids` (or `--all`) name. Every id must name at least one
    pending change (globs allowed), or nothing is approved: a typo, or a pattern matching nothing
    while tools are held, is an error, not "Nothing to approve"."""
    from fnmatch import fnmatchcase

    from mcpctl.catalogue.pins import changes
    from mcpctl.errors import MCPCtlError, NotFound

    if bool(ids) == all_:
        raise MCPCtlError("name the changes to accept (SERVER/TOOL …) or pass --all, not both")
    pending = [c for s in servers for c in changes(s, listings[s])]
    out: dict[str, set[str]] = {}
    if all_:
        for c in pending:
            out.setdefault(c.server, set()).add(c.tool)
        return out
    unmatched: list[str] = []
    for cid in ids:
        server, _, tool = cid.partition("/")
        if not server or not tool:
            raise MCPCtlError(f"{cid!r} is not SERVER/TOOL", hint=f"mcpctl tools changes --project {project} "
                              "lists the changes by id")
        if not any(fnmatchcase(s, server) for s in servers):
            raise NotFound(f"{cid!r}: no server of project {project} is {server!r}",
                           hint=f"its servers: {', '.join(servers) or 'none'}")
        hits = [c for c in pending if fnmatchcase(c.server, server) and fnmatchcase(c.tool, tool)]
        if not hits:
            unmatched.append(cid)
        for c in hits:
            out.setdefault(c.server, set()).add(c.tool)
    if unmatched:
        waiting = ", ".join(f"{c.id} ({c.kind})" for c in pending[:10]) + (" …" if len(pending) > 10 else "")
        raise NotFound(f"{', '.join(map(repr, unmatched))} {'matches' if len(unmatched) == 1 else 'match'} no "
                       f"pending change of project {project}; nothing was approved",
                       hint=f"pending: {waiting} (mcpctl tools changes --project {project})" if pending else
                       f"no change is pending: every tool of project {project} is as pinned")
    return out


def flagged_changes(servers: list[str], listings: dict[str, list[dict[str, Any]]],
                     chosen: dict[str, set[str]]) -> dict[str, list[Flag]]:
    """The flags of the listed definitions an approval of `chosen` would pin."""
    from mcpctl.catalogue.pins import changes
    from mcpctl.catalogue.poison import scan_definition

    todo = [c for s in servers if s in chosen for c in changes(s, listings[s]) if c.tool in chosen[s]]
    return {c.id: found for c in todo if c.after is not None and (found := scan_definition(c.id, c.after))}


def flagged_refusal(project: str, flagged: dict[str, list[Flag]]) -> MCPCtlError:
    """The error `tools approve` refuses flagged changes with (without --yes): each flag, then how
    to read them, approve them anyway, or keep the tools from the agent."""
    from mcpctl.catalogue.poison.flags import describe, headline
    from mcpctl.errors import MCPCtlError

    return MCPCtlError(
        f"{headline(len(flagged), 'change to approve', 'changes to approve')}: "
        + "; ".join(f"{tool}: {describe(f)}" for tool, fs in flagged.items() for f in fs),
        hint=f"read them (mcpctl tools changes --project {project}); approve them anyway with --yes, or "
             f"keep them from the agent: mcpctl tools disable --project {project} "
             + " ".join(f"'{t}'" for t in flagged))
