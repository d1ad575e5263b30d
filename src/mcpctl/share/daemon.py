"""The shared gateway of `serve --shared` (`share.relay` starts it as `serve ... --shared-daemon SOCKET`).

One `Gateway` and one set of upstreams (`gateway.run.serve`, as a stdio gateway runs them), and
in front of it a unix socket (mode 0600 in a 0700 directory): each connection is one stdio session
(the client's own pipes, handed over by the relay, or the connection's bytes), served as
`gateway.stdio` serves a process's stdin/stdout (the SDK server's own `run` and its own hot path
for tools/call and tools/list), without touching fds 0 and 1, its state its own
(`share.sessions`: the gate, the client's capabilities and name, its logging level, the client
asked for sampling, elicitation and roots). Once it listens it writes one byte to the relay's
readiness pipe (MCPCTL_SHARED_READY_FD).

When the last connection has closed and none arrives within the grace (MCPCTL_SHARED_GRACE
seconds, default 2), the daemon retires: under the relays' flock it removes its socket, still
serves what connected meanwhile, then stops its upstreams as any gateway stops and exits. SIGTERM
stops it at once: the socket goes, the connections close (their relays exit 1 saying so).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
from typing import TYPE_CHECKING, Final

import anyio

from mcpctl.gateway import oversize, run
from mcpctl.gateway.early import Handover
from mcpctl.gateway.stdio import HotPath
from mcpctl.gateway.stdio_pipes import Pump, connect_pipes
from mcpctl.share.relay import ENV_READY
from mcpctl.share.sessions import SharedSessions
from mcpctl.upstream.stdio import Coalescer

if TYPE_CHECKING:
    from mcpctl.gateway.front import Gateway
    from mcpctl.storage import Storage

log = logging.getLogger("mcpctl.gateway")

ENV_GRACE: Final = "MCPCTL_SHARED_GRACE"
GRACE_S: Final = 2.0
_HIGH_WATER: Final = 4 * 1024 * 1024


def grace() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV_GRACE, GRACE_S)))
    except ValueError:
        return GRACE_S


class Front:
    """The daemon's socket, its connections and its lifetime (`gateway.run.serve(front=...)`)."""

    def __init__(self, path: str, ready_fd: int | None, grace_s: float) -> None:
        self.path = path
        self.ready_fd = ready_fd
        self.grace = grace_s
        self.listener: socket.socket | None = None
        self.inode = 0
        self.active = 0
        self.stopping = False
        self._changed: anyio.Event
        self._accepting: anyio.CancelScope

    def _bump(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def listen(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.path)
        os.chmod(self.path, 0o600)
        self.inode = os.stat(self.path).st_ino
        s.listen(128)
        s.setblocking(False)
        self.listener = s

    def ready(self) -> None:
        if self.ready_fd is not None:
            with contextlib.suppress(OSError):
                os.write(self.ready_fd, b"1")
            os.close(self.ready_fd)
            self.ready_fd = None

    async def serve(self, gw: Gateway, stop: anyio.Event) -> None:
        SharedSessions.adopt(gw.sessions)
        self._changed, self._accepting = anyio.Event(), anyio.CancelScope()
        self.listen()
        self.ready()
        log.info("shared gateway listening at %s (grace %.1f s)", self.path, self.grace)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._stop_on, stop)
                tg.start_soon(self._accept, gw, tg)
                while True:
                    await self._idle()
                    if self.stopping or self.listener is None:
                        break
                    await self._retire(gw, tg)
                    if not self.active:
                        break
                self._unlink()
                tg.cancel_scope.cancel()
        finally:
            self._unlink()
        log.info("shared gateway: %s", "stopping" if self.stopping else "idle; exiting")

    async def _stop_on(self, stop: anyio.Event) -> None:
        await stop.wait()
        self.stopping = True
        self._bump()

    async def _idle(self) -> None:
        """Return once no connection has been open for the grace (or the daemon is stopping)."""
        while not self.stopping:
            changed = self._changed
            if self.active:
                await changed.wait()
                continue
            with anyio.move_on_after(self.grace) as scope:
                await changed.wait()
            if scope.cancelled_caught and not self.active:
                return

    async def _accept(self, gw: Gateway, tg: anyio.abc.TaskGroup) -> None:
        loop = asyncio.get_running_loop()
        with self._accepting:
            while self.listener is not None:
                conn, _ = await loop.sock_accept(self.listener)
                self._start(gw, tg, conn)

    def _start(self, gw: Gateway, tg: anyio.abc.TaskGroup, conn: socket.socket) -> None:
        self.active += 1
        self._bump()
        tg.start_soon(self._session, gw, conn)

    async def _retire(self, gw: Gateway, tg: anyio.abc.TaskGroup) -> None:
        """Idle: under the relays' lock, take the socket away, then serve what connected meanwhile."""
        lock = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            await anyio.to_thread.run_sync(fcntl.flock, lock, fcntl.LOCK_EX)
            if self.active or self.stopping:
                return
            self._unlink()
            self._accepting.cancel()
            listener, self.listener = self.listener, None
            assert listener is not None
            while True:
                try:
                    conn, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    break
                self._start(gw, tg, conn)
            listener.close()
        finally:
            os.close(lock)

    def _unlink(self) -> None:
        """Remove the socket's path if it is still this daemon's."""
        with contextlib.suppress(OSError):
            if self.inode and os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        self.inode = 0

    async def _session(self, gw: Gateway, conn: socket.socket) -> None:
        """One connection: one stdio session. Its first byte says how: `P` with the client's stdin
        and stdout (SCM_RIGHTS), served as `gateway.stdio.gateway_stdio` serves a process's own, and
        `0` written back once the client has closed stdin; `S`: the protocol's bytes on the connection."""
        try:
            await _readable(conn)
            mode, fds, _, _ = socket.recv_fds(conn, 1, 2, socket.MSG_CMSG_CLOEXEC)
            if mode == b"P" and len(fds) == 2:
                reader, writer, rtransport, wtransport = await connect_pipes(fds[0], fds[1], Handover())
                try:
                    await _serve(gw, reader, writer, wtransport)
                finally:
                    rtransport.close()
                    wtransport.close()
                if not self.stopping:
                    with contextlib.suppress(OSError):     # (a relay killed meanwhile)
                        conn.sendall(b"0")
            elif mode == b"S" and not fds:
                reader, writer = await asyncio.open_unix_connection(sock=conn, limit=oversize.MAX_MESSAGE_BYTES)
                writer.transport.set_write_buffer_limits(high=_HIGH_WATER)
                try:
                    await _serve(gw, reader, writer, writer.transport)
                finally:
                    writer.close()
            else:
                for fd in fds:
                    os.close(fd)
                log.warning("shared gateway: a connection that is no relay's (%r) closed", mode)
        except Exception:
            log.exception("a shared session failed")
        finally:
            conn.close()
            self.active -= 1
            self._bump()


async def _readable(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())


async def _serve(gw: Gateway, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 wtransport: asyncio.WriteTransport) -> None:
    """Serve one session on a connection's streams until its client's input ends."""
    out = Coalescer(wtransport)
    pump = Pump(Handover(), reader, writer, wtransport, out, None)
    hot = pump.hot = HotPath(gw, out.write)      # binds this task's session (share.sessions)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump.stdin_reader)
            tg.start_soon(pump.stdout_writer)
            await gw.server.run(pump.read_stream, pump.write_stream, gw.initialization_options())
            tg.cancel_scope.cancel()
    finally:
        hot.unregister()
        hot.cancel_all()
        out.flush()
        with contextlib.suppress(Exception), anyio.move_on_after(5, shield=True):
            if wtransport.get_write_buffer_size():
                await writer.drain()


def run_daemon(storage: Storage, path: str, project: str, profile: str | None, page_size: int,
               verbose: bool) -> None:
    """`serve --project P ... --shared-daemon PATH`: serve the project's sessions at `path`."""
    fd = os.environ.pop(ENV_READY, "")
    ready_fd = int(fd) if fd.isdigit() else None
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)       # not the upstreams': the relay waits for its EOF
    run.setup_logging(project, verbose=verbose)
    front = Front(path, ready_fd, grace())
    run.run(project, storage, transport="shared", profile=profile, page_size=page_size, front=front.serve)
