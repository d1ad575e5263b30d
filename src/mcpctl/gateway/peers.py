"""The client end of a session, as something the gateway can ask and tell.

A `Peer` is what the relays use to reach a client: `request` sends a server-to-client request
(sampling, elicitation, roots) and returns the client's answer as it sent it; `notify` sends a
notification (a log message, a resource update). Where they go:

- `CallPeer`: during one request of the client (the SDK path: HTTP in both eras, stdio before its
  lean path is settled). Requests and notifications ride that request's own channel (on streamable
  HTTP its response stream), as the spec wants for anything related to a request.
- `SessionPeer`: a handshake-era session outside any request of its own (its standalone channel:
  the GET stream over HTTP). Used for roots outside a call, resource updates and log messages
  nobody's call caused.
- the stdio lean path's own peer (`stdio._StdioPeer`): one pipe, one client, both of the above.

A 2026-07-28 client cannot be sent requests at all (`modern`): the relay turns what an upstream
asks into input-required results for it instead (`asks`).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import mcp.types as t
from mcp.shared.message import ServerMessageMetadata
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl.sdk import RawResult

LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_RANK: Final = {name: i for i, name in enumerate(LOG_LEVELS)}


class Peer(Protocol):
    @property
    def modern(self) -> bool: ...

    @property
    def capabilities(self) -> dict[str, Any] | None: ...

    async def request(self, request: Any, timeout: float | None) -> dict[str, Any]: ...

    async def notify(self, notification: Any) -> None: ...


def wire_capabilities(caps: t.ClientCapabilities | None) -> dict[str, Any] | None:
    return None if caps is None else caps.model_dump(by_alias=True, mode="json", exclude_none=True)


class CallPeer:
    """The client of one in-flight request on the SDK path."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    @property
    def modern(self) -> bool:
        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def capabilities(self) -> dict[str, Any] | None:
        return wire_capabilities(self.ctx.session.client_capabilities)

    async def request(self, request: Any, timeout: float | None) -> dict[str, Any]:
        result: RawResult = await self.ctx.session.send_request(
            request, RawResult, request_read_timeout_seconds=timeout,
            metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id))
        return result.wire()

    async def notify(self, notification: Any) -> None:
        await self.ctx.session.send_notification(notification, related_request_id=self.ctx.request_id)


class SessionPeer:
    """A handshake-era session's standalone channel (its `ServerSession`)."""

    __slots__ = ("session",)

    def __init__(self, session: Any) -> None:
        self.session = session

    @property
    def modern(self) -> bool:
        return False

    @property
    def capabilities(self) -> dict[str, Any] | None:
        return wire_capabilities(self.session.client_capabilities)

    async def request(self, request: Any, timeout: float | None) -> dict[str, Any]:
        result: RawResult = await self.session.send_request(request, RawResult, request_read_timeout_seconds=timeout)
        return result.wire()

    async def notify(self, notification: Any) -> None:
        await self.session.send_notification(notification)


def declares(capabilities: dict[str, Any] | None, request: Any) -> bool:
    """Whether a client that declared `capabilities` may be sent `request` (a typed request)."""
    if not capabilities:
        return False
    if isinstance(request, t.CreateMessageRequest):
        sampling = capabilities.get("sampling")
        if not isinstance(sampling, dict):
            return False
        p = request.params
        return not (p.tools or p.tool_choice) or isinstance(sampling.get("tools"), dict)
    if isinstance(request, t.ElicitRequest):
        elicitation = capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        mode = getattr(request.params, "mode", None) or "form"
        if mode == "url":
            return isinstance(elicitation.get("url"), dict)
        # an empty `elicitation: {}` means form mode (2025-11-25)
        return not elicitation or isinstance(elicitation.get("form"), dict)
    if isinstance(request, t.ListRootsRequest):
        return isinstance(capabilities.get("roots"), dict)
    return False


def feature(request: Any) -> str:
    if isinstance(request, t.CreateMessageRequest):
        return "Sampling"
    if isinstance(request, t.ElicitRequest):
        return "Elicitation"
    return "List roots"


def log_allowed(level: str, threshold: str | None) -> bool:
    """A message at `level` for a client that asked for `threshold` and above (None: all)."""
    return threshold is None or LOG_RANK.get(level, 0) >= LOG_RANK.get(threshold, 0)
