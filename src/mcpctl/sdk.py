"""Every private or provisional MCP SDK API the gateway relies on, in one place.

The gateway is pinned to `mcp>=2.3,<2.4` (pyproject.toml). An SDK upgrade edits this module, and
`tests/gateway` says whether it still holds; nothing else in mcpctl touches an underscore name of
the SDK. What is relied on, and why:

- `ServerSession._connection.initialize_accepted` (`initialize_accepted`): the lean path answers
  `tools/call` and `tools/list` itself only once the SDK's init gate is open.
- `ClientSession._stamp` and `ClientSession._dispatcher.send_raw_request` (`stamp`,
  `raw_request`): a relayed request goes out as JSON with the era's envelope and comes back as the
  upstream's dict, without model validation on either side.
- `mcp.shared._context_streams.create_context_streams`: the stdio front's message streams carry
  each sender's contextvars, as the SDK's own transports do.
- `Server.middleware` (provisional): the lean path is a server middleware.
- `StreamableHTTPSessionManager._server_instances` and `._discard_session` (`open_http_sessions`,
  `end_http_session`): the open handshake-era sessions, counted per credential
  (`gateway.shares.SessionShares`), and the one of a token holding most ended at the session cap.
  `tests/gateway/test_credential_floods.py` checks both.
- `OAuthClientProvider._auth_flow`, `._initialize`, `._initialized` and `.context`
  (`token_expiry_time`, `current_tokens`, `client_info`, `oauth_metadata`): subclassed in
  `mcpctl.auth.provider` (the one exception to "only this module"; a subclass cannot live here
  without importing the auth package into every gateway start) to load the stored expiry, renew
  before expiry and once on a 401, and re-read a token file a new `mcpctl login` wrote.
  `tests/gateway/test_oauth_signin.py` checks all three against a real authorization server.
- Behaviour, not a name: the SDK's streamable-HTTP client runs each POST in a copy of the
  contextvars of the task that sent the request, and its dispatcher runs the handlers of the
  server's requests and notifications that arrive on that POST's response stream in that context
  (`mcp.shared._context_streams`, `JSONRPCDispatcher._spawn`). The gateway's call relay sets a
  contextvar (`asks.CURRENT_CALL`) before it sends: that is how a sampling, elicitation or roots
  request, a log message or progress of an HTTP upstream finds the call it belongs to.
  `tests/gateway/test_relay_requests.py` checks it.

Public API with the same purpose is used everywhere else (`ServerSession.send_request` with a
related request id, `ServerSession.send_notification`, `ServerSession.client_params` and
`client_capabilities`, `Server.get_capabilities`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.client.session import ClientSession
from mcp.shared._context_streams import create_context_streams
from pydantic import BaseModel, ConfigDict

__all__ = ["RawResult", "create_context_streams", "end_http_session", "initialize_accepted", "open_http_sessions",
           "raw_request", "set_middleware", "stamp"]

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class RawResult(BaseModel):
    """Any result, kept as the peer sent it (`model_extra`): `ServerSession.send_request` validates
    into a result type, and the relay wants the client's answer unchanged."""

    model_config = ConfigDict(extra="allow")

    def wire(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def initialize_accepted(session: Any) -> bool:
    """Whether the connection behind a `ServerSession` has passed the SDK's init gate."""
    return bool(session._connection.initialize_accepted)


def stamp(session: ClientSession, data: dict[str, Any]) -> dict[str, Any]:
    """Add the negotiated era's envelope to a request dict ({method, params}); the call options
    it sets (HTTP headers, cancellation) are returned."""
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # type: ignore[arg-type]
    return opts


async def raw_request(session: ClientSession, method: str, params: Mapping[str, Any] | None, *,
                      timeout: float | None = None, on_progress: Progress | None = None,
                      meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Send one request over `session` and return the result dict as received (no model pass).
    `meta` entries override the stamped envelope's (e.g. the caller's own capabilities)."""
    data: dict[str, Any] = {"method": method}
    if params:
        data["params"] = dict(params)
    opts = stamp(session, data)
    if meta:
        p = data.setdefault("params", {})
        p["_meta"] = {**(p.get("_meta") or {}), **meta}
    if timeout is not None:
        opts["timeout"] = timeout
    if on_progress is not None:
        opts["on_progress"] = on_progress
    return await session._dispatcher.send_raw_request(method, data.get("params"), opts)  # type: ignore[arg-type]


def set_middleware(server: Any, middleware: list[Any]) -> None:
    """Replace the server's middleware chain (the SDK's default OpenTelemetry span is dropped:
    mcpctl installs no exporter)."""
    server.middleware[:] = middleware


def open_http_sessions(manager: Any) -> dict[str, Any]:
    """The session manager's open handshake-era sessions: session id -> transport."""
    sessions: dict[str, Any] = manager._server_instances
    return sessions


async def end_http_session(manager: Any, session_id: str) -> None:
    """End one open session as the manager itself does (DELETE, idle timeout): forgotten at once,
    so its id answers 404, and its transport terminated."""
    transport = manager._server_instances.get(session_id)
    if transport is not None:
        await manager._discard_session(session_id, transport)
