"""`mcpctl serve --project P --shared` (issue 37): relays over stdio, one shared gateway behind them.

Real processes throughout: the relays are `mcpctl serve --shared` started as a client starts a
gateway (the SDK's stdio client, or a raw JSON-RPC client where a test kills or watches one), the
upstreams are the bundled example servers (`mcpctl example-server calc|textkit`). Every process
carries the kit's mark, so the daemon and the upstreams are found (and any leftover) by scanning /proc.
Process exits are awaited on pidfds, with bounds times the machine's load (`SLACK`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
import tty
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import MCPCTL, SLACK, SRC_ENV, Kit, text_of, wait_tools

GRACE = 1.0
HANDSHAKE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


def _env(kit: Kit, **extra: str) -> dict[str, str]:
    return {"MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark, "MCPCTL_SHARED_GRACE": str(GRACE),
            "PATH": os.environ["PATH"], **SRC_ENV, **extra}


def _project(kit: Kit, **spec: Any) -> str:
    for name in ("calc", "textkit"):
        kit.server(name, "example-server", name, command=MCPCTL)
    return kit.project("p", ["calc", "textkit"], **spec)


def _marked(kit: Kit) -> dict[int, str]:
    """pid -> command line of the live processes carrying the kit's mark."""
    found = {}
    needle = f"MCPCTL_TEST_MARK={kit.mark}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes():
                stat = (d / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    found[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return found


def _daemons(kit: Kit) -> list[int]:
    return [pid for pid, cmd in _marked(kit).items() if "--shared-daemon" in cmd]


def _socket(kit: Kit, daemon: int) -> Path:
    """Where `daemon` listens (its command line's `--shared-daemon PATH`)."""
    args = Path(f"/proc/{daemon}/cmdline").read_bytes().split(b"\0")
    return Path(os.fsdecode(args[args.index(b"--shared-daemon") + 1]))


def _upstreams(kit: Kit, server: str) -> list[int]:
    return [pid for pid, cmd in _marked(kit).items() if f"example-server {server}" in cmd]


def _relays(kit: Kit) -> list[int]:
    return [pid for pid, cmd in _marked(kit).items() if "--shared " in cmd + " " and "--shared-daemon" not in cmd]


def _wait_gone(pid: int, timeout: float) -> bool:
    """Whether process `pid` (any, not only a child) ended within `timeout` seconds: its pidfd's event."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


class RawRelay:
    """`mcpctl serve --shared` with a newline-delimited JSON-RPC client on its pipes."""

    def __init__(self, kit: Kit, project: str, terminal: bool = False, by_env: bool = False,
                 grace: float = GRACE) -> None:
        """`terminal`: stdin and stdout a terminal (raw mode) rather than pipes: the relay splices.
        `by_env`: MCPCTL_SHARED=1 rather than --shared."""
        io: Any = subprocess.PIPE
        self.pty = None
        if terminal:
            self.pty, io = os.openpty()
            tty.setraw(io)
        self.p = subprocess.Popen([MCPCTL, "serve", "--project", project, *([] if by_env else ["--shared"])],
                                  stdin=io, stdout=io, stderr=subprocess.PIPE,
                                  env=_env(kit, MCPCTL_SHARED_GRACE=str(grace),
                                           **({"MCPCTL_SHARED": "1"} if by_env else {})))
        if self.pty is not None:
            os.close(io)
        self.wfd = self.pty if self.pty is not None else self.p.stdin.fileno()   # type: ignore[union-attr]
        self.rfd = self.pty if self.pty is not None else self.p.stdout.fileno()  # type: ignore[union-attr]
        self.buf = b""
        self.n = 0

    def _line(self, deadline: float) -> bytes:
        fd = self.rfd
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no answer from the relay")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("the relay closed stdout")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def _write(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\n"
        while data:
            data = data[os.write(self.wfd, data):]

    def ask(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        self.n += 1
        self._write({"jsonrpc": "2.0", "id": self.n, "method": method, **({"params": params} if params is not None else {})})
        deadline = time.monotonic() + timeout * SLACK
        while True:
            got = json.loads(self._line(deadline))
            if got.get("id") == self.n:
                return dict(got)

    def tell(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def session(self) -> None:
        assert self.ask("initialize", HANDSHAKE)["result"]["serverInfo"]["name"] == "mcpctl"
        self.tell("notifications/initialized")
        self.add()

    def add(self, a: int = 2, b: int = 3) -> None:
        got = self.ask("tools/call", {"name": "calc__add", "arguments": {"a": a, "b": b}}, timeout=60)
        assert got["result"]["content"][0]["text"] == str(a + b), got

    def ended(self, timeout: float = 20.0) -> tuple[int, str]:
        """(exit code, stderr) once the relay has exited."""
        assert self.p.stderr is not None
        rc = self.p.wait(timeout * SLACK)
        return rc, self.p.stderr.read().decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.pty is not None:
                os.close(self.pty)          # the terminal hangs up
                self.pty = None
            elif self.p.stdin is not None:
                self.p.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.p.wait(20 * SLACK)
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        for f in (self.p.stdout, self.p.stderr):
            if f is not None:
                f.close()


@contextlib.asynccontextmanager
async def _client(kit: Kit, project: str, **kw: Any) -> AsyncIterator[Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=MCPCTL, args=["serve", "--project", project, "--shared"], env=_env(kit))
    with open(kit.home / f"client-stderr-{os.urandom(3).hex()}.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", **kw) as c:
            yield c


def _all_gone(kit: Kit, daemon: int) -> None:
    """The daemon exits once idle past the grace (bounded), and leaves no process of the kit behind."""
    assert _wait_gone(daemon, GRACE + 30 * SLACK), "the shared gateway did not exit after its last session"
    assert kit.leftovers(timeout=10) == []


@pytest.mark.anyio
@pytest.mark.parametrize("n", [2, 5])
async def test_relays_share_one_gateway_and_its_upstreams(kit: Kit, n: int) -> None:
    project = _project(kit)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(_client(kit, project)) for _ in range(n)]
        for i, c in enumerate(clients):
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"calc__add", "textkit__slugify"} <= names
            r = await c.session.call_tool("calc__add", {"a": i, "b": 40})
            assert not r.is_error and text_of(r) == str(i + 40)
            r = await c.session.call_tool("textkit__slugify", {"text": f"Hello World {i}"})
            assert not r.is_error and text_of(r) == f"hello-world-{i}"
        daemons = _daemons(kit)
        assert len(daemons) == 1, _marked(kit)
        sock = _socket(kit, daemons[0])
        assert sock.is_socket() and sock.stat().st_mode & 0o777 == 0o600
        assert sock.parent.stat().st_mode & 0o777 == 0o700
        assert len(_upstreams(kit, "calc")) == 1 and len(_upstreams(kit, "textkit")) == 1, _marked(kit)
        relays = _relays(kit)
        assert len(relays) == n
        for pid in relays:       # thin: neither pydantic nor OpenSSL is loaded in a relay
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert "pydantic_core" not in maps and "_hashlib" not in maps
    _all_gone(kit, daemons[0])
    assert not sock.exists()


def test_a_killed_relay_leaves_the_others_served(kit: Kit) -> None:
    project = _project(kit)
    relays = [RawRelay(kit, project) for _ in range(3)]      # started at once: they race to start the daemon
    try:
        for r in relays:
            r.session()
        (daemon,) = _daemons(kit)                           # and one did, under the flock
        relays[0].p.kill()
        relays[0].p.wait()
        for r in relays[1:]:
            r.add(7, 8)
        late = RawRelay(kit, project)       # and a relay started now joins the same gateway
        relays.append(late)
        late.session()
        assert _daemons(kit) == [daemon]
    finally:
        for r in relays:
            r.close()
    _all_gone(kit, daemon)


@pytest.mark.anyio
async def test_each_relay_is_its_own_session(kit: Kit) -> None:
    """The session gate is per session: one relay's client begins, the other's stays gated."""
    project = _project(kit, gate={"enabled": True, "instructions": "Begin first."})
    changed = {"first": anyio.Event(), "second": anyio.Event()}

    def on_message(who: str) -> Any:
        async def handle(msg: object) -> None:
            if isinstance(msg, t.ToolListChangedNotification):
                changed[who].set()
        return handle

    async with _client(kit, project, message_handler=on_message("first")) as first, \
            _client(kit, project, message_handler=on_message("second")) as second:
        assert [x.name for x in (await first.list_tools()).tools] == ["begin_session"]
        assert [x.name for x in (await second.list_tools()).tools] == ["begin_session"]
        r = await first.session.call_tool("begin_session", {"task": "add two numbers"})
        assert not r.is_error
        with anyio.fail_after(10 * SLACK):     # the session that began is told its list changed
            await changed["first"].wait()
        assert "calc__add" in {x.name for x in (await first.list_tools()).tools}
        r = await first.session.call_tool("calc__add", {"a": 1, "b": 1})
        assert not r.is_error and text_of(r) == "2"
        assert [x.name for x in (await second.list_tools()).tools] == ["begin_session"]
        r = await second.session.call_tool("calc__add", {"a": 1, "b": 1})
        assert r.is_error and "call begin_session" in text_of(r)
        assert not changed["second"].is_set()     # (it would have arrived before these answers)
        (daemon,) = _daemons(kit)
    _all_gone(kit, daemon)


@pytest.mark.anyio
async def test_an_upstreams_requests_go_to_the_calling_session(kit: Kit) -> None:
    """Sampling, elicitation and roots asked during a call reach the client of the relay that called."""
    from test_relay_requests import answering

    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], names={"style": "bare"})
    async with _client(kit, project, **answering("alice")) as alice, _client(kit, project, **answering("bob")) as bob:
        await wait_tools(alice, {"sample", "elicit", "roots"})
        for c, who in ((alice, "alice"), (bob, "bob"), (alice, "alice"), (bob, "bob")):
            r = await c.call_tool("sample", {"text": who})
            assert not r.is_error and text_of(r) == f"sampled: {who}: {who}"
            r = await c.call_tool("elicit", {})
            assert not r.is_error and text_of(r) == f"elicited: accept {{'name': '{who}'}}"
            r = await c.call_tool("roots", {})
            assert not r.is_error and text_of(r) == f"roots: file:///{who}"
        (daemon,) = _daemons(kit)
    _all_gone(kit, daemon)


def test_a_terminal_is_spliced_and_pipes_are_handed_over_on_one_gateway(kit: Kit) -> None:
    """Pipes (how clients start a server) are handed to the daemon with SCM_RIGHTS; a terminal is
    not (the daemon could not poll it): its relay splices the bytes. All end with exit code 0; the
    third relay is one by MCPCTL_SHARED=1 rather than the flag."""
    project = _project(kit)
    relays = [RawRelay(kit, project, terminal=True), RawRelay(kit, project), RawRelay(kit, project, by_env=True)]
    try:
        for r in relays:
            r.session()
        (daemon,) = _daemons(kit)
        for r in relays:
            r.add(20, 22)
            r.close()
            assert r.p.returncode == 0
    finally:
        for r in relays:
            r.close()
    _all_gone(kit, daemon)


def test_a_relay_within_the_grace_finds_the_gateway_still_serving(kit: Kit) -> None:
    project = _project(kit)
    first = RawRelay(kit, project, grace=120.0)      # (the daemon's grace is the starting relay's)
    try:
        first.session()
        (daemon,) = _daemons(kit)
        first.close()
        assert first.p.returncode == 0
        second = RawRelay(kit, project)
        try:
            second.session()
            assert _daemons(kit) == [daemon]
        finally:
            second.close()
        assert not _wait_gone(daemon, 0.5)          # idle again, within its grace: still there
        os.kill(daemon, signal.SIGTERM)
    finally:
        first.close()
    _all_gone(kit, daemon)


def _signalled(kit: Kit, relays: list[RawRelay], sig: signal.Signals) -> tuple[int, Path, list[str]]:
    """The relays' sessions begun on one shared gateway, then `sig` sent to it: (its pid, its socket,
    each relay's stderr once it ended, with 1)."""
    for r in relays:
        r.session()
    (daemon,) = _daemons(kit)
    sock = _socket(kit, daemon)
    os.kill(daemon, sig)
    errs = []
    for r in relays:
        rc, err = r.ended()
        assert rc == 1, err
        errs.append(err)
    return daemon, sock, errs


def test_sigterm_stops_the_gateway_and_its_relays_say_so(kit: Kit) -> None:
    project = _project(kit)
    relays = [RawRelay(kit, project) for _ in range(2)]
    try:
        daemon, sock, errs = _signalled(kit, relays, signal.SIGTERM)
        for err in errs:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "the shared gateway of project 'p' closed the connection" in lines[0], err
    finally:
        for r in relays:
            r.close()
    _all_gone(kit, daemon)
    assert not sock.exists()


def test_a_killed_gateway_is_replaced_by_the_next_relay(kit: Kit) -> None:
    project = _project(kit)
    relays = [RawRelay(kit, project) for _ in range(2)]
    try:
        daemon, sock, errs = _signalled(kit, relays, signal.SIGKILL)
        assert all("closed the connection" in err for err in errs), errs
        assert sock.is_socket(), "a killed daemon leaves its socket"
        fresh = RawRelay(kit, project)       # connection refused: a stale socket, replaced
        relays.append(fresh)
        fresh.session()
        (new,) = _daemons(kit)
        assert new != daemon
    finally:
        for r in relays:
            r.close()
    _all_gone(kit, new)


def test_shared_is_for_stdio_only(kit: Kit) -> None:
    project = _project(kit)
    got = subprocess.run([MCPCTL, "serve", "--project", project, "--shared", "--transport", "http"],
                         capture_output=True, text=True, env=_env(kit), timeout=60 * SLACK)
    assert got.returncode == 2 and "--shared" in got.stderr and got.stdout == ""
