"""`Forwarder`: pure ASGI middleware of the HTTP front (inside the bearer check, where a request's
body has been read whole), sending a request whose state another live replica holds to it.

- **A handshake-era session** (`Mcp-Session-Id: RID.SDKID`): this replica's own (RID its id) goes
  on with the SDK's id; another live replica's is forwarded to it; one whose replica is gone (not
  in the table, stale, or refusing connections) is answered 404, so the client starts a new
  session. The ids this replica's SDK mints are given its prefix on the way out.
- **A 2026-07-28 call parked for its input**: the retry's `requestState` (`mcpctl:RID.TOKEN`)
  names the replica whose upstream call waits; it is forwarded there. When that replica is gone
  the retry is answered here: the router restarts the call, answering the upstream's requests
  from the retry's `inputResponses` (`gateway.asks`), so the client sees no error. A retry that
  reaches its owner twice (the replica it first went through died before answering, and the load
  balancer sent it again) gets the owner's one resumption's answer; the upstream runs once.

The cost on a request that stays here: one pass over its headers and a prefix check (its own
session id), or, without a session id, also one byte search of its body; no database round trip
(the live replicas are in memory, `registry.Registry`).
Forwarded requests keep every header of the client but the hop-by-hop ones, and gain the signed
hop header (`hop`); the answer is streamed back as it comes, SSE included.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import anyio

from mcpctl.cluster import hop
from mcpctl.cluster.registry import Registry

log = logging.getLogger("mcpctl.cluster")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION: Final = b"mcp-session-id"
STATE_PREFIX: Final = "mcpctl:"
_STATE_NEEDLE: Final = b'"mcpctl:'
_HOP_BY_HOP: Final = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade",
                                b"proxy-connection", b"content-length", hop.HEADER})
_GONE: Final = (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found: the replica '
                b'that held it is gone; start a new session"}}')


def state_owner(body: bytes) -> str | None:
    """The replica id in a tools/call's `requestState` (`mcpctl:RID.TOKEN`), or None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    params = message.get("params") if isinstance(message, dict) else None
    state = params.get("requestState") if isinstance(params, dict) else None
    if not isinstance(state, str) or not state.startswith(STATE_PREFIX):
        return None
    rid, dot, _ = state[len(STATE_PREFIX):].partition(".")
    return rid if dot else None


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Forwarder:
    """See the module docstring. `client()`: the HTTP client forwarded requests go out on."""

    def __init__(self, app: ASGIApp, registry: Registry, client: Callable[[], Any]) -> None:
        self.app, self.registry, self.client = app, registry, client
        self.prefix = registry.id.encode() + b"."
        self.forwarded = 0          # requests sent to another replica (tests read it)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = signed = None
        for key, value in scope.get("headers") or ():
            if key == SESSION:
                session = value
            elif key == hop.HEADER:
                signed = value
        if signed is None and session is not None and session.startswith(self.prefix):
            inner = session[len(self.prefix):]      # this replica's own: the SDK's id, nothing read
            scope["headers"] = [(k, inner if k == SESSION else v) for k, v in scope["headers"]]
            await self.app(scope, receive, self._stamping(send))
            return
        body, receive = await self._body(receive)
        if signed is not None:
            if not hop.verify(self.registry.secret, signed, self.registry.id, scope["method"], scope["path"],
                              session or b"", body):
                await _respond(send, 403, b'{"error":"forbidden"}')
                return
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != hop.HEADER]
        if session is not None:
            await self._session(scope, session, body, receive, send, signed is not None)
            return
        if signed is None and _STATE_NEEDLE in body:
            owner = state_owner(body)
            url = None if owner is None or owner == self.registry.id else await self.registry.url_of(owner)
            if url is not None and await self._forward(url, owner or "", scope, body, receive, send):
                return
        await self.app(scope, receive, self._stamping(send))

    async def _body(self, receive: Receive) -> tuple[bytes, Receive]:
        """The request's body (whole: `WholeBody` is outside), and a receive that replays it."""
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first: Message | None = message
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                first = None
                break
        body = b"".join(chunks)
        pending: list[Message] = [first] if first is not None else \
            [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return body, replay

    async def _session(self, scope: Scope, session: bytes, body: bytes, receive: Receive, send: Send,
                       forwarded: bool) -> None:
        if session.startswith(self.prefix):      # forwarded here: its owner
            inner = session[len(self.prefix):]
            scope["headers"] = [(k, inner if k == SESSION else v) for k, v in scope["headers"]]
            await self.app(scope, receive, self._stamping(send))
            return
        rid, dot, _ = session.decode("latin-1").partition(".")
        url = None if forwarded or not dot else await self.registry.url_of(rid)
        if url is None or not await self._forward(url, rid, scope, body, receive, send):
            await _respond(send, 404, _GONE)

    def _stamping(self, send: Send) -> Send:
        """`send`, with this replica's prefix on a session id the SDK mints."""
        prefix = self.prefix

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers") or ()
                if any(k.lower() == SESSION for k, _ in headers):
                    message["headers"] = [(k, prefix + v if k.lower() == SESSION else v) for k, v in headers]
            await send(message)

        return stamped

    async def _forward(self, base: str, target: str, scope: Scope, body: bytes, receive: Receive,
                       send: Send) -> bool:
        """Send the request to replica `target` at `base` and stream its answer back; False when that
        replica could not be reached (nothing was sent to the client then)."""
        import httpx2

        method, path = scope["method"], scope["path"]
        session = next((v for k, v in scope["headers"] if k == SESSION), b"")
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP_BY_HOP]
        headers.append((hop.HEADER, hop.sign(self.registry.secret, self.registry.id, target, method, path,
                                             session, body)))
        query = scope.get("query_string") or b""
        url = base + path + ("?" + query.decode("latin-1") if query else "")
        client = self.client()
        request = client.build_request(method, url, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx2.TransportError as e:     # refused, reset or closed before an answer: gone

            log.info("replica %s at %s unreachable: %s", target, base, e)
            return False
        self.forwarded += 1
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP]})
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch, receive, tg.cancel_scope)
                try:
                    async for chunk in response.aiter_raw():
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except httpx2.HTTPError as e:        # the owner died mid-answer: the answer ends here
                    log.info("replica %s stopped answering: %s", target, e)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        finally:
            await response.aclose()
        return True

    @staticmethod
    async def _watch(receive: Receive, scope: anyio.CancelScope) -> None:
        """The client went away: stop streaming (an SSE stream would otherwise run on)."""
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()
