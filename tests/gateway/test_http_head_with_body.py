"""A response of known length leaves the gateway's HTTP front in one write, head and body
(`mcpctl.wire.HeadWithBody`, wired into the guarded uvicorn protocol): a replica killed between two
writes left a head promising a body that never came, which no load balancer retries (the kill
test in tests/team/test_replicas.py once met it under load). A stream's head still goes out at
once, before its first event. Real uvicorn on loopback, real sockets; each write is recorded on the
way to the socket."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from mcpctl.auth.bearer import BearerAuth
from mcpctl.gateway import http_guard as gg
from mcpctl.resources.http_limits import HttpLimits

pytestmark = pytest.mark.anyio

BODY = b'{"jsonrpc":"2.0","id":1,"result":{}}' * 40


class _Recording:
    """A transport that records what is written through it on the way to the real one."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport, self.writes = transport, writes

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


async def _app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/json":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]})
        await send({"type": "http.response.body", "body": BODY})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await scope["state"]["go"].wait()
    await send({"type": "http.response.body", "body": b"data: 1\n\n"})


@contextlib.asynccontextmanager
async def _front(writes: list[bytes], go: asyncio.Event) -> AsyncIterator[int]:
    limits = HttpLimits()
    guard = gg.Guard(BearerAuth(None, "tok"), limits, 32, gg.Refusals(limits, 32))  # type: ignore[arg-type]
    base: Any = gg.guarded_protocol(guard)

    class Recorded(base):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(_Recording(transport, writes))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope.setdefault("state", {})["go"] = go
        await _app(scope, receive, send)

    # the socket bound and listening before uvicorn starts: a client's connection waits in its
    # backlog until uvicorn accepts it, so nothing polls for the server's start
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, http=Recorded, lifespan="off", log_level="warning", ws="none"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)
        sock.close()


async def _request(port: int, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


async def test_a_response_of_known_length_is_one_write_and_a_stream_s_head_is_not_held() -> None:
    writes: list[bytes] = []
    go = asyncio.Event()
    async with _front(writes, go) as port:
        reader, writer = await _request(port, "/json")
        answer = await asyncio.wait_for(reader.read(), 20)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(BODY)
        assert [w for w in writes if w] == [answer], [w[:40] for w in writes]

        writes.clear()
        reader, writer = await _request(port, "/stream")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)    # before the first event
        assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
        assert writes == [head]
        go.set()
        rest = await asyncio.wait_for(reader.read(), 20)
        writer.close()
        assert b"data: 1" in rest


async def test_a_held_head_goes_out_at_the_loop_s_next_turn_or_at_close() -> None:
    """What the front holds it never keeps: the head of a response whose body is not written in
    the same turn goes out on the next turn, and closing writes it before closing."""
    from mcpctl.wire import HeadWithBody

    class Sink:
        def __init__(self) -> None:
            self.writes: list[bytes] = []
            self.closed = False

        def write(self, data: bytes) -> None:
            self.writes.append(bytes(data))

        def close(self) -> None:
            self.closed = True

        def get_write_buffer_size(self) -> int:
            return 0

    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 2\r\n\r\n"
    sink = Sink()
    t = HeadWithBody(sink, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(head)
    assert sink.writes == [] and t.get_write_buffer_size() >= len(head)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert sink.writes == [head]
    t.write(b"{}")
    t.write(b"HTTP/1.1 204 No Content\r\n\r\n")          # no length: at once
    t.write(head)
    t.close()
    assert sink.writes == [head, b"{}", b"HTTP/1.1 204 No Content\r\n\r\n", head] and sink.closed
