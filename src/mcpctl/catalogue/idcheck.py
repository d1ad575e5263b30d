"""Do the tool ids and globs a user typed name tools that exist? One check for every edit.

`create project --favourite`, `favourites add`, `tools enable|disable` all take canonical ids
(`server/tool`, globs for curation) that are only checked against what the servers last listed
(the catalogue cache): a typo (`memory/create_entitys`, `memroy/*`) would otherwise be stored and
silently match nothing. Each finding says what is wrong and, where one is close, what was meant;
whether a finding warns or refuses is the command's decision (`--strict`, `--force`).

A server that was never listed cannot be checked: that is a finding of its own (`unchecked`),
never a refusal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from mcpctl.errors import did_you_mean

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache

GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class IdFinding:
    ident: str
    message: str              # a sentence naming the id and what is wrong, with a did-you-mean
    unchecked: bool = False   # True: the server was never listed, so nothing could be checked


def check_ids(ids: Iterable[str], servers: Sequence[str],
              listed: Mapping[str, Sequence[str] | None], *, where: str) -> list[IdFinding]:
    """Findings for `ids` against `servers` (the project's) whose last listings are `listed`
    (server -> its tools' names, None when never listed). `where` names the project in messages."""
    findings = []
    known = [f"{s}/{name}" for s in servers for name in listed.get(s) or ()]
    for ident in ids:
        finding = _check_one(ident, servers, listed, known, where)
        if finding is not None:
            findings.append(finding)
    return findings


def _check_one(ident: str, servers: Sequence[str], listed: Mapping[str, Sequence[str] | None],
               known: Sequence[str], where: str) -> IdFinding | None:
    server = ident.partition("/")[0]
    is_glob = bool(GLOB_CHARS & set(ident))
    if any(ident == k or (is_glob and fnmatchcase(k, ident)) for k in known):
        return None
    if not is_glob or not GLOB_CHARS & set(server):
        if server not in servers:
            hint = did_you_mean(server, servers)
            return IdFinding(ident, f"{ident!r}: no server {server!r} in {where} (its servers: "
                             f"{', '.join(servers) or 'none'})" + (f"; {hint}" if hint else ""))
        if listed.get(server) is None:
            return IdFinding(ident, f"{ident!r}: server {server!r} has not been listed yet, so the id cannot be "
                             "checked", unchecked=True)
    what = "matches no tool" if is_glob else "is not a tool"
    scope = f"of server {server!r}" if server in servers else f"in {where}"
    hint = None if is_glob else did_you_mean(ident, known)
    return IdFinding(ident, f"{ident!r} {what} {scope} as last listed" + (f"; {hint}" if hint else ""))


def check_against_cache(ids: Iterable[str], servers: Sequence[str], cache: CatalogueCache, *,
                        where: str) -> list[IdFinding]:
    """`check_ids` with the listings of the catalogue cache `cache`."""
    listed: dict[str, list[str] | None] = {}
    for server in servers:
        tools = cache.read_server_tools(server)
        listed[server] = None if tools is None else [str(t.get("name")) for t in tools]
    return check_ids(ids, servers, listed, where=where)


def check_project_ids(name: str, spec: Mapping[str, object], cache: CatalogueCache, *, strict: bool) -> list[str]:
    """The findings of `create project NAME` (its --favourite, --disable and --enable ids), each as
    a warning; with `strict`, InvalidResource for the first that names nothing listed."""
    from mcpctl.errors import InvalidResource

    fav: Any = spec.get("favouriteIndex") or {}
    tools: Any = spec.get("tools") or {}
    servers: Any = spec.get("servers") or []
    flagged = [("--favourite", fav.get("tools") or []), ("--disable", tools.get("disabled") or []),
               ("--enable", tools.get("enabled") or [])]
    findings = [(flag, f) for flag, ids in flagged
                for f in check_against_cache(ids, servers, cache, where=f"project {name!r}")]
    refused = [f"{flag} {f.message}" for flag, f in findings if not f.unchecked]
    if strict and refused:
        raise InvalidResource(refused[0], hint="; ".join(refused[1:]) or "fix the id (mcpctl tools list --project "
                              f"{name} once it exists), or create the project without --strict")
    return [f"{flag} {f.message}" for flag, f in findings]
