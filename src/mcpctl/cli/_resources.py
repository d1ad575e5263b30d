"""Shared pieces of the resource verbs: kind names, live views and tables."""

from __future__ import annotations

import datetime
from typing import Any

from rich.table import Table

from mcpctl.errors import MCPCtlError, did_you_mean
from mcpctl.resources.kinds import API_VERSION, KINDS, Kind, all_aliases, kind_for_alias
from mcpctl.resources.store import Store
from mcpctl.resources.yamlio import to_yaml

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


def live_view(store: Store, res: dict[str, Any]) -> dict[str, Any]:
    """A stored resource plus its observed status, in the fixed key order."""
    out: dict[str, Any] = {
        "apiVersion": res.get("apiVersion", API_VERSION),
        "kind": res["kind"],
        "metadata": res.get("metadata", {}),
        "spec": res.get("spec", {}),
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
    parts = [spec.get("command", ""), *spec.get("args", [])]
    text = " ".join(str(p) for p in parts)
    return text if len(text) <= 60 else text[:57] + "..."


def _table(cols: list[str], wide_cols: list[str], wide: bool) -> Table:
    """A kubectl-style table: no box, bold headers, no wrapping."""
    t = Table(box=None, pad_edge=False, header_style="bold")
    for c in cols + (wide_cols if wide else []):
        t.add_column(c, no_wrap=True)
    return t


def _sign_in(obj: dict[str, Any]) -> str:
    """A server's sign-in state and expiry (`mcpctl.auth.storage`; never a token), or '-'."""
    spec = obj.get("spec", {})
    if not spec.get("auth"):
        return "-"
    from mcpctl.auth.storage import sign_in_state

    return sign_in_state(obj["metadata"]["name"], spec.get("url")).short()


def server_table(objs: list[dict[str, Any]], wide: bool) -> Table:
    t = _table(["NAME", "TRANSPORT", "TARGET", "STATE", "TOOLS", "AGE"],
               ["PROTOCOL", "SIGN-IN", "LAST ERROR", "DESCRIPTION"], wide)
    for o in objs:
        spec, st = o.get("spec", {}), o.get("status", {})
        row = [o["metadata"]["name"], spec.get("transport", "stdio"), _target(spec),
               st.get("state", "unknown"), str(st["tools"]) if "tools" in st else "-",
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row += [st.get("protocolVersion") or "-", _sign_in(o), st.get("lastError") or "-",
                    spec.get("description") or "-"]
        t.add_row(*map(safe, row))
    return t


def project_table(objs: list[dict[str, Any]], wide: bool) -> Table:
    from mcpctl.resources.kinds import ProjectSpec

    t = _table(["NAME", "SERVERS", "PRESENTATION", "FAVOURITES", "DISABLED", "AGE"], ["SEARCH", "NAMES", "DESCRIPTION"], wide)
    for o in objs:
        p = ProjectSpec.from_resource(o)        # what the project presents: resources.presents
        favs = f"{len(p.favourite_index.tools)}" + ("" if p.presents.favourites else " (off)")
        row = [p.name, ",".join(p.servers) or "-", p.presents.mode, favs, str(len(p.disabled)),
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            se, nm = p.search, p.names
            row += [f"{se.ranker} top{se.top_k}" if se.enabled else "off", f"{nm.style}/{nm.max_length}",
                    p.description or "-"]
        t.add_row(*map(safe, row))
    return t


def token_table(objs: list[dict[str, Any]], wide: bool) -> Table:
    t = _table(["NAME", "PROJECT", "PROFILE", "EXPIRES", "AGE"], ["DESCRIPTION"], wide)
    for o in objs:
        s = o.get("spec", {})
        row = [o["metadata"]["name"], s.get("project", "-"), s.get("profile") or "(full view)",
               s.get("expires") or "never", age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row.append(s.get("description") or "-")
        t.add_row(*map(safe, row))
    return t


TABLES = {"Server": server_table, "Project": project_table, "Token": token_table}
