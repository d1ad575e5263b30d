"""`GET /metrics` on the gateway's HTTP front (pure ASGI), inside the bearer check: a scrape
needs a token as `/mcp` does (the project's own, or any `Token` of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcpctl.telemetry.metrics import Metrics

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

METRICS_PATH: Final = "/metrics"


class MetricsEndpoint:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != METRICS_PATH:
            await self.app(scope, receive, send)
            return
        extra: list[tuple[bytes, bytes]] = []
        if scope.get("method") not in ("GET", "HEAD"):
            status, body, kind = 405, b"method not allowed\n", "text/plain"
            extra = [(b"allow", b"GET, HEAD")]
        else:
            status = 200
            body, kind = self.metrics.exposition()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), *extra]})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})
