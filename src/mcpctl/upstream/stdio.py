"""A stdio transport to an upstream that relays calls as raw JSON next to the SDK session.

The SDK's `ClientSession` still runs over this transport (handshake in either era,
listings, `list_changed`, listen streams): it gets the usual `SessionMessage` streams. Calls
the gateway relays take a shorter path: `request()` writes the JSON-RPC line itself (string
ids `mcpctl-N` that never collide with the session's integer ids) and the reader hands the
matching response back as a plain dict, so a call costs one `json.dumps` and one `json.loads`
instead of two model validations, two serializations and four task hops. Progress
notifications for those requests come back the same way; cancellation sends
`notifications/cancelled` like the SDK does.

The child runs in its own session (so its own process group) with exactly the environment it is
given. Stopping it (shutdown, restart): its stdin is closed, then SIGTERM, then SIGKILL (2 s apart)
until the direct child exits, as the SDK's own stdio client does; then whatever is left of its
process group (background children) gets SIGTERM, then SIGKILL after `GROUP_GRACE`. A watchdog
process (`GUARD`, one per gateway) does the same for every group still registered if the gateway
dies without doing it (kill -9): both are in `procgroup`. The child's stderr is a pipe drained into
a `StderrLog`, which rotates the file while the upstream runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
import mcp.types as types
from mcp import MCPError, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from mcp.types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from mcpctl import paths
from mcpctl.telemetry import propagation
from mcpctl.upstream.procgroup import GUARD, end_group, signal_group

log = logging.getLogger("mcpctl.gateway")

_ID_PREFIX: Final = "mcpctl-"
_TOKEN_PREFIX: Final = "mcpctl-p-"
_LINE_LIMIT: Final = 512 * 1024 * 1024
_HIGH_WATER: Final = 4 * 1024 * 1024
EXIT_GRACE: Final = 2.0         # seconds between stdin EOF, SIGTERM and SIGKILL of the direct child
_STDERR_PIPE_SIZE: Final = 256 * 1024   # absorbs a burst while the event loop is busy
_STDERR_DRAIN: Final = 0.5      # seconds to wait for the last stderr bytes once the group is gone
_STDOUT_DRAIN: Final = 1.0      # seconds to wait for stdout EOF once the server and its group are gone

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
        self.hung = False           # set when the upstream is restarted for not answering: skip the polite stop
        self.handed = False         # a message went to the SDK session since the last answer was delivered
        self._n = 0

    def _write(self, obj: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        if stdin is None or self.closed or stdin.is_closing():
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        self.out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    async def request(self, data: dict[str, Any], *, timeout: float | None,
                      on_progress: Progress | None = None) -> dict[str, Any]:
        """Send `data` ({method, params}) and return its result dict; raise MCPError like the SDK.
        While tracing is on, in a span of the upstream call whose context goes in `_meta`, as the
        SDK's client does (`telemetry.tracing.client_span`)."""
        span = propagation.CLIENT_SPAN[0]        # read, not imported, on each call
        if span is None:
            return await self._request(data, timeout, on_progress)
        with span(data) as traced:
            return await self._request(traced, timeout, on_progress)

    async def _request(self, data: dict[str, Any], timeout: float | None, on_progress: Progress | None
                       ) -> dict[str, Any]:
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
                if self.handed:
                    # A message the server sent before this answer (a log message of the call) went to
                    # the SDK session, whose handler starts on the next loop turn: let it start first.
                    self.handed = False
                    asyncio.get_running_loop().call_soon(_settle, fut, msg)
                else:
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


def _settle(fut: asyncio.Future[dict[str, Any]], msg: dict[str, Any]) -> None:
    if not fut.done():
        fut.set_result(msg)


async def _call_progress(cb: Progress, params: dict[str, Any]) -> None:
    try:
        await cb(float(params.get("progress", 0)), params.get("total"), params.get("message"))
    except Exception:
        log.exception("progress callback raised")


class StderrLog:
    """An upstream's stderr log file, rotated while the upstream runs.

    `write` gets each chunk the gateway reads from the upstream's stderr pipe (up to 256 KiB):
    one `write(2)` and a size check, nothing per line. Past `limit` bytes the file becomes
    `<name>.log.1` (the one backup, replacing the previous one) at the last line boundary that
    fits, and a new file starts: neither file grows past `limit` (unless a single chunk without a
    newline does). Write errors (a full disk) are dropped: an upstream never suffers for its log.
    """

    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = limit
        paths.private_dir(path.parent)
        self._fd = self._open()
        self.size = os.fstat(self._fd).st_size
        if self.size > limit:
            self._rotate()

    def _open(self) -> int:
        return paths.open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def write(self, data: bytes) -> None:
        size = self.size + len(data)
        if size <= self.limit or not self.size:
            self.size = size
            self._put(data)
            return
        cut = data.rfind(b"\n", 0, max(0, self.limit - self.size)) + 1
        if cut:
            self._put(data[:cut])
        self._rotate()
        self.size = len(data) - cut
        self._put(data[cut:])

    def note(self, text: str) -> None:
        """Write a line of mcpctl's own (a start marker)."""
        self.write(text.encode("utf-8", "replace"))

    def _put(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            pass

    def _rotate(self) -> None:
        try:
            # Another gateway serving this server may have rotated it already: then only reopen.
            if os.fstat(self._fd).st_ino == os.stat(self.path).st_ino:
                os.replace(self.path, self.path.with_suffix(".log.1"))
            new = self._open()
        except OSError:   # keep writing where we are; try again after another `limit` bytes
            self.size = 0
            return
        os.close(self._fd)
        self._fd = new
        self.size = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _ProcessProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a child process, with an event set as soon as the child exits."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = anyio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _StderrPipe(asyncio.Protocol):
    """Drains an upstream's stderr pipe into its `StderrLog` from the event loop."""

    def __init__(self, sink: StderrLog) -> None:
        self.data_received = sink.write     # type: ignore[method-assign]  # no hop per chunk
        self.eof = anyio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof.set()




@contextlib.asynccontextmanager
async def open_stdio_upstream(params: StdioServerParameters, errlog: StderrLog, on_eof: Callable[[], None],
                              ) -> AsyncIterator[tuple[Any, Any, RawStdioChannel]]:
    """Start the server; yield (read_stream, write_stream, raw channel)."""
    env = get_default_environment() | (params.env or {})
    err_r, err_w = os.pipe()
    try:
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(err_w, fcntl.F_SETPIPE_SZ, _STDERR_PIPE_SIZE)
        loop = asyncio.get_running_loop()
        # asyncio.create_subprocess_exec, with a protocol that says when the child exits:
        # `Process.wait()` waits for its pipes too, which a background child may hold open.
        transport, protocol = await loop.subprocess_exec(
            lambda: _ProcessProtocol(limit=_LINE_LIMIT, loop=loop),
            params.command, *params.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=err_w, env=env, cwd=params.cwd, start_new_session=True)
        proc = asyncio.subprocess.Process(transport, protocol, loop)
    except BaseException:
        os.close(err_r)
        raise
    finally:
        os.close(err_w)
    GUARD.add(proc.pid)
    stop = _Stop(proc, protocol.exited)
    err_file = os.fdopen(err_r, "rb", buffering=0)
    stderr: asyncio.ReadTransport | None = None
    drain: _StderrPipe | None = None
    try:
        stderr, drain = await asyncio.get_running_loop().connect_read_pipe(
            lambda: _StderrPipe(errlog), err_file)
        async with _serve_process(proc, on_eof, stop) as streams:
            yield streams
    finally:
        with anyio.CancelScope(shield=True):
            await stop()
            if drain is not None:
                with anyio.move_on_after(_STDERR_DRAIN):   # the last lines (a crash message)
                    await drain.eof.wait()
            if stderr is not None:
                stderr.close()
            else:
                err_file.close()


@contextlib.asynccontextmanager
async def _serve_process(proc: asyncio.subprocess.Process, on_eof: Callable[[], None], stop: _Stop,
                         ) -> AsyncIterator[tuple[Any, Any, RawStdioChannel]]:
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    validate_json = types.jsonrpc_message_adapter.validate_json

    stdout_done = anyio.Event()

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
                    channel.handed = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            stdout_done.set()
            channel.close()
            on_eof()

    async def exited(channel: RawStdioChannel) -> None:
        # The direct child is the server: once it exits, the upstream is gone, even when a
        # background child it left still holds stdout open (no EOF would come).
        await stop.exited.wait()
        await stop.end_group()
        with anyio.move_on_after(_STDOUT_DRAIN):    # its last replies, then EOF
            await stdout_done.wait()
        if not stdout_done.is_set():               # held open outside its group
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

    async with anyio.create_task_group() as tg:
        channel = RawStdioChannel(proc, tg, out)
        tg.start_soon(reader, channel)
        tg.start_soon(writer)
        tg.start_soon(exited, channel)
        try:
            yield read_stream, write_stream, channel
        finally:
            channel.close()
            out.flush()
            stop.polite = not channel.hung
            with anyio.CancelScope(shield=True):
                await stop()
            tg.cancel_scope.cancel()


class _Stop:
    """Stops one upstream process, then what is left of its process group (see the module
    docstring). Each step runs once, however many times and from wherever it is asked for."""

    def __init__(self, proc: asyncio.subprocess.Process, exited: anyio.Event) -> None:
        self.proc = proc
        self.exited = exited    # the direct child exited (its pipes may still be open)
        self.polite = True      # close stdin and wait before signalling
        self._stopped = False
        self._group_ended: anyio.Event | None = None

    async def __call__(self) -> None:
        proc = self.proc
        if not self._stopped and not self.exited.is_set():
            self._stopped = True
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            for sig in ((None,) if self.polite else ()) + (signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    signal_group(proc.pid, sig)
                with anyio.move_on_after(EXIT_GRACE):
                    await self.exited.wait()
                if self.exited.is_set():
                    break
        await self.end_group()
        with anyio.move_on_after(EXIT_GRACE):    # its pipes close: the transport is done
            await proc.wait()

    async def end_group(self) -> None:
        """Once the direct child has exited: end the rest of its group (shielded; at most
        `GROUP_GRACE` and a little)."""
        if self._group_ended is not None:
            await self._group_ended.wait()
            return
        self._group_ended = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                await end_group(self.proc.pid)
        finally:
            GUARD.remove(self.proc.pid)
            self._group_ended.set()
