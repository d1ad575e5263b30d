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
import fcntl
import json
import logging
import os
import select
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types.jsonrpc import REQUEST_TIMEOUT
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from mcpctl.gateway.early import (
    PARSE_ERROR_LINE,
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
from mcpctl.sdk import create_context_streams
from mcpctl.upstream.stdio import Coalescer

log = logging.getLogger("mcpctl.gateway")

_LINE_LIMIT: Final = 512 * 1024 * 1024
_HIGH_WATER: Final = 4 * 1024 * 1024
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


def _pollable(fd: int) -> bool:
    """Can the event loop watch `fd`? (epoll refuses regular files and /dev/null with EPERM.)"""
    ep = select.epoll()
    try:
        ep.register(fd, select.EPOLLIN if fd == 0 else select.EPOLLOUT)
    except OSError:
        return False
    finally:
        ep.close()
    return True


def stdio_open() -> bool:
    """Were stdin and stdout open when the process started? (Python sets sys.stdin/stdout to
    None when fd 0/1 were closed; a file opened later may reuse those fds, so fstat cannot tell.)"""
    return sys.stdin is not None and sys.stdout is not None


def _not_json(exc: Exception) -> bool:
    """Whether validating a line failed because it is not JSON at all (too deep included)."""
    errors = getattr(exc, "errors", None)
    try:
        return callable(errors) and any(e.get("type") == "json_invalid" for e in errors())
    except Exception:
        return False


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
    if handover.consumed:
        log.info("early front: %d message(s) read before the SDK loaded, %d answered there",
                 len(handover.consumed), len(handover.suppress) + sum(1 for _, r in handover.consumed if not r))
    if not stdio_open():
        # a closed stdin (`<&-`) or stdout: no client can be served; end as on EOF
        log.warning("stdin or stdout is closed: no client to serve over stdio; exiting")
        eof_writer, eof_stream = create_context_streams[SessionMessage | Exception](0)
        sink, _sink_reader = create_context_streams[SessionMessage](1)
        await eof_writer.aclose()
        yield eof_stream, sink
        return
    if not (is_stream_fd(0) and is_stream_fd(1) and _pollable(0) and _pollable(1)):
        # files and devices like /dev/null: the SDK's threaded reader (the event loop cannot poll them)
        async with stdio_server() as streams:
            yield streams
        return
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    if handover.tail:
        reader.feed_data(handover.tail)
    if handover.eof:
        reader.feed_eof()
    rtransport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                 os.fdopen(in_fd, "rb", buffering=0))
    wtransport, wproto = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                       os.fdopen(out_fd, "wb", buffering=0))
    writer = asyncio.StreamWriter(wtransport, wproto, None, loop)
    wtransport.set_write_buffer_limits(high=_HIGH_WATER)
    out = Coalescer(wtransport)

    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    validate = types.jsonrpc_message_adapter.validate_json
    hot: _HotPath | None = None
    recorder = _Recorder(gw, early) if gw is not None and early is not None else None
    suppress = set(handover.suppress)

    async def handle(line: bytes) -> None:
        if hot is not None:
            if hot.take(line):
                return
            hot.observe(line)
        if recorder is not None:
            recorder.request(line)
        try:
            message = validate(line, by_name=False)
        except Exception as exc:
            if _not_json(exc):      # the SDK answers nothing to it; JSON-RPC says: parse error
                out.write(PARSE_ERROR_LINE)
            await read_writer.send(exc)
            return
        await read_writer.send(SessionMessage(message))

    async def stdin_reader() -> None:
        async with read_writer:
            for line, replay in handover.consumed:
                if replay:
                    await handle(line)
                elif hot is not None:
                    hot.observe(line)
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError) as e:
                    await read_writer.send(ValueError(f"message too large: {e}"))
                    continue
                if not line:
                    return
                if not line.strip():
                    continue
                await handle(line)

    async def stdout_writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                message = session_message.message
                data = message.model_dump_json(by_alias=True, exclude_unset=True)
                if recorder is not None and recorder.pending and isinstance(
                        message, (types.JSONRPCResponse, types.JSONRPCError)):
                    recorder.response(message, data)
                if suppress and isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) \
                        and message.id in suppress:
                    suppress.discard(message.id)       # answered already by the early front
                    if isinstance(message, types.JSONRPCError):
                        log.warning("the SDK refused a request the early front answered: %s", data[:300])
                    elif message.id in handover.answers and handover.answers[message.id] != json.loads(data):
                        log.warning("the early front's answer to request %r differed from the SDK's "
                                    "(recorded anew for the next start)", message.id)
                    continue
                out.write(data.encode("utf-8") + b"\n")
                if wtransport.get_write_buffer_size() > _HIGH_WATER:
                    await writer.drain()

    if gw is not None:
        hot = _HotPath(gw, out.write)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_reader)
            tg.start_soon(stdout_writer)
            try:
                yield read_stream, write_stream
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
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
