"""`mcpctl describe KIND NAME`: a readable account of one object and what relates to it."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.resources.apply import projects_using
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.resources.store import ResourceStore

from ._common import cli_errors, out, safe, the_store
from ._resources import age, complete_kind, resolve_kind
from .get import _complete_name


def _kv(label: str, value: Any, *, markup: str | None = None) -> None:
    """One `Label: value` line; `value` is shown as text (`markup`: a line mcpctl composed itself)."""
    out.print(f"[bold]{safe(label) + ':':<16}[/bold] {markup if markup is not None else safe(value)}",
              highlight=False)


def _describe_server(store: ResourceStore, res: dict[str, Any]) -> None:
    s = res.get("spec", {})
    st = store.status("Server", res["metadata"]["name"])
    _kv("Transport", s.get("transport", "stdio"))
    if s.get("transport") in ("http", "sse"):
        _kv("URL", s.get("url"))
        for k, v in s.get("headers", {}).items():
            _kv(f"  header {k}", v)
        if s.get("auth"):
            from mcpctl.auth.storage import sign_in_state

            a = s["auth"]
            given = [f"scopes {' '.join(a['scopes'])}" if a.get("scopes") else "",
                     f"client {a['clientId']}" if a.get("clientId") else "",
                     f"client metadata {a['clientMetadataUrl']}" if a.get("clientMetadataUrl") else ""]
            _kv("Auth", ", ".join(["oauth", *filter(None, given)]))
            name = res["metadata"]["name"]
            state = sign_in_state(name, s.get("url"), st.get("signInRefused"))
            _kv("Sign-in", state.describe() + ("" if state.state == "signed-in" else f" (mcpctl login {name})"))
    else:
        _kv("Command", " ".join([s.get("command", ""), *s.get("args", [])]))
        if s.get("cwd"):
            _kv("Cwd", s["cwd"])
        for k, v in s.get("env", {}).items():
            _kv(f"  env {k}", v)
    t = s.get("timeouts", {})
    _kv("Timeouts", f"connect {t.get('connect', 30)}s, call {t.get('call', 120)}s")
    if s.get("maxConcurrency"):
        _kv("Max concurrency", f"{s['maxConcurrency']} calls in flight (more wait, each up to the call timeout)")
    if s.get("description"):
        _kv("Description", s["description"])
    _kv("Used by", ", ".join(projects_using(store, res["metadata"]["name"])) or "-")
    _kv("State", st.get("state", "unknown (never served)"))
    if st:
        _kv("Tools", st.get("tools", "-"))
        _kv("Protocol", st.get("protocolVersion", "-"))
        info = st.get("serverInfo") or {}
        if info:
            _kv("Server info", f"{info.get('name', '?')} {info.get('version', '')}".strip())
        _kv("Last seen", st.get("lastSeen", "-"))
        _kv("Last error", st.get("lastError") or "-")


def _describe_project(store: ResourceStore, res: dict[str, Any]) -> None:
    p = ProjectSpec.from_resource(res)        # what the project presents: resources.presents
    if p.description:
        _kv("Description", p.description)
    registered = set(store.names("Server"))
    servers = [safe(n) if n in registered else f"{safe(n)} [red](not registered)[/red]" for n in p.servers]
    _kv("Servers", None, markup=", ".join(servers) or "-")
    shown = p.presents
    _kv("Presentation", shown.mode + (" (without the PREFER favourite instruction)"
                                      if shown.mode == "favourite-index" and not shown.instruction else ""))
    _kv("Disabled", ", ".join(p.disabled) or "-")
    _kv("Enabled", ", ".join(p.enabled) or "-")
    if p.overrides:          # tools.overrides: each one side by side with `tools show --project P ID`
        _kv("Overrides", ", ".join(o.tool for o in p.overrides))
    fav = p.favourite_index
    _kv("Favourites", f"{'on' if shown.favourites else 'off'}, max {fav.max_favourites}")
    for f in fav.tools:
        out.print(f"  ★ {safe(f, markup=False)}", highlight=False, markup=False)
    se = p.search
    _kv("Search", "off" if not se.enabled else
        f"{se.ranker}, top {se.top_k}, record queries: {'yes' if se.record_queries else 'no'}")
    _kv("Names", f"{p.names.style}, max length {p.names.max_length}")
    rs = p.results
    _kv("Results", "never cut" if not rs.max_tokens else
        f"cut over {rs.max_tokens} tokens (read_result), kept {rs.keep_minutes} min, {rs.keep_megabytes} MB in all")
    for prof in p.profiles:         # calls per minute per identity (presentation.budgets)
        if prof.limits is not None:
            rates = [f"each identity {prof.limits.default.describe()}"] if prof.limits.default else []
            rates += [f"{who}: {rate.describe()}" for who, rate in prof.limits.identities]
            _kv(f"Limits ({prof.name})", "; ".join(rates))


def _describe_token(store: ResourceStore, res: dict[str, Any]) -> None:
    from mcpctl.resources import tokens
    from mcpctl.resources.kinds import TokenSpec

    tok = TokenSpec.from_resource(res)
    _kv("Project", tok.project)
    _kv("Profile", tok.profile or "(none: the full view)")
    _kv("Expires", (tok.expires or "never") + (" (expired)" if tokens.expired(tok) else ""))
    _kv("Secret", "a hash is stored" if tokens.has_hash(tok.name, store) else "missing: recreate the token "
        f"(mcpctl create token {tok.name} --project {tok.project} --force)")
    if res.get("spec", {}).get("description"):
        _kv("Description", res["spec"]["description"])


def _describe_idp(store: ResourceStore, res: dict[str, Any]) -> None:
    from mcpctl.resources.idp import IdentityProviderSpec

    idp = IdentityProviderSpec.from_resource(res)
    _kv("Issuer", idp.issuer)
    _kv("Keys", idp.jwks_uri or "the issuer's metadata (jwks_uri)")
    _kv("Audience", ", ".join(idp.audience) or "the gateway's resource URI")
    _kv("Algorithms", ", ".join(idp.algorithms))
    _kv("Groups claim", idp.groups_claim)
    if idp.introspection is not None:
        _kv("Introspection", idp.introspection.endpoint)
    for project, grants in idp.projects.items():
        for group, profile in grants.groups:
            _kv(f"  {project}: group {group}", f"profile {profile}")
        _kv(f"  {project}: everyone else", f"profile {grants.everyone}" if grants.everyone else "refused")


def register(app: typer.Typer) -> None:
    @app.command("describe", rich_help_panel="Resources")
    @cli_errors
    def describe(
        kind: Annotated[str, typer.Argument(autocompletion=complete_kind)],
        name: Annotated[str, typer.Argument(autocompletion=_complete_name)],
    ) -> None:
        """Show one object in detail, with its observed status and what uses it."""
        k = resolve_kind(kind)
        store = the_store()
        res = store.get(k.name, name)
        m = res["metadata"]
        _kv("Name", m["name"])
        _kv("Kind", k.name)
        for key, v in (m.get("labels") or {}).items():
            _kv(f"  label {key}", v)
        _kv("Created", f"{m.get('creationTimestamp', '-')} ({age(m.get('creationTimestamp'))} ago)")
        _kv("Generation", f"{m.get('generation', '-')} (resourceVersion {m.get('resourceVersion', '-')})")
        describers = {"Server": _describe_server, "Project": _describe_project, "Token": _describe_token,
                      "IdentityProvider": _describe_idp}
        describers[k.name](store, res)
