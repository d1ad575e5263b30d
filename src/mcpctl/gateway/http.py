"""`mcpctl serve --transport http`: the streamable-HTTP front of the gateway.

The endpoint is `http://HOST:PORT/mcp`, loopback by default, with DNS-rebinding protection
(Host/Origin checks) and a required bearer token (created 0600 on the first start, compared in
constant time). Served by uvicorn; the gateway handles signals itself.
"""

from __future__ import annotations

import hmac
import secrets as _secrets
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio

from mcpctl import paths
from mcpctl.gateway.front import Gateway
from mcpctl.resources.store import atomic_write

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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


class BearerAuth:
    """Pure ASGI middleware: every HTTP request needs `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            got = b""
            for key, value in scope.get("headers") or ():
                if key == b"authorization":
                    got = value
                    break
            if not hmac.compare_digest(got, self.expected):
                body = b'{"error":"unauthorized","error_description":"missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="mcpctl"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve_http(gw: Gateway, host: str, port: int, token: str, stop: anyio.Event) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    loopback = host in ("127.0.0.1", "localhost", "::1")
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"] + ([] if loopback else [f"{host}:*"])
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] + \
        ([] if loopback else [f"http://{host}:*", f"https://{host}:*"])
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=origins)
    app = gw.server.streamable_http_app(host=host, transport_security=security)
    config = uvicorn.Config(BearerAuth(app, token), host=host, port=port, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=3, access_log=False)

    class _Server(uvicorn.Server):
        def capture_signals(self) -> Any:   # the gateway handles signals itself
            import contextlib

            return contextlib.nullcontext()

    server = _Server(config)

    async def watch() -> None:
        await stop.wait()
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await server.serve()
        tg.cancel_scope.cancel()


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
