"""`mcpctl serve --transport http`: the streamable-HTTP front of the gateway.

The endpoint is `http://HOST:PORT/mcp`, loopback by default, with DNS-rebinding protection
(Host/Origin checks: loopback names, `--host`, and the names `--allow-host` adds) and a required
bearer token (created 0600 on the first start, compared in
constant time; the scheme name is case-insensitive). Served by uvicorn's h11 protocol with a guard
(`http_guard`) for what uvicorn does not bound: a connection must finish each request
head within the header timeout, connections are capped, and connections that have not yet shown
the token are capped lower, the oldest closed first. Refusals are logged one line per burst.
The SDK's session manager caps handshake-era sessions and reaps idle ones. The gateway handles
signals itself. `GET /healthz` and `GET /readyz` (`Health`, `Readiness`) answer probes before the
Host and token checks, and say nothing else.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
import secrets as _secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpctl import paths
from mcpctl.auth.bearer import BearerAuth
from mcpctl.gateway.http_guard import (
    CountLogRecords,
    Guard,
    HttpLimits,
    Refusals,
    connection_budget,
    deepen_listen_queues,
    guarded_protocol,
)
from mcpctl.gateway.shares import SessionShares
from mcpctl.resources.store import ResourceStore, atomic_write
from mcpctl.resources.tokens import TokenIndex
from mcpctl.sdk import end_http_session, open_http_sessions

if TYPE_CHECKING:
    from mcpctl.cluster.join import Cluster
    from mcpctl.gateway.front import Gateway
    from mcpctl.telemetry import Telemetry

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("mcpctl.gateway.http")


def token_path(project: str) -> Path:
    return paths.state_dir() / "tokens" / f"{project}.token"


def load_or_create_token(path: Path) -> str:
    """Read the bearer token from `path`, creating it (0600) with a fresh token if missing."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if token:
        return token
    token = _secrets.token_urlsafe(32)
    atomic_write(path, token + "\n", mode=0o600)
    return token


# -- request bodies ------------------------------------------------------------------------------------


class WholeBody:
    """Pure ASGI middleware: a POST's body is read whole before the app sees it (at most `limit`
    bytes, the SDK's own limit: more is 413), so a request that ends mid-body (its client left, or
    the guard closed it at the body timeout) is a count in the refusal summary instead of the
    SDK's traceback per request."""

    def __init__(self, app: ASGIApp, note: Callable[[str], None], limit: int) -> None:
        self.app, self.note, self.limit = app, note, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                self.note("dropped")
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                body = b"Request body too large"
                await send({"type": "http.response.start", "status": 413, "headers": [
                    (b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        whole: MutableMapping[str, Any] | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> MutableMapping[str, Any]:
            nonlocal whole
            if whole is not None:
                message, whole = whole, None
                return message
            return await receive()

        await self.app(scope, replay, send)


# -- DNS-rebinding protection: the Host and Origin headers, parsed strictly ----------------------

_AUTHORITY: Final = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?")


def authority_host(authority: str) -> str | None:
    """The host of an HTTP authority `host[:port]` (lowercased; an IPv6 literal in brackets),
    or None unless the whole value is exactly that: no userinfo (`a@b`), nothing after the port,
    no spaces, a port of digits only."""
    m = _AUTHORITY.fullmatch(authority)
    if m is None:
        return None
    return f"[{m['v6'].lower()}]" if m["v6"] is not None else m["name"].lower()


def origin_host(origin: str) -> str | None:
    """The host of an Origin `http(s)://authority`, or None unless it is exactly that."""
    scheme, sep, authority = origin.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    return authority_host(authority)


class HostCheck:
    """Pure ASGI middleware: a request's Host (and Origin, when sent) must name one of `hosts`,
    parsed strictly (`authority_host`): the SDK's own check, which runs after this one, matches
    prefixes, so `Host: 127.0.0.1:80@evil` would pass it."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)

    def allowed(self, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """None, or the (status, message) refusing a request with these headers."""
        host = origin = None
        for key, value in headers:
            k = key.lower()
            if k == b"host":
                if host is not None:
                    return 400, "more than one Host header"
                host = value.decode("latin-1")
            elif k == b"origin":
                origin = value.decode("latin-1")
        if host is None or authority_host(host) not in self.hosts:
            return 421, "Invalid Host header"
        if origin is not None and origin_host(origin) not in self.hosts:
            return 403, "Invalid Origin header"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers") or ()
            refused = self.allowed(headers)
            if refused is None and any(k.lower() in (b"host", b"origin") and v != v.lower() for k, v in headers):
                # host names are case-insensitive (RFC 9110): the SDK's own check, after this one, is not
                scope["headers"] = [(k, v.lower() if k.lower() in (b"host", b"origin") else v) for k, v in headers]
            if refused is not None:
                status, message = refused
                body = message.encode()
                await send({"type": "http.response.start", "status": status, "headers": [
                    (b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


# -- health: answered before the Host and token checks, saying nothing else ----------------------

HEALTH_PATHS: Final = ("/healthz", "/readyz")


class Readiness:
    """Why the gateway is not ready, or None: stopping, its first lists would still wait for
    upstreams never listed (`Pool.contacted`), or (with a database) the database does not answer.
    The database is asked at most once a second, one question at a time, whoever asks."""

    def __init__(self, gw: Gateway, stop: anyio.Event, database: str | None, timeout: float = 2.0) -> None:
        self.gw, self.stop, self.database, self.timeout = gw, stop, database, timeout
        self.answer: str | None = "starting"
        self.asked = -1.0
        self.pinging = False
        self.lock = anyio.Lock()

    async def __call__(self) -> str | None:
        if self.stop.is_set():
            return "shutting down"
        if not self.gw.pool.contacted():
            return "starting: upstreams not listed yet"
        return None if self.database is None else await self._database()

    async def _database(self) -> str | None:
        async with self.lock:
            if anyio.current_time() - self.asked >= 1.0 and not self.pinging:
                self.pinging, self.answer = True, "database unreachable"
                with anyio.move_on_after(self.timeout + 0.5):      # a ping still waiting is left to end
                    if await anyio.to_thread.run_sync(self._ping, abandon_on_cancel=True):
                        self.answer = None
                self.asked = anyio.current_time()
            return self.answer

    def _ping(self) -> bool:
        from mcpctl.db.pool import ping

        try:
            return self.database is not None and ping(self.database, self.timeout)
        finally:
            self.pinging = False


class Health:
    """Pure ASGI middleware: `GET /healthz` (200 while the process serves) and `GET /readyz` (200,
    or 503 with the reason from `ready`), without a token or a Host check: a probe's Host is a pod's
    address, and the answers name no tool, count nothing and carry no secret."""

    def __init__(self, app: ASGIApp, ready: Callable[[], Awaitable[str | None]]) -> None:
        self.app, self.ready = app, ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        extra: list[tuple[bytes, bytes]] = []
        if scope.get("method") not in ("GET", "HEAD"):
            status, body = 405, b'{"status":"method not allowed"}'
            extra = [(b"allow", b"GET, HEAD")]
        elif scope["path"] == "/healthz":
            status, body = 200, b'{"status":"ok"}'
        else:
            reason = await self.ready()
            status, body = (200, b'{"status":"ready"}') if reason is None else \
                (503, json.dumps({"status": "not ready", "reason": reason}).encode())
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), *extra]})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})


# -- refusals: one log line per burst ------------------------------------------------------------


async def serve_http(gw: Gateway, store: ResourceStore, host: str, port: int, token: str, stop: anyio.Event,
                     limits: HttpLimits | None = None, on_listening: Callable[[int], None] | None = None,
                     allow_hosts: Iterable[str] = (), database: str | None = None, tele: Telemetry | None = None,
                     cluster: Cluster | None = None) -> None:
    """Serve until `stop`; `on_listening(port)` once the socket listens (with `port` 0, the
    port the system chose: a test or a supervisor reads it instead of guessing a free one).
    `allow_hosts`: Host names accepted besides loopback's and `host` (`serve --allow-host`, a
    Service's name); `database`: the URL /readyz asks (None: files, nothing to ask); `tele`: metrics
    at /metrics, behind the token (`telemetry`); `cluster`: the other replicas on the database, to
    forward to (`cluster.forward`)."""
    import uvicorn
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

    limits = limits or HttpLimits()
    loopback = host in ("127.0.0.1", "localhost", "::1")
    names = ["127.0.0.1", "localhost", "[::1]"] + ([] if loopback else [url_host(host)])
    names += [n.lower() for n in allow_hosts if n.lower() not in names]
    hosts = [h for n in names for h in (n, f"{n}:*")]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=origins)
    app = gw.server.streamable_http_app(host=host, transport_security=security,
                                        max_sessions=limits.max_sessions,
                                        session_idle_timeout=limits.session_idle_timeout)
    max_connections, accept_burst = connection_budget(limits.max_connections)
    refusals = Refusals(limits, max_connections)
    manager = gw.server.session_manager
    per_credential = SessionShares(app, limits.max_sessions_per_credential, lambda: open_http_sessions(manager),
                                   refusals.note, limits.max_sessions, lambda sid: end_http_session(manager, sid))
    gw.asks.shares.limit = limits.max_parked_per_credential
    bound = [port]       # the port listened on (0 until then): the resource URI's

    def identities() -> Any:
        from mcpctl.auth.identity import load

        return load(gw.project_name, store.list("IdentityProvider"), f"http://{url_host(host)}:{bound[0]}/mcp")

    inner = WholeBody(per_credential if cluster is None else cluster.forwarder(per_credential), refusals.note,
                      DEFAULT_MAX_REQUEST_BODY_SIZE)
    auth = BearerAuth(inner if tele is None else tele.asgi(inner), token,
                      TokenIndex(gw.project_name, store), identities)
    front = Health(HostCheck(auth, names), Readiness(gw, stop, database))
    guard = Guard(auth, limits, max_connections, refusals)
    config = uvicorn.Config(front, host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=3, access_log=False, http=guarded_protocol(guard),
                            ws="none",    # MCP has no WebSocket transport; an upgrade would bypass the guard
                            timeout_keep_alive=limits.idle_timeout,  # type: ignore[arg-type]  # int in the stub
                            backlog=accept_burst)

    class _Server(uvicorn.Server):
        def capture_signals(self) -> Any:   # the gateway handles signals itself
            import contextlib

            return contextlib.nullcontext()

        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets)
            deepen_listen_queues(self.servers)
            if self.started:
                bound[0] = next(s.getsockname()[1] for srv in self.servers for s in srv.sockets)
                auth.identities()       # read once before the first request
                if on_listening is not None:
                    on_listening(bound[0])

    server = _Server(config)
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()

    def on_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM) \
                and "accept" in str(context.get("message", "")):
            refusals.note("fds")    # asyncio retries accept() a second later
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    filters = (
        (logging.getLogger("mcp.server.streamable_http_manager"),
         CountLogRecords(refusals, {"Refusing to open a new session": "sessions"})),
        (logging.getLogger("uvicorn.error"), CountLogRecords(refusals, {"Invalid HTTP request": "invalid"})),
    )

    async def watch() -> None:
        await stop.wait()
        server.should_exit = True

    loop.set_exception_handler(on_loop_error)
    for logger, f in filters:
        logger.addFilter(f)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await server.serve()
            tg.cancel_scope.cancel()
    finally:
        for logger, f in filters:
            logger.removeFilter(f)
        loop.set_exception_handler(previous)
        refusals.flush()


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
