"""`mcpctl serve --transport http`: bearer token, DNS-rebinding protection, concurrent clients."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import MCPCTL, Kit, listening_port, text_of, wait_tools
from inproc import Harness

from ci_support import SLACK

pytestmark = pytest.mark.anyio


@dataclass
class HttpGateway:
    """A running `mcpctl serve --transport http` process."""

    url: str
    token: str
    port: int
    proc: subprocess.Popen[bytes]
    stderr: Path

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


@contextlib.contextmanager
def http_gateway_process(kit: Kit, project: str, *extra: str, nofile: int | None = None) -> Iterator[HttpGateway]:
    """`mcpctl serve --transport http` with extra options; `nofile`: its soft RLIMIT_NOFILE."""
    err_path = kit.home / f"http-gateway-{uuid.uuid4().hex[:8]}.stderr"
    log = open(err_path, "w")  # noqa: SIM115

    argv = [MCPCTL, "serve", "--project", project, "--transport", "http", "--port", "0", *extra]
    if nofile is not None:      # through the shell: no preexec_fn in a process that has threads
        argv = ["/bin/sh", "-c", f'ulimit -Sn {int(nofile)} && exec "$@"', "sh", *argv]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    try:
        port = listening_port(proc, err_path)
        token_file = kit.home / "state" / "tokens" / f"{project}.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        yield HttpGateway(f"http://127.0.0.1:{port}/mcp", token_file.read_text().strip(), port, proc, err_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15 * SLACK)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        assert proc.stdout is not None and proc.stdout.read() == b""


@contextlib.contextmanager
def http_gateway(kit: Kit, project: str, *extra: str) -> Iterator[tuple[str, str]]:
    with http_gateway_process(kit, project, *extra) as gw:
        yield gw.url, gw.token


@contextlib.asynccontextmanager
async def http_client(url: str, token: str, mode: str = "legacy", name: str | None = None, *,
                      http: dict[str, Any] | None = None, scheme: str = "Bearer",
                      **client_kw: Any) -> AsyncIterator[Any]:
    """An SDK client over HTTP; `http`: more `httpx2.AsyncClient` arguments; `client_kw` go to `Client`."""
    import httpx2
    import mcp.types as t
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    info = {"client_info": t.Implementation(name=name, version="1.0")} if name else {}
    async with httpx2.AsyncClient(headers={"Authorization": f"{scheme} {token}"},
                                  timeout=httpx2.Timeout(30, read=60), **(http or {})) as h, \
            Client(streamable_http_client(url, http_client=h), mode=mode, **info, **client_kw) as c:
        yield c


def _setup(kit: Kit) -> str:
    kit.server("alpha")
    kit.server("beta")
    return kit.project("p", ["alpha", "beta"], tools={"disabled": ["alpha/delete_*"]})


async def test_auth_origin_and_host_checks(kit: Kit) -> None:
    import httpx2

    with http_gateway(kit, _setup(kit)) as (url, token):
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
            r = await h.post(url, json=body, headers=hdrs)
            assert r.status_code == 401
            r = await h.post(url, json=body, headers={**hdrs, "Authorization": "Bearer wrong"})
            assert r.status_code == 401
            auth = {**hdrs, "Authorization": f"Bearer {token}"}
            r = await h.post(url, json=body, headers={**auth, "Origin": "http://evil.example"})
            assert r.status_code == 403
            r = await h.post(url, json=body, headers={**auth, "Host": "evil.example"})
            assert r.status_code in (403, 421)
            r = await h.post(url, json=body, headers={**auth, "Origin": "http://localhost:3000"})
            assert r.status_code == 200


async def test_host_and_origin_are_parsed_strictly(kit: Kit) -> None:
    """The DNS-rebinding check reads the whole authority: userinfo, junk after the port, a
    second host or a port that is not digits is refused, whatever it starts with."""
    import json
    import socket

    with http_gateway_process(kit, _setup(kit)) as gw:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()

        def status(host: str, origin: str | None = None) -> int:
            head = (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {gw.token}\r\n"
                    "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                    f"{f'Origin: {origin}' + chr(13) + chr(10) if origin else ''}"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
            with socket.create_connection(("127.0.0.1", gw.port), timeout=10 * SLACK) as s:
                s.sendall(head + body)
                return int(s.recv(4096).split(b" ", 2)[1])

        p = gw.port
        for bad in (f"127.0.0.1:{p}@evil.example", "127.0.0.1:80@evil", f"127.0.0.1:{p}/x", f"u@127.0.0.1:{p}",
                    f"127.0.0.1:{p}:1", f"127.0.0.1:{p}x", f"localhost.evil.example:{p}", f"127.0.0.1:{p} evil"):
            assert status(bad) in (400, 421), bad
        for bad_origin in (f"http://127.0.0.1:{p}@evil.example", "http://localhost:3000/x", "http://evil.example",
                           f"http://u@localhost:{p}"):
            assert status(f"127.0.0.1:{p}", bad_origin) == 403, bad_origin
        assert status(f"127.0.0.1:{p}") == 200
        assert status(f"localhost:{p}", "http://localhost:3000") == 200


async def test_bearer_scheme_is_case_insensitive_and_the_token_still_checked(kit: Kit) -> None:
    import httpx2

    with http_gateway(kit, _setup(kit)) as (url, token):
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
            for value, status in ((f"bearer {token}", 200), (f"BEARER {token}", 200), (f"bEaReR  {token}", 200),
                                  ("bearer wrong", 401), (f"bearer {token}x", 401), (f"Basic {token}", 401),
                                  (f"Bearer{token}", 401), ("bearer", 401), (token, 401)):
                r = await h.post(url, json=body, headers={**hdrs, "Authorization": value})
                assert r.status_code == status, value.replace(token, "<token>")
        async with http_client(url, token, "legacy", scheme="bearer") as c:
            r = await c.session.call_tool("beta__echo", {"text": "lower-case scheme"})
            assert text_of(r) == "lower-case scheme"


def _list_changed(caps: Any) -> dict[str, bool | None]:
    return {"tools": caps.tools.list_changed, "prompts": caps.prompts.list_changed,
            "resources": caps.resources.list_changed}


async def test_handshake_http_clients_are_told_lists_change_and_are_notified(kit: Kit) -> None:
    import mcp.types as t

    project = _setup(kit)
    async with kit.client(project, "legacy") as c:
        over_stdio = _list_changed(c.server_capabilities)
    assert over_stdio == {"tools": True, "prompts": True, "resources": True}
    changed = anyio.Event()

    async def on_message(msg: object) -> None:
        if isinstance(msg, t.ToolListChangedNotification):
            changed.set()

    with http_gateway(kit, project) as (url, token):
        async with http_client(url, token, "legacy", message_handler=on_message) as c:
            assert c.protocol_version == "2025-11-25"
            assert _list_changed(c.server_capabilities) == over_stdio
            await wait_tools(c, {"alpha__echo", "beta__echo"})
            changed = anyio.Event()
            r = await c.session.call_tool("alpha__add_tool", {})
            assert not r.is_error
            with anyio.fail_after(10 * SLACK):
                await changed.wait()
            await wait_tools(c, {"alpha__extra_1"}, timeout=10)
        async with http_client(url, token, "auto") as c:
            assert c.protocol_version == "2026-07-28"
            assert _list_changed(c.server_capabilities) == over_stdio
    assert kit.leftovers() == []


@contextlib.asynccontextmanager
async def _two_clients_one_after_the_other(kit: Kit, gw: Harness, front: str, mode: str
                                           ) -> AsyncIterator[Callable[..., Any]]:
    """A function connecting clients to one gateway: `mcpctl serve --transport http`, or in-process
    (`inproc`, each client carrying the project's token as the HTTP front sees it; calls logged)."""
    project = _setup(kit)
    if front == "inproc":
        async with gw.serve(project, log=True) as g:
            yield lambda name=None: g.client(mode, name)
        return
    with http_gateway(kit, project) as (url, token):
        yield lambda name=None: http_client(url, token, mode, name)


@pytest.mark.parametrize(("front", "mode"), [("http", "legacy"), ("http", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_http_clients_both_eras(kit: Kit, gw: Harness, front: str, mode: str) -> None:
    async with _two_clients_one_after_the_other(kit, gw, front, mode) as client:
        async with client() as c:
            assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            await wait_tools(c, {"alpha__echo", "beta__echo"})
            r = await c.session.call_tool("beta__echo", {"text": "over http"})
            assert text_of(r) == "over http"
            r = await c.session.call_tool("alpha__delete_all", {})
            assert r.is_error and "disabled" in text_of(r)
            r = await c.session.call_tool("alpha__structured", {"n": 4})
            assert r.structured_content == {"square": 16}
        async with client("second-client") as other:
            await other.session.call_tool("beta__echo", {"text": "second client"})
    assert kit.leftovers() == []
    # One client is one session in the log, in both eras, and a second client is another:
    # (search -> next call) pairs need it. 2026-era HTTP requests carry no session of their own:
    # there a session is the credential + clientInfo name and version (docs/internals.md).
    from mcpctl.audit.log import InvocationLog

    deadline = time.monotonic() + 10 * SLACK
    while True:
        with InvocationLog() as log:
            rows = log.query(project="p")
        if len(rows) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(rows) == 4
    assert len({r.session_id for r in rows[:3]}) == 1
    assert rows[3].session_id != rows[0].session_id


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_two_clients_ten_thousand_calls_never_misrouted(kit: Kit) -> None:
    """Up to 10,000 calls, bounded in time as well as count: all of them on an idle machine; beside
    another suite on 2 cores, as many as a minute allows, at least a few hundred per client."""
    per_client, in_flight, budget_s, at_least = 5000, 24, 60.0, 300
    with http_gateway(kit, _setup(kit)) as (url, token):
        async def one_client(cid: str, mode: str) -> int:
            ok = 0
            async with http_client(url, token, mode) as c:
                await wait_tools(c, {"alpha__echo", "beta__echo"})
                counter = iter(range(per_client))

                async def worker() -> None:
                    nonlocal ok
                    for i in counter:
                        if time.monotonic() > deadline:
                            return
                        nonce = f"{cid}-{i}"
                        tool = "alpha__echo" if i % 2 else "beta__echo"
                        r = await c.session.call_tool(tool, {"text": nonce})
                        assert text_of(r) == nonce, f"misrouted: sent {nonce}, got {text_of(r)[:40]}"
                        ok += 1

                async with anyio.create_task_group() as tg:
                    for _ in range(in_flight):
                        tg.start_soon(worker)
            return ok

        results: dict[str, int] = {}

        async def run(cid: str, mode: str) -> None:
            results[cid] = await one_client(cid, mode)

        deadline = time.monotonic() + budget_s
        with anyio.fail_after(budget_s + 120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "A", "legacy")
                tg.start_soon(run, "B", "auto")
        assert set(results) == {"A", "B"} and all(at_least <= n <= per_client for n in results.values()), results
    assert kit.leftovers() == []
