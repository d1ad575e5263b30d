"""The pipes under the gateway's stdio transport (`gateway.stdio`): stdin and stdout moved to
private descriptors and served by the event loop's pipe transports, and the two loops between
them and the SDK's message streams."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import select
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp.types as types
from mcp.shared.message import SessionMessage

from mcpctl.gateway import oversize
from mcpctl.gateway.early import PARSE_ERROR_LINE, Handover
from mcpctl.sdk import create_context_streams
from mcpctl.upstream.stdio import Coalescer

log = logging.getLogger("mcpctl.gateway")


class _HotPath(Protocol):
    """What the pump asks of `gateway.stdio`'s hot path (which imports this module, not the reverse)."""

    def take(self, line: bytes) -> bool: ...
    def observe(self, line: bytes) -> None: ...


class _Recorder(Protocol):
    """What the pump asks of `gateway.stdio`'s recorder of the early front's answers."""

    pending: dict[Any, str]

    def request(self, line: bytes) -> None: ...
    def response(self, message: Any, data: str) -> None: ...

_HIGH_WATER: Final = 4 * 1024 * 1024


def pollable(fd: int) -> bool:
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


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line over `oversize.MAX_MESSAGE_BYTES`: its size and its first and last bytes only."""

    size: int
    head: bytes
    tail: bytes


async def next_line(reader: asyncio.StreamReader) -> bytes | Oversized:
    """The next line (b"" at EOF; the last one may lack its newline), or, past the reader's limit
    (`oversize.MAX_MESSAGE_BYTES`), the rest of that line read and dropped chunk by chunk."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        return e.partial
    except asyncio.LimitOverrunError as e:
        first = await reader.read(max(1, e.consumed))
    size, head, tail = len(first), first[:oversize.KEEP], first[-oversize.KEEP:]
    while True:
        try:
            chunk = await reader.readuntil(b"\n")
            done = True
        except asyncio.IncompleteReadError as e:
            chunk, done = e.partial, True
        except asyncio.LimitOverrunError as e:
            chunk, done = await reader.read(max(1, e.consumed)), False
        size += len(chunk)
        tail = (tail + chunk)[-oversize.KEEP:]
        if done:
            return Oversized(size, head, tail.rstrip(b"\r\n"))


class Pump:
    """The two loops between this process's stdin/stdout pipes and the SDK's message streams."""

    def __init__(self, handover: Handover, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 wtransport: asyncio.WriteTransport, out: Coalescer, recorder: _Recorder | None) -> None:
        self.read_writer, self.read_stream = create_context_streams[SessionMessage | Exception](0)
        self.write_stream, self.write_reader = create_context_streams[SessionMessage](0)
        self.handover = handover
        self.reader = reader
        self.writer = writer
        self.wtransport = wtransport
        self.out = out
        self.recorder = recorder
        self.hot: _HotPath | None = None
        self.suppress = set(handover.suppress)
        self.validate = types.jsonrpc_message_adapter.validate_json

    async def handle(self, line: bytes) -> None:
        hot = self.hot
        if hot is not None:
            if hot.take(line):
                return
            hot.observe(line)
        if self.recorder is not None:
            self.recorder.request(line)
        try:
            message = self.validate(line, by_name=False)
        except Exception as exc:
            if _not_json(exc):      # the SDK answers nothing to it; JSON-RPC says: parse error
                self.out.write(PARSE_ERROR_LINE)
            await self.read_writer.send(exc)
            return
        await self.read_writer.send(SessionMessage(message))

    async def stdin_reader(self) -> None:
        async with self.read_writer:
            for line, replay in self.handover.consumed:
                if replay:
                    await self.handle(line)
                elif self.hot is not None:
                    self.hot.observe(line)
            while True:
                got = await next_line(self.reader)
                if isinstance(got, Oversized):
                    answer, note = oversize.refusal(got.size, got.head, got.tail)
                    log.warning("%s", note)
                    if answer is not None:
                        self.out.write(answer)
                    continue
                if not got:
                    return
                if not got.strip():
                    continue
                await self.handle(got)

    def _answered_early(self, message: Any, data: str) -> bool:
        """Whether `message` replies to a request the early front answered already (then it is dropped)."""
        if not (self.suppress and isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
                and message.id in self.suppress):
            return False
        self.suppress.discard(message.id)
        answers = self.handover.answers
        if isinstance(message, types.JSONRPCError):
            log.warning("the SDK refused a request the early front answered: %s", data[:300])
        elif message.id in answers and answers[message.id] != json.loads(data):
            log.warning("the early front's answer to request %r differed from the SDK's "
                        "(recorded anew for the next start)", message.id)
        return True

    async def stdout_writer(self) -> None:
        async with self.write_reader:
            async for session_message in self.write_reader:
                message = session_message.message
                data = message.model_dump_json(by_alias=True, exclude_unset=True)
                if self.recorder is not None and self.recorder.pending and isinstance(
                        message, types.JSONRPCResponse | types.JSONRPCError):
                    self.recorder.response(message, data)
                if self._answered_early(message, data):
                    continue
                self.out.write(data.encode("utf-8") + b"\n")
                if self.wtransport.get_write_buffer_size() > _HIGH_WATER:
                    await self.writer.drain()


@contextlib.asynccontextmanager
async def closed_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """A closed stdin (`<&-`) or stdout: no client can be served; end as on EOF."""
    log.warning("stdin or stdout is closed: no client to serve over stdio; exiting")
    eof_writer, eof_stream = create_context_streams[SessionMessage | Exception](0)
    sink, _sink_reader = create_context_streams[SessionMessage](1)
    await eof_writer.aclose()
    yield eof_stream, sink


def take_stdio() -> tuple[int, int, int, int]:
    """Move stdin/stdout to private descriptors: (in, out, saved in, saved out). Fd 0 becomes
    /dev/null and fd 1 stderr, so nothing else in the process can read protocol or write on it."""
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return in_fd, out_fd, saved_in, saved_out


def restore_stdio(saved_in: int, saved_out: int) -> None:
    os.dup2(saved_in, 0)
    os.dup2(saved_out, 1)
    os.close(saved_in)
    os.close(saved_out)


async def connect_pipes(in_fd: int, out_fd: int, handover: Handover) -> tuple[
        asyncio.StreamReader, asyncio.StreamWriter, asyncio.ReadTransport, asyncio.WriteTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=oversize.MAX_MESSAGE_BYTES)
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
    return reader, writer, rtransport, wtransport
