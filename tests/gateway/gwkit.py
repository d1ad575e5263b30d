"""Gateway test kit (imported by the tests as `gwkit`): register test upstreams, start `mcpctl serve`, find leftover processes.

Every upstream registered through the kit declares `MCPCTL_TEST_MARK=<unique>` in its env, so
a test can find any process it left behind by scanning /proc for that mark.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[2]
FAULT_SERVER = REPO / "tests" / "servers" / "fault_server.py"
BIN = Path(sys.executable).parent
MCPCTL = str(BIN / "mcpctl")
NPM_DIR = Path(os.environ.get("MCPCTL_NPM_SERVERS", REPO / ".npm-servers"))
# The explicit bounds get this much slack: MCPCTL_TEST_SLACK times the machine's load per
# core, read at each use (ci_support.Slack), so a bound holds beside another suite on 2 cores.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ci_support import SLACK  # noqa: E402  (re-exported: `from gwkit import SLACK`)

# A gateway started with a minimal environment (as clients start it) still runs the code under
# test when the checkout is put on the path with PYTHONPATH rather than installed.
SRC_ENV: dict[str, str] = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def _mark_pids(mark: str) -> list[int]:
    pids = []
    needle = f"MCPCTL_TEST_MARK={mark}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes():
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


class Kit:
    """Registers resources in the test's MCPCTL_HOME and runs gateways against them."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.mark = uuid.uuid4().hex
        from mcpctl.storage import Storage

        self.store = Storage.open().store      # the store in effect: PostgreSQL under pg_db

    # -- resources ------------------------------------------------------------------------------

    def server(self, name: str, *args: str, call: float = 10.0, connect: float = 20.0,
               env: dict[str, str] | None = None, command: str | None = None) -> str:
        spec: dict[str, Any] = {
            "transport": "stdio",
            "command": command or sys.executable,
            "args": list(args) if command else [str(FAULT_SERVER), "--name", name, *args],
            "env": {"MCPCTL_TEST_MARK": self.mark, **(env or {})},
            "timeouts": {"connect": connect, "call": call},
        }
        self.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name}, "spec": spec})
        return name

    def http_server(self, name: str, url: str, headers: dict[str, str] | None = None) -> str:
        self.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                        "spec": {"transport": "http", "url": url, "headers": headers or {}}})
        return name

    def project(self, name: str, servers: list[str], **spec: Any) -> str:
        self.store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": name},
                        "spec": {"servers": servers, **spec}})
        return name

    # -- gateways -------------------------------------------------------------------------------

    def params(self, project: str, *extra: str) -> Any:
        from mcp import StdioServerParameters

        return StdioServerParameters(command=MCPCTL, args=["serve", "--project", project, *extra],
                                     env={"MCPCTL_HOME": str(self.home), "MCPCTL_TEST_MARK": self.mark, **SRC_ENV})

    @contextlib.asynccontextmanager
    async def client(self, project: str, mode: str = "legacy", **kw: Any) -> AsyncIterator[Any]:
        from mcp import Client
        from mcp.client.stdio import stdio_client

        errlog = open(self.home / f"client-stderr-{uuid.uuid4().hex[:6]}.log", "w")  # noqa: SIM115
        try:
            async with Client(stdio_client(self.params(project), errlog=errlog), mode=mode, **kw) as c:
                yield c
        finally:
            errlog.close()

    def leftovers(self, timeout: float = 8.0) -> list[int]:
        """Processes carrying this kit's mark still alive after `timeout` seconds (times the load's slack)."""
        deadline = time.monotonic() + timeout * SLACK
        while True:
            pids = [p for p in _mark_pids(self.mark) if _alive(p)]
            if not pids or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_tools(client: Any, want: set[str] | int, timeout: float = 20.0) -> list[Any]:
    """Re-list until every name in `want` (or at least `want` tools) is listed, within `timeout`
    seconds times the load's slack. A client of an in-process gateway (`inproc`) re-lists at each
    change instead of polling."""
    running = getattr(client, "gw", None)
    if running is not None:
        return await running.wait_tools(client, want, timeout)   # type: ignore[no-any-return]
    with anyio.fail_after(timeout * SLACK):
        while True:
            tools = (await client.list_tools()).tools
            names = {t.name for t in tools}
            if (want <= names) if isinstance(want, set) else len(tools) >= want:
                return tools
            await anyio.sleep(0.1)


async def until(client: Any, check: Any, timeout: float = 20.0, interval: float = 0.1,
                poll: float | None = None) -> None:
    """Wait until `check()` (sync or async) holds: re-checked at each change for a client of an
    in-process gateway (`inproc`; and every `poll` s if given: what no event announces), else
    every `interval` seconds (a gateway in another process); within `timeout` times the load's slack."""
    running = getattr(client, "gw", None)
    if running is not None:
        await running.until(check, timeout, poll)
        return
    with anyio.fail_after(timeout * SLACK):
        while True:
            got = check()
            if not isinstance(got, bool):
                got = await got
            if got:
                return
            await anyio.sleep(interval)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[Any], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` s (times the load's slack)."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout * SLACK)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_listening(port: int, proc: subprocess.Popen[Any], what: str, *, timeout: float = 20.0,
                   stderr: Path | None = None) -> None:
    """Wait until `proc` accepts connections on loopback `port` (within `timeout` times the load's
    slack); fail if it exits first, with `stderr`'s text when given."""
    deadline = time.monotonic() + timeout * SLACK
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            detail = stderr.read_text(errors="replace")[-4000:] if stderr is not None else ""
            raise AssertionError(f"{what} exited with {proc.returncode} before listening on {port}\n{detail}")
        assert time.monotonic() < deadline, f"{what} did not listen on {port} within {timeout * SLACK:.0f}s"
        time.sleep(0.05)


def listening_port(proc: subprocess.Popen[Any], stderr: Path, what: str = "the gateway", *,
                   timeout: float = 30.0) -> int:
    """The port `mcpctl serve --transport http --port 0` listens on, from the line it prints once
    the socket listens ("serving project 'p' at http://127.0.0.1:PORT/mcp"): held by the gateway
    from the start, never a free port guessed and raced for. Bounded; fails if `proc` exits."""
    import re

    deadline = time.monotonic() + timeout * SLACK
    while True:
        text = stderr.read_text(errors="replace") if stderr.exists() else ""
        m = re.search(r"serving project '[^']*' at http://[^:/]+:(\d+)/mcp", text)
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode} before listening\n{text[-4000:]}")
        assert time.monotonic() < deadline, f"{what} did not listen within {timeout * SLACK:.0f}s\n{text[-4000:]}"
        time.sleep(0.05)


def npm_bin(name: str) -> str | None:
    p = NPM_DIR / "node_modules" / ".bin" / name
    if p.exists() and shutil.which("node"):
        return str(p)
    return None


@contextlib.contextmanager
def http_upstream(kit: Kit, name: str, *args: str) -> Any:
    """`fault_server.py --http-port` (with `args`) as a streamable-HTTP upstream named `name`."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FAULT_SERVER), "--name", name, "--http-port", str(port), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    try:
        wait_listening(port, proc, "the HTTP upstream")
        kit.http_server(name, f"http://127.0.0.1:{port}/mcp")
        yield name
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10 * SLACK)
        except subprocess.TimeoutExpired:
            proc.kill()


class LoopbackHTTP:
    """A test's HTTP handler served on loopback by a thread (`url`; `close()` stops and frees the
    port); with `tls`, over HTTPS with that server context (`url` then says https)."""

    server: http.server.ThreadingHTTPServer
    url: str

    def _serve(self, handler: type[http.server.BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
