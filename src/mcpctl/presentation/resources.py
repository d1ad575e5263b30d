"""Stored objects as `mcpctl get` and `mcpctl edit` show them, without the CLI.

`live_view` is an object with its observed status in the fixed key order (what `get -o yaml|json`
prints and `edit` opens); `ROWS` builds the cells of `get`'s table for each kind, as plain text
(the CLI escapes them and lays them out, `cli/_tables.py`); `age` is how long ago an object was
created, as kubectl says it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpctl.resources.kinds import API_VERSION

if TYPE_CHECKING:
    from mcpctl.resources.store import ResourceStore

Rows = list[list[str]]


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


def age(ts: str | None, now: datetime.datetime | None = None) -> str:
    """How long before `now` the creation timestamp `ts` was (5d, 3h, 12m, 40s); '-' without one."""
    if not ts:
        return "-"
    try:
        then = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return "-"
    secs = int(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds())
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


def server_rows(objs: list[dict[str, Any]], wide: bool) -> Rows:
    """NAME TRANSPORT TARGET STATE TOOLS AGE (+ PROTOCOL SIGN-IN LAST ERROR DESCRIPTION when wide)."""
    rows = []
    for o in objs:
        spec, st = o.get("spec", {}), o.get("status", {})
        row = [o["metadata"]["name"], spec.get("transport", "stdio"), _target(spec),
               st.get("state", "unknown"), str(st["tools"]) if "tools" in st else "-",
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row += [st.get("protocolVersion") or "-", _sign_in(o), st.get("lastError") or "-",
                    spec.get("description") or "-"]
        rows.append(row)
    return rows


def project_rows(objs: list[dict[str, Any]], wide: bool) -> Rows:
    """NAME SERVERS PRESENTATION FAVOURITES DISABLED AGE (+ SEARCH NAMES DESCRIPTION when wide): what
    each project presents (`resources.presents`), not only what it declares."""
    from mcpctl.resources.kinds import ProjectSpec

    rows = []
    for o in objs:
        p = ProjectSpec.from_resource(o)
        favs = f"{len(p.favourite_index.tools)}" + ("" if p.presents.favourites else " (off)")
        row = [p.name, ",".join(p.servers) or "-", p.presents.mode, favs, str(len(p.disabled)),
               age(o["metadata"].get("creationTimestamp"))]
        if wide:
            se, nm = p.search, p.names
            row += [f"{se.ranker} top{se.top_k}" if se.enabled else "off", f"{nm.style}/{nm.max_length}",
                    p.description or "-"]
        rows.append(row)
    return rows


def token_rows(objs: list[dict[str, Any]], wide: bool) -> Rows:
    """NAME PROJECT PROFILE EXPIRES AGE (+ DESCRIPTION when wide); never a secret."""
    rows = []
    for o in objs:
        s = o.get("spec", {})
        row = [o["metadata"]["name"], s.get("project", "-"), s.get("profile") or "(full view)",
               s.get("expires") or "never", age(o["metadata"].get("creationTimestamp"))]
        if wide:
            row.append(s.get("description") or "-")
        rows.append(row)
    return rows


def idp_rows(objs: list[dict[str, Any]], wide: bool) -> Rows:
    """NAME ISSUER PROJECTS AGE (the same when wide)."""
    rows = []
    for o in objs:
        s = o.get("spec", {})
        rows.append([o["metadata"]["name"], s.get("issuer", "-"), ",".join(s.get("projects") or {}) or "-",
                     age(o["metadata"].get("creationTimestamp"))])
    return rows


ROWS: dict[str, Callable[[list[dict[str, Any]], bool], Rows]] = {
    "Server": server_rows, "Project": project_rows, "Token": token_rows, "IdentityProvider": idp_rows}


# -- describe ----------------------------------------------------------------------------------------

Field = tuple[str | None, str]      # `Label: value`, or (None, line) for a line of its own
NOT_REGISTERED = " (not registered)"    # after a project's server the store does not have


def describe_fields(store: ResourceStore, kind: str, res: dict[str, Any]) -> list[Field]:
    """What `mcpctl describe KIND NAME` says of one object after its name, kind, labels and
    times: its spec read as a person asks about it, its observed status and what uses it."""
    return {"Server": _describe_server, "Project": _describe_project, "Token": _describe_token,
            "IdentityProvider": _describe_idp}[kind](store, res)


def _server_auth(name: str, s: dict[str, Any], st: dict[str, Any]) -> list[Field]:
    from mcpctl.auth.storage import sign_in_state

    a = s["auth"]
    given = [f"scopes {' '.join(a['scopes'])}" if a.get("scopes") else "",
             f"client {a['clientId']}" if a.get("clientId") else "",
             f"client metadata {a['clientMetadataUrl']}" if a.get("clientMetadataUrl") else ""]
    state = sign_in_state(name, s.get("url"), st.get("signInRefused"))
    return [("Auth", ", ".join(["oauth", *filter(None, given)])),
            ("Sign-in", state.describe() + ("" if state.state == "signed-in" else f" (mcpctl login {name})"))]


def _server_status(st: dict[str, Any]) -> list[Field]:
    info = st.get("serverInfo") or {}
    return [("Tools", str(st.get("tools", "-"))), ("Protocol", st.get("protocolVersion", "-")),
            *([("Server info", f"{info.get('name', '?')} {info.get('version', '')}".strip())] if info else []),
            ("Last seen", st.get("lastSeen", "-")), ("Last error", st.get("lastError") or "-")]


def _describe_server(store: ResourceStore, res: dict[str, Any]) -> list[Field]:
    from mcpctl.resources.apply import projects_using

    s, name = res.get("spec", {}), res["metadata"]["name"]
    st = store.status("Server", name)
    f: list[Field] = [("Transport", s.get("transport", "stdio"))]
    if s.get("transport") in ("http", "sse"):
        f += [("URL", s.get("url")), *((f"  header {k}", v) for k, v in s.get("headers", {}).items())]
        if s.get("auth"):
            f += _server_auth(name, s, st)
    else:
        f.append(("Command", " ".join([s.get("command", ""), *s.get("args", [])])))
        if s.get("cwd"):
            f.append(("Cwd", s["cwd"]))
        f += [(f"  env {k}", v) for k, v in s.get("env", {}).items()]
    t = s.get("timeouts", {})
    f.append(("Timeouts", f"connect {t.get('connect', 30)}s, call {t.get('call', 120)}s"))
    if s.get("maxConcurrency"):
        f.append(("Max concurrency", f"{s['maxConcurrency']} calls in flight (more wait, each up to the call timeout)"))
    if s.get("description"):
        f.append(("Description", s["description"]))
    f += [("Used by", ", ".join(projects_using(store, name)) or "-"), ("State", st.get("state", "unknown (never served)"))]
    return f + (_server_status(st) if st else [])


def _describe_project(store: ResourceStore, res: dict[str, Any]) -> list[Field]:
    from mcpctl.resources.kinds import ProjectSpec

    p = ProjectSpec.from_resource(res)        # what the project presents: resources.presents
    registered = set(store.names("Server"))
    shown, fav, se, rs = p.presents, p.favourite_index, p.search, p.results
    f: list[Field] = [("Description", p.description)] if p.description else []
    f += [("Servers", ", ".join(n + ("" if n in registered else NOT_REGISTERED) for n in p.servers) or "-"),
          ("Presentation", shown.mode + (" (without the PREFER favourite instruction)"
                                         if shown.mode == "favourite-index" and not shown.instruction else "")),
          ("Disabled", ", ".join(p.disabled) or "-"), ("Enabled", ", ".join(p.enabled) or "-")]
    if p.overrides:          # tools.overrides: each one side by side with `tools show --project P ID`
        f.append(("Overrides", ", ".join(o.tool for o in p.overrides)))
    f.append(("Favourites", f"{'on' if shown.favourites else 'off'}, max {fav.max_favourites}"))
    f += [(None, f"  ★ {t}") for t in fav.tools]
    f += [("Search", "off" if not se.enabled else
           f"{se.ranker}, top {se.top_k}, record queries: {'yes' if se.record_queries else 'no'}"),
          ("Names", f"{p.names.style}, max length {p.names.max_length}"),
          ("Results", "never cut" if not rs.max_tokens else
           f"cut over {rs.max_tokens} tokens (read_result), kept {rs.keep_minutes} min, {rs.keep_megabytes} MB in all")]
    for prof in p.profiles:         # calls per minute per identity (presentation.budgets)
        if prof.limits is not None:
            rates = [f"each identity {prof.limits.default.describe()}"] if prof.limits.default else []
            rates += [f"{who}: {rate.describe()}" for who, rate in prof.limits.identities]
            f.append((f"Limits ({prof.name})", "; ".join(rates)))
    return f


def _describe_token(store: ResourceStore, res: dict[str, Any]) -> list[Field]:
    from mcpctl.resources import tokens
    from mcpctl.resources.kinds import TokenSpec

    tok = TokenSpec.from_resource(res)
    f: list[Field] = [
        ("Project", tok.project), ("Profile", tok.profile or "(none: the full view)"),
        ("Expires", (tok.expires or "never") + (" (expired)" if tokens.expired(tok) else "")),
        ("Secret", "a hash is stored" if tokens.has_hash(tok.name, store) else "missing: recreate the token "
         f"(mcpctl create token {tok.name} --project {tok.project} --force)")]
    if res.get("spec", {}).get("description"):
        f.append(("Description", res["spec"]["description"]))
    return f


def _describe_idp(store: ResourceStore, res: dict[str, Any]) -> list[Field]:
    from mcpctl.resources.idp import IdentityProviderSpec

    idp = IdentityProviderSpec.from_resource(res)
    f: list[Field] = [
        ("Issuer", idp.issuer), ("Keys", idp.jwks_uri or "the issuer's metadata (jwks_uri)"),
        ("Audience", ", ".join(idp.audience) or "the gateway's resource URI"),
        ("Algorithms", ", ".join(idp.algorithms)), ("Groups claim", idp.groups_claim)]
    if idp.introspection is not None:
        f.append(("Introspection", idp.introspection.endpoint))
    for project, grants in idp.projects.items():
        f += [(f"  {project}: group {group}", f"profile {profile}") for group, profile in grants.groups]
        f.append((f"  {project}: everyone else", f"profile {grants.everyone}" if grants.everyone else "refused"))
    return f
