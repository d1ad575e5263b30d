"""The gateway's stdio transport: the SDK's message streams over non-blocking pipes.

The SDK's `stdio_server()` reads and writes through worker threads (one thread hop per
message each way), which is most of a relayed call's cost. This transport does the same job
with the event loop's own pipe transports when stdin and stdout are pipes or sockets (how
MCP clients start servers), and falls back to the SDK's transport otherwise (a regular file,
a closed descriptor). Like the SDK, it diverts fd 0 to /dev/null and fd 1 to stderr while
serving, so a stray print or a child process can never write into the protocol stream.

The hot path: once the connection's era is settled (`initialize` + `notifications/initialized`,
or a 2026-07-28 request envelope), `tools/call` and `tools/list` requests are answered here,
straight from the parsed JSON (the list is pre-serialized, a call's result is relayed as the
upstream sent it), with their cancellation and progress. Everything else, including every
request before the era is settled, goes through the SDK server unchanged.

Before all this, `gateway.early` may have answered the client's first messages while the SDK
was still loading; `gateway_stdio(gw, early)` takes over what it read (see that module) and
records the SDK's initialize/discover results it needs for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError
from mcp.server.stdio import stdio_server
from mcp.types.jsonrpc import REQUEST_TIMEOUT
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from mcpctl.gateway.early import (
    RECORDED_METHODS,
    EarlyFront,
    Handover,
    is_stream_fd,
    parse_line,
    request_key,
    save_record,
)
from mcpctl.gateway.front import Caller, Gateway
from mcpctl.gateway.sessions import LOG_LEVEL_META
from mcpctl.gateway.stdio_pipes import (
    Pump,
    closed_stdio,
    connect_pipes,
    pollable,
    restore_stdio,
    stdio_open,
    take_stdio,
)
from mcpctl.upstream.stdio import Coalescer

log = logging.getLogger("mcpctl.gateway")

_ASK_PREFIX: Final = "mcpctl-c-"       # ids of the gateway's own requests to the client
_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _StdioPeer:
    """The stdio client, to ask (sampling, elicitation, roots) and to tell (log messages, resource
    updates): requests carry ids of the gateway's own (`mcpctl-c-N`), and the lean path takes
    their responses out of the input before the SDK sees them."""

    def __init__(self, hot: _HotPath) -> None:
        self.hot = hot
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._n = 0

    @property
    def modern(self) -> bool:
        return self.hot.era == "modern"

    @property
    def capabilities(self) -> dict[str, Any] | None:
        return self.hot.capabilities

    async def request(self, request: Any, timeout: float | None) -> dict[str, Any]:
        self._n += 1
        rid = f"{_ASK_PREFIX}{self._n}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        answered = False
        try:
            self.hot.write(_dumps({"jsonrpc": "2.0", "id": rid,
                                   **request.model_dump(by_alias=True, mode="json", exclude_none=True)}))
            async with asyncio.timeout(timeout):
                reply = await fut
            answered = True
        except TimeoutError:
            raise MCPError(code=REQUEST_TIMEOUT, message=f"Request '{request.method}' timed out") from None
        finally:
            self.pending.pop(rid, None)
            if not answered:
                self.hot.write(_dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": rid, "reason": "the upstream's call ended"}}))
        error = reply.get("error")
        if error is not None:
            err = error if isinstance(error, dict) else {}
            raise MCPError(code=int(err.get("code", -32603)), message=str(err.get("message", "error")),
                           data=err.get("data"))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, notification: Any) -> None:
        self.hot.write(_dumps({"jsonrpc": "2.0", **notification.model_dump(by_alias=True, mode="json",
                                                                          exclude_none=True)}))

    def take(self, line: bytes) -> bool:
        """Deliver `line` if it answers one of the gateway's requests to the client."""
        if _ASK_PREFIX.encode() not in line:
            return False
        msg = parse_line(line)
        if msg is None:
            return False
        if not isinstance(msg, dict) or "method" in msg:
            return False
        fut = self.pending.get(msg.get("id"))  # type: ignore[arg-type]
        if fut is None:
            return False
        if not fut.done():
            fut.set_result(msg)
        return True


class _HotPath:
    """Answers tools/call and tools/list of a settled connection without the SDK's layers."""

    def __init__(self, gw: Gateway, write: Any) -> None:
        self.gw = gw
        self.write = write
        self.era: str | None = None          # "legacy" | "modern", decided by the first request
        self.legacy_version = LATEST_HANDSHAKE_VERSION
        self.ready = False
        self.inflight: dict[Any, asyncio.Task[None]] = {}
        self.capabilities: dict[str, Any] | None = None   # what the client declared (handshake era)
        self.peer = _StdioPeer(self)
        self.caller = Caller(gw.new_session_id(), profile=gw.stdio_profile, peer=self.peer)
        gw.bind_stdio(self.caller)                 # stdio is one session, whichever path answers
        gw.sessions.stdio_peer = self.peer
        self.call = gw.router.call_tool
        self.unregister = gw.add_notifier(self._notify)

    def _notify(self, method: str) -> None:
        if self.era == "legacy" and self.ready:
            self.write(_dumps({"jsonrpc": "2.0", "method": method}))

    def observe(self, line: bytes) -> None:
        """Follow the handshake on messages the SDK handles (cheap substring checks first)."""
        if self.ready:
            return
        if b'"initialize"' in line or b"notifications/initialized" in line or self.era is None:
            msg = parse_line(line)
            if msg is None:
                return
            if not isinstance(msg, dict):
                return
            method, params = msg.get("method"), msg.get("params") or {}
            if method == "initialize" and self.era is None and isinstance(params, dict):
                self.era = "legacy"
                requested = params.get("protocolVersion")
                self.legacy_version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS \
                    else LATEST_HANDSHAKE_VERSION
                caps = params.get("capabilities")
                self.capabilities = caps if isinstance(caps, dict) else None
                info = params.get("clientInfo") or {}
                if isinstance(info, dict):
                    self.caller.client_name, self.caller.client_version = info.get("name"), info.get("version")
            elif method == "notifications/initialized" and self.era == "legacy":
                self.ready = True
            elif self.era is None and "id" in msg and method is not None:
                self.era = "modern" if _modern_version(params) else "legacy"
                self.ready = self.era == "modern"

    def cancel_all(self) -> None:
        for task in list(self.inflight.values()):
            task.cancel()

    def take(self, line: bytes) -> bool:
        """Handle `line` here if it is a hot-path message; False leaves it to the SDK."""
        if self.peer.pending and self.peer.take(line):
            return True
        if not self.ready or not (b"tools/" in line or b"notifications/cancelled" in line):
            return False
        msg = parse_line(line)
        if msg is None:
            return False
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return False
        method, params = msg.get("method"), msg.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return False
        if method == "notifications/cancelled":
            task = self.inflight.get(params.get("requestId"))
            if task is None:
                return False
            task.cancel()   # cancels the upstream request too (it sends its own notifications/cancelled)
            return True
        rid = msg.get("id")
        if method not in ("tools/call", "tools/list") or rid is None or isinstance(rid, bool) \
                or not isinstance(rid, (int, str)) or rid in self.inflight:
            return False
        if self.era == "modern":
            version = _modern_version(params)
            if version is None:
                return False
            meta = params.get("_meta") or {}
            info = meta.get("io.modelcontextprotocol/clientInfo")
            if isinstance(info, dict) and self.caller.client_name is None:
                self.caller.client_name, self.caller.client_version = info.get("name"), info.get("version")
            caps = meta.get(_CAPABILITIES_META)
            if isinstance(caps, dict):
                self.capabilities = caps      # the envelope of each request declares them
        else:
            if _modern_version(params) is not None:
                return False     # an enveloped request on a legacy connection: the SDK refuses it
            version = self.legacy_version
        # A plain task per request (cheaper than a task-group spawn); cancel_all() on exit.
        self.inflight[rid] = asyncio.get_running_loop().create_task(self._answer(rid, method, params, version))
        return True

    async def _answer(self, rid: Any, method: str, params: dict[str, Any], version: str) -> None:
        try:
            if method == "tools/list":
                try:
                    body = await self.gw.tools_list_json(version, self.caller, params.get("cursor"))
                except MCPError as e:          # a bad cursor
                    self.write(_dumps({"jsonrpc": "2.0", "id": rid,
                                       "error": {"code": e.code, "message": e.message}}))
                    return
                self.write(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":'
                           + body.encode("utf-8") + b"}\n")
                return
            caller = self.caller
            meta = params.get("_meta")
            if isinstance(meta, dict):
                token = meta.get("progressToken")
                level = meta.get(LOG_LEVEL_META) if self.era == "modern" else None
                if token is not None or level is not None:
                    caller = dataclasses.replace(caller, progress=self._progress(token) if token is not None
                                                 else None, log_level=level if isinstance(level, str) else None)
            try:
                result = await self.call(caller, params)
            except MCPError as e:
                error: dict[str, Any] = {"code": e.code, "message": e.message}
                if e.error.data is not None:
                    error["data"] = e.error.data
                self.write(_dumps({"jsonrpc": "2.0", "id": rid, "error": error}))
                return
            except Exception:
                log.exception("tools/call failed")
                self.write(_dumps({"jsonrpc": "2.0", "id": rid,
                                   "error": {"code": -32603, "message": "Internal error"}}))
                return
            self.write(_dumps({"jsonrpc": "2.0", "id": rid, "result": self.gw.envelope(result, version)}))
        finally:
            self.inflight.pop(rid, None)

    def _progress(self, token: Any) -> Any:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self.write(_dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))

        return report


HotPath = _HotPath      # a connection of the shared daemon (`share.daemon`) is served with one too


def _modern_version(params: Any) -> str | None:
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    return version if version in MODERN_PROTOCOL_VERSIONS else None


class _Recorder:
    """Keeps the SDK's initialize/discover results for the early front of the next start."""

    def __init__(self, gw: Gateway, early: EarlyFront) -> None:
        self.gw = gw
        self.early = early
        self.pending: dict[Any, str] = {}      # request id -> record key

    def request(self, line: bytes) -> None:
        if b'"initialize"' not in line and b"server/discover" not in line:
            return
        msg = parse_line(line)
        if msg is None:
            return
        if isinstance(msg, dict) and msg.get("method") in RECORDED_METHODS and "id" in msg:
            key = request_key(msg)
            if key is not None:
                self.pending[msg["id"]] = key

    def response(self, message: Any, data: str) -> None:
        key = self.pending.pop(message.id, None)
        if key is None or not isinstance(message, types.JSONRPCResponse):
            return
        try:
            result = json.loads(data)["result"]
            fp = self.early.fingerprint_for(self.gw.relay.offered())    # what this reply advertised
            save_record(self.gw.project_name, fp, self.gw.server_info_stamp(),
                        list(MODERN_PROTOCOL_VERSIONS), {key: result})
        except Exception:
            log.exception("recording the %s result for the next start failed", key)


def _log_handover(handover: Handover) -> None:
    if handover.consumed:
        log.info("early front: %d message(s) read before the SDK loaded, %d answered there",
                 len(handover.consumed), len(handover.suppress) + sum(1 for _, r in handover.consumed if not r))


@contextlib.asynccontextmanager
async def gateway_stdio(gw: Gateway | None = None, early: EarlyFront | None = None
                        ) -> AsyncIterator[tuple[Any, Any]]:
    """Yield (read_stream, write_stream) of SessionMessage over this process's stdin/stdout.

    With `gw`, tools/call and tools/list of a settled connection take the hot path. With
    `early` (and `gw`), the early front stops here and its consumed input is taken over: lines
    it answered for good are only observed, the others go through the normal path in order
    (the duplicate responses to the ones it answered are dropped); the SDK's own
    initialize/discover results are recorded for the next start.
    """
    handover = early.stop() if early is not None else Handover()
    _log_handover(handover)
    if not stdio_open():
        async with closed_stdio() as streams:
            yield streams
        return
    if not (is_stream_fd(0) and is_stream_fd(1) and pollable(0) and pollable(1)):
        # files and devices like /dev/null: the SDK's threaded reader (the event loop cannot poll them)
        async with stdio_server() as streams:
            yield streams
        return
    in_fd, out_fd, saved_in, saved_out = take_stdio()
    reader, writer, rtransport, wtransport = await connect_pipes(in_fd, out_fd, handover)
    out = Coalescer(wtransport)
    recorder = _Recorder(gw, early) if gw is not None and early is not None else None
    pump = Pump(handover, reader, writer, wtransport, out, recorder)
    hot = pump.hot = _HotPath(gw, out.write) if gw is not None else None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump.stdin_reader)
            tg.start_soon(pump.stdout_writer)
            try:
                yield pump.read_stream, pump.write_stream
            finally:
                tg.cancel_scope.cancel()
    finally:
        if hot is not None:
            hot.unregister()
            hot.cancel_all()
        out.flush()
        with contextlib.suppress(Exception):
            if wtransport.get_write_buffer_size():
                with anyio.move_on_after(5, shield=True):
                    await writer.drain()
        rtransport.close()
        wtransport.close()
        restore_stdio(saved_in, saved_out)
