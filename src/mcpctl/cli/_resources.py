"""Shared pieces of the resource verbs: kind names, output and tables (their cells are
`presentation.resources`'s, laid out by `_tables`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mcpctl.errors import MCPCtlError, did_you_mean
from mcpctl.presentation.tables import Column, free
from mcpctl.resources.kinds import API_VERSION, KINDS, Kind, all_aliases, kind_for_alias

from ._common import print_json, safe, write_stdout


def resolve_kind(word: str) -> Kind:
    kind = kind_for_alias(word)
    if kind is None:
        hint = did_you_mean(word.lower(), all_aliases()) or \
            "known kinds: server (servers, srv), project (projects, proj), token (tokens, tok)"
        raise MCPCtlError(f"unknown resource kind {word!r}", hint=hint)
    return kind


def complete_kind(incomplete: str) -> list[tuple[str, str]]:
    return [(a, f"{k.name} resources") for k in KINDS.values() for a in k.aliases if a.startswith(incomplete)]


def render_objects(objs: list[dict[str, Any]], fmt: str, *, single: bool) -> None:
    """yaml/json/name output of live objects; a List when more than one may come back."""
    if fmt == "name":
        write_stdout("".join(f"{o['kind'].lower()}/{o['metadata']['name']}\n" for o in objs))
        return
    data: Any = objs[0] if single else {"apiVersion": API_VERSION, "kind": "List", "items": objs}
    if fmt == "yaml":
        from mcpctl.resources.yamlio import to_yaml  # (ruamel: not for completion or help)

        write_stdout(to_yaml(data))
    else:
        print_json(data)


Rows = tuple[list[Column], list[list[str]]]
_SERVER: Final = [Column("NAME"), Column("TRANSPORT"), free("TARGET"), Column("STATE"), Column("TOOLS"),
                  Column("AGE")]
_SERVER_WIDE: Final = [Column("PROTOCOL"), Column("SIGN-IN"), free("LAST ERROR"), free("DESCRIPTION")]
_PROJECT: Final = [Column("NAME"), free("SERVERS"), Column("PRESENTATION"), Column("FAVOURITES"),
                   Column("DISABLED"), Column("AGE")]
_PROJECT_WIDE: Final = [Column("SEARCH"), Column("NAMES"), free("DESCRIPTION")]
_TOKEN: Final = [Column("NAME"), Column("PROJECT"), Column("PROFILE"), Column("EXPIRES"), Column("AGE")]
_TOKEN_WIDE: Final = [free("DESCRIPTION")]
_IDP: Final = [Column("NAME"), Column("ISSUER"), Column("PROJECTS"), Column("AGE")]


def _table(columns: list[Column], wide_columns: list[Column], kind: str) -> Callable[[list[dict[str, Any]], bool], Rows]:
    """`get`'s table of `kind`: the columns and the cells of `presentation.resources.ROWS`, escaped."""
    def table(objs: list[dict[str, Any]], wide: bool) -> Rows:
        from mcpctl.presentation.resources import ROWS

        rows = ROWS[kind](objs, wide)
        return columns + (wide_columns if wide else []), [[safe(c) for c in row] for row in rows]

    return table


TABLES = {"Server": _table(_SERVER, _SERVER_WIDE, "Server"), "Project": _table(_PROJECT, _PROJECT_WIDE, "Project"),
          "Token": _table(_TOKEN, _TOKEN_WIDE, "Token"), "IdentityProvider": _table(_IDP, [], "IdentityProvider")}
