"""What `mcpctl doctor` says of one server after listing it (or trying to): connected or why not
(a sign-in the server refused, a stdio server's stderr log, a remote server's URL), the tools over
the token budget, descriptions carrying what tool poisoning uses, definitions that differ from their
pins. Hints name the project and the tools when doctor knows them (`--project P` only when it does not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpctl import paths
from mcpctl.resources.kinds import ServerSpec

from .doctor_report import MAX_FLAGS_SHOWN, DoctorReport, era, token_kind, tokens

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.gateway.refresh import Listed


def _refused_now(report: DoctorReport, spec: ServerSpec) -> bool:
    """After listing: the server refused the stored sign-in just now (this process saw it), which
    the token file's own expiry cannot say: the sign-in check says so, with the one command that heals it."""
    from mcpctl.auth import expiry

    if spec.auth is None or not expiry.is_expired(spec.name):
        return False
    what = "sign-in expired (refused by the server)" if expiry.refused(spec.name) else "not signed in"
    report.replace(f"server/{spec.name}", "sign-in", "fail", f"{what} (OAuth)", f"mcpctl login {spec.name}")
    return True


def _failed_hint(spec: ServerSpec) -> str:
    """Where to look when a server could not be listed: a stdio server's stderr log; a remote one has none."""
    name = spec.name
    if spec.transport == "stdio":
        return (f"see the server's stderr: {paths.log_dir() / 'upstreams' / (name + '.log')}; "
                f"change it with mcpctl edit server {name}")
    return f"check that {spec.url} is up and is the server's MCP endpoint; change it with mcpctl edit server {name}"


def _project_flag(projects: list[str]) -> str:
    """`--project NAME` in a hint: the project it is about when doctor knows it (the one asked for, or
    the one project using the server), else the placeholder with the projects to choose from."""
    if len(projects) == 1:
        return f"--project {projects[0]}"
    return "--project P" + (f" (P: {', '.join(projects)})" if projects else "")


def _quoted(ids: list[str]) -> str:
    return " ".join(f"'{i}'" for i in ids)


def listing(report: DoctorReport, spec: ServerSpec, result: Listed | None, probed: bool, startable: bool,
            tool_budget: int, projects: list[str], cache: CatalogueCache) -> None:
    name = spec.name
    flag = _project_flag(projects)
    scope = f"server/{name}"
    if not startable:
        report.add(scope, "connect", "info", "not started: fix the configuration problems above first")
    elif probed:
        if result is None or not result.ok:
            error = result.error if result is not None else "no result"
            hint = f"mcpctl login {name}" if _refused_now(report, spec) else _failed_hint(spec)
            report.add(scope, "connect", "fail", f"cannot connect and list: {error}", hint)
        else:
            report.add(scope, "connect", "ok", f"connected and listed: {result.tools} tool(s), "
                       f"{era(result.protocol)}")
    tools = cache.read_server_tools(name)
    if tools is None:
        if not probed and startable:
            report.add(scope, "connect", "warn", "never listed", "mcpctl doctor (without --no-connect) or "
                       f"mcpctl tools list {flag} --refresh")
        return
    heavy = sorted(((tokens(t), str(t.get("name"))) for t in tools), reverse=True)
    heavy = [(n, t) for n, t in heavy if n > tool_budget]
    if heavy:
        listed = ", ".join(f"{t} (≈{n})" for n, t in heavy[:5]) + (" …" if len(heavy) > 5 else "")
        report.add(scope, "tokens", "warn", f"{len(heavy)} tool(s) over the budget of {tool_budget} tokens "
                   f"({token_kind()}): {listed}",
                   f"disable what the project does not need: mcpctl tools disable {flag} "
                   f"{_quoted([f'{name}/{t}' for _, t in heavy])}")
    else:
        total = sum(tokens(t) for t in tools)
        report.add(scope, "tokens", "ok", f"{len(tools)} tool definition(s), ≈{total:,} tokens ({token_kind()}), "
                   f"none over {tool_budget}")
    _descriptions(report, name, tools, flag)
    _pinned(report, name, tools, flag)


def _pinned(report: DoctorReport, name: str, tools: list[dict[str, Any]], flag: str) -> None:
    """A warning when the listing differs from the definitions pinned at the server's first listing."""
    from mcpctl.catalogue.pins import changes

    found = changes(name, tools)
    if found:
        shown = ", ".join(f"{c.tool} ({c.kind})" for c in found[:MAX_FLAGS_SHOWN])
        more = " …" if len(found) > MAX_FLAGS_SHOWN else ""
        report.add(f"server/{name}", "pinned", "warn", f"{len(found)} tool definition(s) differ from those pinned "
                   f"at its first listing: {shown}{more}",
                   f"read the diffs: mcpctl tools changes {flag}; accept them: mcpctl tools approve {flag} "
                   f"{' '.join(dict.fromkeys(c.id for c in found))}")


def _descriptions(report: DoctorReport, name: str, tools: list[dict[str, Any]], flag: str) -> None:
    """A warning naming each tool whose description carries what tool poisoning uses (`catalogue.poison`);
    nothing when none does (flagged, never blocked)."""
    from mcpctl.catalogue.poison import scan_definitions

    flags = scan_definitions((f"{name}/{t.get('name')}", t) for t in tools)
    if not flags:
        return
    shown = "; ".join(f"{f.tool}: {f.why}: {f.text!r}" for f in flags[:MAX_FLAGS_SHOWN])
    more = f" … and {len(flags) - MAX_FLAGS_SHOWN} more" if len(flags) > MAX_FLAGS_SHOWN else ""
    tools_flagged = len({f.tool for f in flags})
    report.add(f"server/{name}", "descriptions", "warn",
               f"{tools_flagged} tool description(s) carry what tool poisoning uses: {shown}{more}",
               f"read them (mcpctl surface {flag} lists every flag); if one is not what the server should say, "
               f"mcpctl tools disable {flag} {_quoted(list(dict.fromkeys(f.tool for f in flags)))}")
