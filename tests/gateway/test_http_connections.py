"""The HTTP front against connections that never finish a request: unfinished request heads and
silent or idle connections are closed after their timeouts, and a flood of them (from anyone who
can connect, no token needed) neither blocks an authorised client nor floods the log."""

from __future__ import annotations

import contextlib
import re
import selectors
import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from gwkit import SLACK, Kit, text_of, wait_tools
from test_serve_http import http_client, http_gateway_process

pytestmark = pytest.mark.anyio

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _head(port: int) -> bytes:
    """An unfinished request head: the blank line that ends it never comes."""
    return f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()


def _connect(port: int, first: bytes = b"") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SLACK)
    if first:
        s.sendall(first)
    return s


def _wait_closed(socks: dict[str, socket.socket], timeout: float, trickle: str | None = None,
                 every: float = 0.2) -> dict[str, float]:
    """Seconds until the gateway closed each socket (bounded by `timeout`); `trickle` names one that
    keeps sending a byte of its head every `every` seconds meanwhile (bytes must not buy time)."""
    start = time.monotonic()
    closed: dict[str, float] = {}
    with selectors.DefaultSelector() as sel:
        for name, s in socks.items():
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, name)
        next_byte = start + every
        while len(closed) < len(socks) and time.monotonic() - start < timeout:
            wake = min(next_byte, start + timeout) if trickle and trickle not in closed else start + timeout
            for key, _ in sel.select(max(0.0, wake - time.monotonic())):
                try:
                    gone = key.fileobj.recv(65536) == b""  # type: ignore[union-attr]
                except (ConnectionResetError, BlockingIOError):
                    gone = True
                if gone:
                    closed[key.data] = time.monotonic() - start
                    sel.unregister(key.fileobj)
            if trickle and trickle not in closed and time.monotonic() >= next_byte:
                next_byte += every
                with contextlib.suppress(OSError):
                    socks[trickle].send(b"X")
    return closed


async def test_unfinished_heads_silent_and_idle_connections_are_closed(kit: Kit) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    limit = 1.0
    with http_gateway_process(kit, project, "--header-timeout", str(limit), "--idle-timeout", str(limit)) as gw:
        answered = _connect(gw.port, _head(gw.port) + b"Content-Length: 0\r\n\r\n")
        assert answered.recv(65536).startswith(b"HTTP/1.1 401")     # no token: told so, then kept alive
        socks = {"silent": _connect(gw.port), "unfinished": _connect(gw.port, _head(gw.port)),
                 "trickle": _connect(gw.port, b"POST /mcp HTTP/1.1\r\nX-Slow: "), "idle": answered}
        try:
            closed = _wait_closed(socks, limit + 4 * SLACK, trickle="trickle")
        finally:
            for s in socks.values():
                s.close()
        assert set(closed) == set(socks), closed
        assert all(limit * 0.8 <= t < limit + 2 * SLACK for t in closed.values()), closed
        # An authorised client is not cut off: its GET stream is a request in flight, and its pool
        # reconnects when an idle keep-alive connection was closed.
        async with http_client(gw.url, gw.token, "legacy") as c:
            await wait_tools(c, {"alpha__echo"})
            await anyio.sleep(limit * 2)
            r = await c.session.call_tool("alpha__echo", {"text": "after idling"})
            assert text_of(r) == "after idling"


class _Transport:
    """What the guard uses of an asyncio transport, over a real socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.closed = sock, False

    def get_extra_info(self, name: str) -> socket.socket | None:
        return self.sock if name == "socket" else None

    def close(self) -> None:
        self.closed = True


async def test_eviction_spares_a_connection_whose_authorised_request_waits_unread() -> None:
    """A burst of new connections can outrun the loop's reading them. Over the cap, the oldest
    connection that has not shown the token is closed, unless its complete head with a valid token
    already waits in its socket: that one is spared (and no longer counted), its bytes untouched. A
    silent connection, an unfinished head, or a complete head with a wrong token is not spared."""
    from mcpctl.gateway import http_guard as gg
    from mcpctl.gateway.http import BearerAuth, HttpLimits

    limits = HttpLimits()
    guard = gg.Guard(BearerAuth(None, "tok"), limits, 32, gg.Refusals(limits, 32))  # type: ignore[arg-type]
    sockets: list[socket.socket] = []
    waiting = b"POST /mcp HTTP/1.1\r\nHost: x\r\nauthorization: Bearer tok\r\nContent-Length: 2\r\n\r\n{}"

    def connect(sent: bytes) -> Any:
        ours, theirs = socket.socketpair()
        sockets.extend((ours, theirs))
        if sent:
            theirs.sendall(sent)
        conn = object.__new__(gg.GuardedH11Protocol)
        conn.guard = guard
        conn.transport = _Transport(ours)
        conn.authenticated, conn._counted, conn._head_timer, conn._body_timer = False, True, None, None
        conn.credential = None
        guard.open += 1
        guard.unauthenticated[conn] = None
        return conn

    try:
        legit = connect(waiting)
        silent = connect(b"")
        wrong = connect(waiting.replace(b"tok", b"nope"))
        unfinished = connect(b"POST /mcp HTTP/1.1\r\nAuthorization: Bearer tok\r\n")
        assert [gg.buffered_head(c.transport.sock.fileno()) is not None for c in (legit, silent, wrong, unfinished)] \
            == [True, False, True, False]
        assert guard.evict_oldest() and silent.transport.closed and not legit.transport.closed
        assert legit.authenticated and legit not in guard.unauthenticated
        assert legit.transport.sock.recv(4096) == waiting                  # peeked, not consumed
        assert guard.evict_oldest() and wrong.transport.closed
        assert guard.evict_oldest() and unfinished.transport.closed
        assert not guard.evict_oldest() and guard.open == 1                 # the spared one
    finally:
        for s in sockets:
            s.close()
        guard.refusals.flush()


@contextlib.contextmanager
def _nofile_at_least(count: int) -> Iterator[None]:
    """This process's soft RLIMIT_NOFILE raised to `count` (within the hard limit) for the block."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < count:
        if hard != resource.RLIM_INFINITY and hard < count:
            pytest.skip(f"needs {count} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.stress
async def test_two_thousand_junk_sockets_do_not_block_an_authorised_client(kit: Kit) -> None:
    import httpx2

    junk_count, gateway_nofile = 2000, 1024
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    junk: list[socket.socket] = []
    with _nofile_at_least(junk_count + 512), \
            http_gateway_process(kit, project, nofile=gateway_nofile) as gw:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "Authorization": f"Bearer {gw.token}"}
        fresh: list[float] = []
        in_session: list[float] = []

        def flood() -> None:
            deadline = time.monotonic() + 30 * SLACK
            for _ in range(junk_count):
                assert time.monotonic() < deadline, f"only {len(junk)} junk sockets connected in 30 s"
                junk.append(_connect(gw.port, _head(gw.port)))

        async def new_client() -> None:
            """A request on a new connection, as a new client would send it."""
            started = time.monotonic()
            with anyio.fail_after(10 * SLACK):
                async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
                    r = await h.post(gw.url, json=INITIALIZE, headers=headers)
            fresh.append(time.monotonic() - started)
            assert r.status_code == 200

        async with http_client(gw.url, gw.token, "legacy") as c:
            await wait_tools(c, {"alpha__echo"})

            async def call(i: int) -> None:
                """A call in a session that was open before the flood."""
                started = time.monotonic()
                with anyio.fail_after(10 * SLACK):
                    r = await c.session.call_tool("alpha__echo", {"text": f"call {i}"})
                in_session.append(time.monotonic() - started)
                assert text_of(r) == f"call {i}"

            try:
                flooding = anyio.Event()

                async def flood_then_signal() -> None:
                    try:
                        await anyio.to_thread.run_sync(flood)
                    finally:
                        flooding.set()

                async with anyio.create_task_group() as tg:     # while the junk connects ...
                    tg.start_soon(flood_then_signal)
                    for i in range(100):
                        await new_client()
                        await call(i)
                        if flooding.is_set():
                            break
                assert len(junk) == junk_count
                assert gw.open_fds() < gateway_nofile
                for i in range(5):                                # ... and while it is held
                    await new_client()
                    await call(100 + i)
                assert max(fresh + in_session) < 1.0 * SLACK, (fresh, in_session)
                assert gw.open_fds() < gateway_nofile
            finally:
                for s in junk:
                    s.close()
        # One summary line for the burst, no traceback per connection.
        with anyio.fail_after(15 * SLACK):
            while not re.search(r"HTTP front: \d+ refused or closed", gw.stderr.read_text()):
                await anyio.sleep(0.1)
        stderr = gw.stderr.read_text()
        assert "Traceback" not in stderr, stderr[-3000:]
        assert len(re.findall(r"HTTP front: \d+ refused or closed", stderr)) <= 3, stderr
        assert len(stderr) < 8192, stderr[-3000:]


def test_serve_options_are_the_http_limits() -> None:
    import dataclasses

    from mcpctl.cli.serve import _OPT, HTTP_LIMITS
    from mcpctl.gateway.http import HttpLimits

    defaults = {f.name: f.default for f in dataclasses.fields(HttpLimits)}
    assert defaults == {name: _OPT[name].default for name in HTTP_LIMITS}


@pytest.mark.parametrize("argv", [["--header-timeout", "0"], ["--max-connections=0"], ["--idle-timeout", "nan"],
                                  ["--session-idle-timeout", "-1"], ["--max-sessions", "-5"], ["--body-timeout", "0"],
                                  ["--max-connections-per-credential", "0"], ["--max-sessions-per-credential=-1"],
                                  ["--max-parked-per-credential", "0"]])
def test_limits_must_be_positive(argv: list[str], kit: Kit) -> None:
    import subprocess

    from gwkit import MCPCTL

    kit.server("alpha")
    kit.project("p", ["alpha"])
    r = subprocess.run([MCPCTL, "serve", "--project", "p", "--transport", "http", *argv], capture_output=True,
                       text=True, timeout=60 * SLACK, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "must be a positive number" in r.stderr, r.stderr
