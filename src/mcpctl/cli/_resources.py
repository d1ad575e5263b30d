"""Shared pieces of the resource verbs: kind names, live views and tables (laid out by `_tables`)."""

from __future__ import annotations

import datetime
from typing import Any, Final

from mcpctl.errors import MCPCtlError, did_you_mean
from mcpctl.resources.kinds import API_VERSION, KINDS, Kind, all_aliases, kind_for_alias
from mcpctl.resources.store import ResourceStore
from mcpctl.resources.yamlio import to_yaml

from ._common import print_json, safe, write_stdout
from ._tables import Column, free


def resolve_kind(word: str) -> Kind:
    kind = kind_for_alias(word)
    if kind is None:
        hint = did_you_mean(word.lower(), all_aliases()) or \
            "known kinds: server (servers, srv), project (projects, proj), token (tokens, tok)"
        raise MCPCtlError(f"unknown resource kind {word!r}", hint=hint)
    return kind


def complete_kind(incomplete: str) -> list[tuple[str, str]]:
    return [(a, f"{k.name} resources") for k in KINDS.values() for a in k.aliases if a.startswith(incomplete)]


def live_view(store: ResourceStore, res: dict[str, Any]) -> dict[str, Any]:
    """A stored resource plus its observed status, in the fixed key order; its spec canonical, every
    default filled in (one stored before a field had its default shows it too)."""
    from mcpctl.resources.validate import canonical_or_raw

    out: dict[str, Any] = {
        "apiVersion": res.get("apiVersion", API_VERSION),
        "kind": res["kind"],
        "metadata": res.get("metadata", {}),
        "spec": canonical_or_raw(res),
    }
    status = store.status(res["kind"], res["metadata"]["name"])
    if status:
        out["status"] = dict(sorted(status.items()))
    return out


def render_objects(objs: list[dict[str, Any]], fmt: str, *, single: bool) -> None:
    """yaml/json/name output of live objects; a List when more than one may come back."""
    if fmt == "name":
        write_stdout("".join(f"{o['kind'].lower()}/{o['metadata']['name']}\n" for o in objs))
        return
    data: Any = objs[0] if single else {"apiVersion": API_VERSION, "kind": "List", "items": objs}
    if fmt == "yaml":
        write_stdout(to_yaml(data))
    else:
        print_json(data)


def age(ts: str | None) -> str:
    if not ts:
        return "-"
    try:
        then = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return "-"
    secs = int((datetime.datetime.now(datetime.UTC) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{max(secs, 0)}s"


def _target(spec: dict[str, Any]) -> str:
    if spec.get("transport") in ("http", "sse"):
        return str(spec.get("url", ""))
    return " ".join(str(p) for p in [spec.get("command", ""), *spec.get("args", [])])


def _sign_in(obj: dict[str, Any]) -> str:
    """A server's sign-in state and expiry (`mcpctl.auth.storage`; never a token), or '-'."""
    spec = obj.get("spec", {})
    if not spec.get("auth"):
        return "-"
    from mcpctl.auth.storage import sign_in_state

    refused = (obj.get("status") or {}).get("signInRefused")
    return sign_in_state(obj["metadata"]["name"], spec.get("url"), refused).short()


Rows = tuple[list[Column], list[list[str]]]
_SERVER: Final = [Column("NAME"), Column("TRANSPORT"), free("TARGET"), Column("STATE"), Column("TOOLS"),
                  Column("AGE")]
_SERVER_WIDE: Final = [Column("PROTOCOL"), Column("SIGN-IN"), free("LAST ERROR"), free("DESCRIPTION")]
_PROJECT: Final = [Column("NAME"), free("SERVERS"), Column("PRESENTATION"), Column("FAVOURITES"),
                   Column("DISABLED"), Column("AGE")]
_PROJECT_WIDE: Final = [Column("SEARCH"), Column("NAMES"), free("DESCRIPTION")]
_TOKEN: Final = [Column("NAME"), Column("PROJECT"), Column("PROFILE"), Column("EXPIRES"), Column("AGE")]
_TOKEN_WIDE: Final = [free("DESCRIPTION")]


def server_table(objs: list[dict[str, Any]], wide: bool) -> Rows:
    rows = []
    for o in objs:
        spec, st = o.get("spec", {}), o.get("status", {})
        row = [o["metadata"]["name"], spec.get("transport", "stdio"), _target(spec),
               st.get("state", "unknown"), str(st["tools"]) if "tools" in st else "-",
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row += [st.get("protocolVersion") or "-", _sign_in(o), st.get("lastError") or "-",
                    spec.get("description") or "-"]
        rows.append([safe(c) for c in row])
    return _SERVER + (_SERVER_WIDE if wide else []), rows


def project_table(objs: list[dict[str, Any]], wide: bool) -> Rows:
    from mcpctl.resources.kinds import ProjectSpec

    rows = []
    for o in objs:
        p = ProjectSpec.from_resource(o)        # what the project presents: resources.presents
        favs = f"{len(p.favourite_index.tools)}" + ("" if p.presents.favourites else " (off)")
        row = [p.name, ",".join(p.servers) or "-", p.presents.mode, favs, str(len(p.disabled)),
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            se, nm = p.search, p.names
            row += [f"{se.ranker} top{se.top_k}" if se.enabled else "off", f"{nm.style}/{nm.max_length}",
                    p.description or "-"]
        rows.append([safe(c) for c in row])
    return _PROJECT + (_PROJECT_WIDE if wide else []), rows


def token_table(objs: list[dict[str, Any]], wide: bool) -> Rows:
    rows = []
    for o in objs:
        s = o.get("spec", {})
        row = [o["metadata"]["name"], s.get("project", "-"), s.get("profile") or "(full view)",
               s.get("expires") or "never", age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row.append(s.get("description") or "-")
        rows.append([safe(c) for c in row])
    return _TOKEN + (_TOKEN_WIDE if wide else []), rows


_IDP: Final = [Column("NAME"), Column("ISSUER"), Column("PROJECTS"), Column("AGE")]


def idp_table(objs: list[dict[str, Any]], wide: bool) -> Rows:
    rows = []
    for o in objs:
        s = o.get("spec", {})
        rows.append([safe(c) for c in (o["metadata"]["name"], s.get("issuer", "-"),
                                       ",".join(s.get("projects") or {}) or "-",
                                       age(o["metadata"].get("creationTimestamp")))])
    return _IDP, rows


TABLES = {"Server": server_table, "Project": project_table, "Token": token_table, "IdentityProvider": idp_table}
