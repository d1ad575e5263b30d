"""The gateway's stdio transport: the SDK's message streams over non-blocking pipes.

The SDK's `stdio_server()` reads and writes through worker threads (one thread hop per
message each way), which is most of a relayed call's cost. This transport does the same job
with the event loop's own pipe transports when stdin and stdout are pipes or sockets (how
MCP clients start servers), and falls back to the SDK's transport otherwise (a regular file,
a closed descriptor). Like the SDK, it diverts fd 0 to /dev/null and fd 1 to stderr while
serving, so a stray print or a child process can never write into the protocol stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

_LINE_LIMIT: Final = 512 * 1024 * 1024
_HIGH_WATER: Final = 4 * 1024 * 1024


def _is_stream_fd(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def gateway_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """Yield (read_stream, write_stream) of SessionMessage over this process's stdin/stdout."""
    if not (_is_stream_fd(0) and _is_stream_fd(1)):
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
    rtransport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                 os.fdopen(in_fd, "rb", buffering=0))
    wtransport, wproto = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                       os.fdopen(out_fd, "wb", buffering=0))
    writer = asyncio.StreamWriter(wtransport, wproto, None, loop)
    wtransport.set_write_buffer_limits(high=_HIGH_WATER)

    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    validate = types.jsonrpc_message_adapter.validate_json

    async def stdin_reader() -> None:
        async with read_writer:
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
                try:
                    message = validate(line, by_name=False)
                except Exception as exc:
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def stdout_writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(data.encode("utf-8") + b"\n")
                if wtransport.get_write_buffer_size() > _HIGH_WATER:
                    await writer.drain()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_reader)
            tg.start_soon(stdout_writer)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
    finally:
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
