"""What `mcpctl serve` checks before it starts the gateway, so that a mistake is one clear
message and exit code rather than a failure half-way through starting: the HTTP front can listen
where it was told (`check_listen`), a `--profile` exists (`check_profile`), the HTTP limits are
positive numbers (`check_limits`), and the extra Host names to accept are host names and asked
for over HTTP (`allowed_hosts`: `--allow-host` and the setting `serve.allowHosts`). Imports nothing heavy: a plain `serve` runs without typer (`cli/serve.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.resources.store import ResourceStore


def check_listen(host: str, port: int) -> None:
    """Fail early, with a clear message, when the HTTP front could not listen."""
    import socket

    from mcpctl.errors import EXIT_USAGE, MCPCtlError

    if not 0 <= port <= 65535:
        raise MCPCtlError(f"--port {port}: must be between 1 and 65535 (or 0: any free port, printed when listening)",
                          exit_code=EXIT_USAGE)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise MCPCtlError(f"--host {host!r}: cannot resolve it ({e.strerror})", exit_code=EXIT_USAGE,
                          hint="use 127.0.0.1 (the default) or an address of this machine") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as e:
            raise MCPCtlError(f"cannot listen on {host}:{port}: {e.strerror}",
                              hint="choose another --port (or stop what is using it)") from None


def check_profile(store: ResourceStore, project: str, transport: str, profile: str) -> None:
    """`--profile` makes sense (stdio only) and names a profile the project has."""
    from mcpctl.errors import EXIT_USAGE, MCPCtlError
    from mcpctl.resources.kinds import ProjectSpec

    if transport == "http":
        raise MCPCtlError("--profile is for stdio: over HTTP each token selects its profile", exit_code=EXIT_USAGE,
                          hint=f"mcpctl create token NAME --project {project} --profile {profile}")
    spec = ProjectSpec.from_resource(store.get("Project", project))
    if spec.profile(profile) is None:
        raise MCPCtlError(f"--profile {profile!r}: project {project!r} has no such profile", exit_code=EXIT_USAGE,
                          hint=f"profiles: {', '.join(spec.profile_names())} (declare more under spec.profiles)")


def check_limits(limits: dict[str, tuple[str, float, Any]]) -> None:
    """Each HTTP limit ({dest: (flag, value, default)}) is a positive, finite number."""
    import math

    from mcpctl.errors import EXIT_USAGE, MCPCtlError

    for flag, value, default in limits.values():
        if not (math.isfinite(value) and value > 0):
            raise MCPCtlError(f"{flag} {value}: must be a positive number", hint=f"the default is {default}",
                              exit_code=EXIT_USAGE)


def allowed_hosts(given: tuple[str, ...], transport: str = "http") -> tuple[str, ...]:
    """The Host names of `--allow-host` (each value comma-separated) and the setting
    `serve.allowHosts`, checked: a name or address without port, user or path (and `--allow-host`
    only over HTTP: stdio has no Host header)."""
    from mcpctl.errors import EXIT_USAGE, MCPCtlError

    if transport != "http":
        if given:
            raise MCPCtlError("--allow-host is for --transport http", hint="stdio has no Host header to check",
                              exit_code=EXIT_USAGE)
        return ()
    from mcpctl.db.config import settings, settings_path
    from mcpctl.gateway.http import authority_host


    serve = settings().get("serve")
    listed = serve.get("allowHosts") if isinstance(serve, dict) else None
    if listed is not None and not (isinstance(listed, list) and all(isinstance(n, str) for n in listed)):
        raise MCPCtlError(f"{settings_path()}: serve.allowHosts must be a list of host names",
                          hint="for example: serve: {allowHosts: [mcpctl-gateway]}")
    names = [n.strip() for value in (*given, *(listed or ())) for n in value.split(",") if n.strip()]
    for n in names:
        parsed = authority_host(n)
        if parsed is None or parsed != n.lower():
            raise MCPCtlError(f"--allow-host {n!r}: expected a host name or address (no port, user or path)",
                              hint="for example: --allow-host mcpctl-gateway (every port of it is accepted)",
                              exit_code=EXIT_USAGE)
    return tuple(n.lower() for n in names)
