"""A stdio transport to an upstream that relays calls as raw JSON next to the SDK session.

The SDK's `ClientSession` still runs over this transport (handshake in either era,
listings, `list_changed`, listen streams): it gets the usual `SessionMessage` streams. Calls
the gateway relays take a shorter path: `request()` writes the JSON-RPC line itself (string
ids `mcpctl-N` that never collide with the session's integer ids) and the reader hands the
matching response back as a plain dict, so a call costs one `json.dumps` and one `json.loads`
instead of two model validations, two serializations and four task hops. Progress
notifications for those requests come back the same way; cancellation sends
`notifications/cancelled` like the SDK does.

The child runs in its own session with exactly the environment it is given; on exit its stdin
is closed, then SIGTERM, then SIGKILL (2 s apart), as the SDK's own stdio client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import IO, Any, Final

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from mcp.types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

log = logging.getLogger("mcpctl.gateway")

_ID_PREFIX: Final = "mcpctl-"
_TOKEN_PREFIX: Final = "mcpctl-p-"
_LINE_LIMIT: Final = 512 * 1024 * 1024
_HIGH_WATER: Final = 4 * 1024 * 1024

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class Coalescer:
    """Writes lines to a pipe transport, joining those written in the same loop turn.

    With many calls in flight, one `write()` syscall (one wake-up of the reader) carries several
    messages; a lone message costs one extra event-loop turn.
    """

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport
        self.buf: list[bytes] = []
        self.loop = asyncio.get_running_loop()

    def write(self, data: bytes) -> None:
        if not self.buf:
            self.loop.call_soon(self.flush)
        self.buf.append(data)

    def flush(self) -> None:
        if not self.buf:
            return
        data = b"".join(self.buf) if len(self.buf) > 1 else self.buf[0]
        self.buf.clear()
        if not self.transport.is_closing():
            self.transport.write(data)

    def buffered(self) -> int:
        return self.transport.get_write_buffer_size()


class RawStdioChannel:
    """The raw side of one upstream process: `request()` for relayed calls."""

    def __init__(self, proc: asyncio.subprocess.Process, tg: anyio.abc.TaskGroup, out: Coalescer) -> None:
        self.proc = proc
        self.tg = tg
        self.out = out
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.progress: dict[str, Progress] = {}
        self.closed = False
        self._n = 0

    def _write(self, obj: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or self.closed or stdin.is_closing():
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        self.out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    async def request(self, data: dict[str, Any], *, timeout: float | None,
                      on_progress: Progress | None = None) -> dict[str, Any]:
        """Send `data` ({method, params}) and return its result dict; raise MCPError like the SDK."""
        if self.closed:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        self._n += 1
        rid = f"{_ID_PREFIX}{self._n}"
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": data["method"]}
        params = dict(data.get("params") or {})
        token = None
        if on_progress is not None:
            token = f"{_TOKEN_PREFIX}{self._n}"
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": token}
            self.progress[token] = on_progress
        if params:
            msg["params"] = params
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        answered = False
        try:
            self._write(msg)
            stdin = self.proc.stdin
            if stdin is not None and self.out.buffered() > _HIGH_WATER:
                await stdin.drain()
            async with asyncio.timeout(timeout):
                reply = await fut
            answered = True
        except TimeoutError:
            raise MCPError(code=REQUEST_TIMEOUT, message=f"Request '{data['method']}' timed out") from None
        finally:
            self.pending.pop(rid, None)
            if token is not None:
                self.progress.pop(token, None)
            if not answered and not self.closed:
                with contextlib.suppress(Exception):
                    self._write({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": rid, "reason": "cancelled by the mcpctl client"}})
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            raise MCPError(code=int(err.get("code", -32603)), message=str(err.get("message", "error")),
                           data=err.get("data"))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def route(self, line: bytes) -> bool:
        """Deliver `line` if it answers (or reports progress on) a raw request."""
        if _ID_PREFIX.encode() not in line:
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict):
            return False
        rid = msg.get("id")
        if isinstance(rid, str) and rid.startswith(_ID_PREFIX) and "method" not in msg:
            fut = self.pending.get(rid)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            return True
        if msg.get("method") == "notifications/progress":
            params = msg.get("params") or {}
            token = params.get("progressToken") if isinstance(params, dict) else None
            # Our tokens are all strings; any other JSON value cannot be one of ours.
            cb = self.progress.get(token) if isinstance(token, str) else None
            if cb is not None:
                self.tg.start_soon(_call_progress, cb, params)
                return True
        return False

    def close(self) -> None:
        self.closed = True
        for fut in self.pending.values():
            if not fut.done():
                fut.set_result({"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}})


async def _call_progress(cb: Progress, params: dict[str, Any]) -> None:
    try:
        await cb(float(params.get("progress", 0)), params.get("total"), params.get("message"))
    except Exception:
        log.exception("progress callback raised")


@contextlib.asynccontextmanager
async def open_stdio_upstream(params: StdioServerParameters, errlog: IO[str], on_eof: Callable[[], None],
                              ) -> AsyncIterator[tuple[Any, Any, RawStdioChannel]]:
    """Start the server; yield (read_stream, write_stream, raw channel)."""
    env = get_default_environment() | (params.env or {})
    proc = await asyncio.create_subprocess_exec(
        params.command, *params.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=errlog, env=env, cwd=params.cwd, start_new_session=True, limit=_LINE_LIMIT)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    validate_json = types.jsonrpc_message_adapter.validate_json

    async def reader(channel: RawStdioChannel) -> None:
        assert proc.stdout is not None
        try:
            async with read_writer:
                while True:
                    try:
                        line = await proc.stdout.readline()
                    except (ValueError, asyncio.LimitOverrunError) as e:
                        await read_writer.send(ValueError(f"message too large: {e}"))
                        continue
                    if not line:
                        break
                    if not line.strip() or channel.route(line):
                        continue
                    try:
                        message: Any = SessionMessage(validate_json(line, by_name=False))
                    except Exception as exc:
                        message = exc
                    await read_writer.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            channel.close()
            on_eof()

    assert proc.stdin is not None
    out = Coalescer(proc.stdin.transport)

    async def writer() -> None:
        assert proc.stdin is not None
        try:
            async with write_reader:
                async for sm in write_reader:
                    data = sm.message.model_dump_json(by_alias=True, exclude_unset=True)
                    out.write(data.encode("utf-8") + b"\n")
                    if out.buffered() > _HIGH_WATER:
                        await proc.stdin.drain()
        except (ConnectionError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    try:
        async with anyio.create_task_group() as tg:
            channel = RawStdioChannel(proc, tg, out)
            tg.start_soon(reader, channel)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream, channel
            finally:
                channel.close()
                out.flush()
                with anyio.CancelScope(shield=True):
                    await _terminate(proc)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _terminate(proc)


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    if proc.stdin is not None:
        with contextlib.suppress(Exception):
            proc.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        with anyio.move_on_after(2.0):
            await proc.wait()
        if proc.returncode is not None:
            return
