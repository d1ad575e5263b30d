"""`mcpctl serve --project P [--transport stdio|http] [--host H] [--port N] [--token-file F] [--allow-host NAME]`.

The gateway is a long-lived process, so a plain command line is served by `lean_main`, without
typer or rich (several MB of resident memory for nothing). Both parsers read their options from
`OPTIONS`; whatever `lean_main` does not recognise (`--help`, a bad value, an unknown option,
shell completion) goes to the typer command, which then behaves exactly as before. What is
checked before the gateway starts (where it listens, the profile, the Host names) is
`mcpctl.preflight`'s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import typer

    from mcpctl.storage import Storage

TRANSPORTS = ("stdio", "http")
MAX_PAGE_SIZE = 10_000      # `--page-size` at most


class _Option(NamedTuple):     # not a dataclass: `serve --shared`'s relay loads this module (mcpctl.share)
    dest: str
    flags: tuple[str, ...]
    kind: type
    default: Any
    help: str
    many: bool = False      # repeatable: the values are collected in a tuple


OPTIONS: tuple[_Option, ...] = (
    _Option("project", ("--project", "-p"), str, ..., "The project to serve."),
    _Option("transport", ("--transport",), str, "stdio", "stdio (one local client) or http (streamable HTTP)."),
    _Option("host", ("--host",), str, "127.0.0.1", "HTTP: interface to bind (loopback by default)."),
    _Option("port", ("--port",), int, 8765, "HTTP: port to listen on (0: any free one, printed when listening)."),
    _Option("allow_host", ("--allow-host",), str, None,
            "HTTP: a Host name to accept besides loopback's and --host's (a Service or load balancer name; "
            "repeatable or comma-separated; any port). Also the setting serve.allowHosts in settings.yaml. "
            "Other Host headers are refused (DNS-rebinding protection).", many=True),
    _Option("advertise_url", ("--advertise-url",), str, None,
            "HTTP with a database: the URL other replicas reach this one at (default: MCPCTL_ADVERTISE_URL, "
            "else the bound address; docs/team.md)."),
    _Option("token_file", ("--token-file",), Path, None,
            "HTTP: file holding the bearer token (created with a fresh token, mode 0600, if missing). "
            "Default: <state dir>/tokens/<project>.token."),
    _Option("header_timeout", ("--header-timeout",), float, 10.0,
            "HTTP: seconds a connection has to send a complete request head (from connecting, or from the "
            "first byte after a response); then it is closed."),
    _Option("body_timeout", ("--body-timeout",), float, 30.0,
            "HTTP: seconds a request has to send its whole body once its head is in; then its connection is "
            "closed."),
    _Option("idle_timeout", ("--idle-timeout",), float, 15.0,
            "HTTP: seconds a kept-alive connection may sit idle between requests; then it is closed."),
    _Option("max_connections", ("--max-connections",), int, 512,
            "HTTP: most open connections (lowered to fit the open-file limit); a quarter of them may be "
            "connections that have not shown the token yet, and the oldest of those is closed for a new one."),
    _Option("max_sessions", ("--max-sessions",), int, 256,
            "HTTP: most open protocol sessions (handshake-era clients); a new one beyond it gets 503."),
    _Option("session_idle_timeout", ("--session-idle-timeout",), float, 300.0,
            "HTTP: seconds a session may go without a request in flight (an open GET stream counts); "
            "then it is closed and its id answers 404."),
    _Option("max_connections_per_credential", ("--max-connections-per-credential",), int, 128,
            "HTTP: connections one token may keep busy (each token, and the project's own, has its own share); "
            "over it its oldest idle connection is closed, or the new request gets 429 when all are busy."),
    _Option("max_sessions_per_credential", ("--max-sessions-per-credential",), int, 64,
            "HTTP: protocol sessions one token may hold open; a new one beyond it gets 429."),
    _Option("max_parked_per_credential", ("--max-parked-per-credential",), int, 256,
            "HTTP: calls of 2026-07-28 clients of one token waiting for their input (sampling, elicitation) "
            "at once; one more gets a JSON-RPC error."),
    _Option("profile", ("--profile",), str, None,
            "stdio: serve this profile's view of the project (read-only, or one the project declares). "
            "Over HTTP each token selects its own (mcpctl create token)."),
    _Option("page_size", ("--page-size",), int, 0,
            "Items per page of tools/list, resources/list, resources/templates/list and prompts/list "
            f"(0: each list is one page; at most {MAX_PAGE_SIZE}). Cursors a client sends are honoured either way."),
    _Option("verbose", ("--verbose", "-v"), bool, False, "Log progress to stderr too."),
)
HTTP_LIMITS = ("header_timeout", "body_timeout", "idle_timeout", "max_connections", "max_sessions",
               "session_idle_timeout", "max_connections_per_credential", "max_sessions_per_credential",
               "max_parked_per_credential")
_OPT = {o.dest: o for o in OPTIONS}
_BY_FLAG = {flag: o for o in OPTIONS for flag in o.flags}


def register(app: typer.Typer) -> None:
    import typer

    from ._common import cli_errors, complete_projects

    def opt(dest: str, **extra: Any) -> Any:
        o = _OPT[dest]
        return typer.Option(o.default, *o.flags, help=o.help, **extra)

    @app.command("serve", rich_help_panel="Gateway")
    @cli_errors
    def serve(
        project: str = opt("project", autocompletion=complete_projects),
        transport: str = opt("transport"),
        host: str = opt("host"),
        port: int = opt("port"),
        allow_host: list[str] | None = opt("allow_host"),
        advertise_url: str | None = opt("advertise_url"),
        token_file: Path | None = opt("token_file"),
        header_timeout: float = opt("header_timeout"),
        body_timeout: float = opt("body_timeout"),
        idle_timeout: float = opt("idle_timeout"),
        max_connections: int = opt("max_connections"),
        max_sessions: int = opt("max_sessions"),
        session_idle_timeout: float = opt("session_idle_timeout"),
        max_connections_per_credential: int = opt("max_connections_per_credential"),
        max_sessions_per_credential: int = opt("max_sessions_per_credential"),
        max_parked_per_credential: int = opt("max_parked_per_credential"),
        profile: str | None = opt("profile"),
        page_size: int = opt("page_size"),
        verbose: bool = opt("verbose"),
    ) -> None:
        """Serve a project's curated catalogue as one MCP server.

        stdio is for one local client (Claude Code, Codex, ...): stdout carries only the protocol.
        http serves several clients at http://HOST:PORT/mcp with a required bearer token;
        GET /healthz and /readyz answer probes without one (docs/team.md). --shared (or MCPCTL_SHARED=1):
        stdio sessions of one project share one gateway process (docs/internals.md).
        """
        if transport not in TRANSPORTS:
            raise typer.BadParameter("must be stdio or http", param_hint="'--transport'")
        if not _page_size_ok(page_size):
            raise typer.BadParameter(f"{page_size}: must be between 0 (one page) and {MAX_PAGE_SIZE}",
                                     param_hint="'--page-size'")
        from ._common import storage

        _serve(storage(), project, transport, host, port, token_file, verbose, header_timeout=header_timeout,
               body_timeout=body_timeout, idle_timeout=idle_timeout, max_connections=max_connections,
               max_sessions=max_sessions, session_idle_timeout=session_idle_timeout,
               max_connections_per_credential=max_connections_per_credential,
               max_sessions_per_credential=max_sessions_per_credential,
               max_parked_per_credential=max_parked_per_credential, profile=profile, page_size=page_size,
               allow_host=tuple(allow_host or ()), advertise_url=advertise_url)


def _page_size_ok(n: int) -> bool:
    return 0 <= n <= MAX_PAGE_SIZE


def _serve(storage: Storage, project: str, transport: str, host: str, port: int, token_file: Path | None, verbose: bool,
           profile: str | None = None, page_size: int = 0, allow_host: tuple[str, ...] = (),
           advertise_url: str | None = None, **limits: Any) -> None:
    early = None
    http_limits = None
    from mcpctl import preflight
    from mcpctl.share import relay

    if profile is not None:
        preflight.check_profile(storage.store, project, transport, profile)
    if (shared := relay.daemon_socket()) is not None:     # the gateway `serve --shared` relays to
        from mcpctl.share.daemon import run_daemon
        return run_daemon(storage, shared, project, profile, page_size, verbose)
    if transport != "http":
        preflight.allowed_hosts(allow_host, transport)
    else:
        preflight.check_limits({k: (_OPT[k].flags[0], v, _OPT[k].default) for k, v in limits.items()})
        preflight.check_listen(host, port)
        allow_host = preflight.allowed_hosts(allow_host)
    if transport == "stdio":
        # Before the SDK import (most of the start-up): read the project and its cache, and answer
        # the client's first messages meanwhile when the last run left what they need.
        from mcpctl.gateway import early as early_front

        early = early_front.start(storage.store, storage.cache, project, profile, page_size)
    from mcpctl.gateway import http, http_guard, run

    if transport == "http":
        http_limits = http_guard.HttpLimits(**{k: limits.get(k, _OPT[k].default) for k in HTTP_LIMITS})
    log_path = run.setup_logging(project, verbose=verbose)

    def ready(where: str) -> None:
        if where != "stdio":
            from ._common import err

            tpath = token_file or http.token_path(project)
            err.print(f"mcpctl: serving project {project!r} at {where}", markup=False)
            err.print(f"  header: Authorization: Bearer $(cat {tpath})", markup=False)
            err.print(f"  log: {log_path}", markup=False)

    run.run(project, storage, transport=transport, host=host, port=port, token_file=token_file, on_ready=ready,
            early=early, http_limits=http_limits, profile=profile, page_size=page_size, allow_hosts=allow_host,
            advertise_url=advertise_url)


def parse_lean(argv: list[str]) -> dict[str, Any] | None:
    """The options of a plain `serve` command line, or None for anything typer should handle."""
    values = {o.dest: o.default for o in OPTIONS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        o = _BY_FLAG.get(name)
        if o is None:
            return None
        i += 1
        if o.kind is bool:
            if eq:
                return None
            values[o.dest] = True
            continue
        if eq:
            raw = inline
        elif i < len(argv):
            raw = argv[i]
            i += 1
        else:
            return None
        if not raw or raw.startswith("-"):
            return None
        try:
            values[o.dest] = (*(values[o.dest] or ()), raw) if o.many else o.kind(raw)
        except ValueError:
            return None
    values["allow_host"] = tuple(values["allow_host"] or ())
    if values["project"] is ... or values["transport"] not in TRANSPORTS or not _page_size_ok(values["page_size"]):
        return None
    return values


def lean_main(argv: list[str], storage: Storage) -> bool:
    """Run `serve` with `argv` (after the verb) without typer, on the `storage` the CLI's root
    opened; False if typer should parse it."""
    if os.environ.get("_MCPCTL_COMPLETE"):
        return False
    values = parse_lean(argv)
    if values is None:
        return False
    from mcpctl.errors import MCPCtlError

    try:
        _serve(storage, **values)
    except MCPCtlError as e:    # the same report as _common.cli_errors
        from ._common import report_error

        report_error(e)
        sys.exit(e.exit_code)
    return True
