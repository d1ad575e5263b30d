"""Any replica answers (issue 36): three real `mcpctl serve --transport http` replicas on one
PostgreSQL behind a round-robin proxy, clients of both eras, no affinity anywhere.

The proxy (`RoundRobin`, written here) sends each connection to the next replica, and the clients
keep no connection alive, so consecutive requests of one client land on different replicas: a
handshake-era session's requests reach its replica through the others (forwarded inside the
cluster), a 2026-07-28 client's through any. Each client passes the session gate, lists, calls,
reads a cut result with `read_result` and makes a call that parks for an elicitation.

Like a load balancer with passive health checks (envoy's `retry_on: connect-failure,reset`), the
proxy moves on to the next replica when one refuses the connection or closes it before answering
a byte; nothing else is retried. That is what keeps a 2026-07-28 request in flight on the replica
killed from failing: the SDK answers it with one JSON body when it is done (SSE only once the
handler has sent a notification) and the front writes its head and body in one write
(`mcpctl.wire`), so a killed replica has sent nothing yet. A handshake-era request
answered over SSE whose stream ran through the killed replica (its owner, or the replica that
forwarded it) breaks mid-answer: that client starts a new session, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp.types as t
import pytest
from teamkit import Gateway, Kit, kill_all, rows_by, start_gateways, terminate, token_for

from ci_support import SLACK

pytestmark = [pytest.mark.timeout(600), pytest.mark.filterwarnings(
    "ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FAULT_SERVER = Path(__file__).resolve().parents[1] / "servers" / "fault_server.py"
REPLICAS = 3
REQUESTS = 1000                 # requests of the clients, in all
CLIENTS = 4                     # per era
ERAS = ("legacy", "2026-07-28")
NOTE = re.compile(r'read_result\(result_id="(r[0-9a-f]+)", section=2\)')
KILL_AFTER = 300                # requests answered before a replica is killed (the kill test)


# -- the round-robin proxy --------------------------------------------------------------------------


class RoundRobin:
    """A TCP proxy on loopback: each connection goes to the next replica; a replica that refuses
    the connection, or closes it before answering a byte, is skipped for the next one (the
    request's bytes are sent again there). Counts connections per replica port."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.next = 0
        self.per_port: Counter[int] = Counter()
        self.skipped = 0
        self.statuses: Counter[str] = Counter()     # answers by status line
        self.refused: list[str] = []                # the answers that were not 2xx
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)

    async def _request(self, reader: asyncio.StreamReader) -> bytes:
        """One request's bytes: its head, and its body (Content-Length)."""
        head = await reader.readuntil(b"\r\n\r\n")
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        return head + (await reader.readexactly(int(m.group(1))) if m else b"")

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            request = await self._request(creader)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            cwriter.close()
            return
        start, self.next = self.next, self.next + 1
        for i in range(len(self.ports)):        # the next replica, then each other one once
            port = self.ports[(start + i) % len(self.ports)]
            try:
                breader, bwriter = await asyncio.open_connection("127.0.0.1", port)
                bwriter.write(request)
                await bwriter.drain()
                first = await breader.read(65536)
            except (ConnectionError, OSError):
                first = b""
                bwriter = None
            if not first:
                self.skipped += 1
                if bwriter is not None:
                    bwriter.close()
                continue
            self.per_port[port] += 1
            status = first.split(b"\r\n", 1)[0]
            self.statuses[status.decode("latin-1")] += 1
            if b" 2" not in status[:13]:
                self.refused.append(f"{request.split(b' HTTP/')[0].decode('latin-1')} -> {first[:600]!r}")
            cwriter.write(first)
            await self._pipe_both(creader, cwriter, breader, bwriter)
            return
        cwriter.close()

    @staticmethod
    async def _pipe_both(creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter,
                         breader: asyncio.StreamReader, bwriter: asyncio.StreamWriter) -> None:
        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        tasks = [asyncio.create_task(pipe(creader, bwriter)), asyncio.create_task(pipe(breader, cwriter))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        bwriter.close()
        cwriter.close()


# -- the clients -----------------------------------------------------------------------------------


@dataclass
class Run:
    """The requests answered (per era and kind), the failures, and the handshake-era clients'
    new sessions after a replica was lost."""

    answered: Counter[tuple[str, str]] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    reinitialized: Counter[str] = field(default_factory=Counter)
    killed: bool = False
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def total(self) -> int:
        return sum(self.answered.values())


def _text(r: Any) -> str:
    return "".join(getattr(b, "text", "") for b in r.content)


async def _elicited(ctx: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "alice"})


async def _session(c: Any, run: Run, era: str, label: str) -> None:
    """One client's round of requests until the run has REQUESTS answered (or stops)."""

    def ok(kind: str) -> None:
        run.answered[era, kind] += 1
        if run.total() >= REQUESTS:
            run.stop.set()

    begun = await c.call_tool("begin_session", {"task": "replica test"})
    assert not begun.is_error, _text(begun)
    ok("gate")
    i = 0
    while not run.stop.is_set():
        i += 1
        names = {tl.name for tl in (await c.session.list_tools()).tools}
        assert "up__synthetic_0001" in names, f"{label}: the gate's view after begin_session: {sorted(names)[:5]}"
        ok("list")
        r = await c.session.call_tool(f"up__synthetic_{i % 4:04d}", {})
        assert not r.is_error and f"synthetic_{i % 4:04d} ok" in _text(r), _text(r)
        ok("call")
        if i % 4 == 1:
            r = await c.session.call_tool("up__large_text", {"size": 6000})
            m = NOTE.search(_text(r))
            assert not r.is_error and m is not None, _text(r)[-300:]
            ok("call")
            section = await c.session.call_tool("read_result", {"result_id": m.group(1), "section": 2})
            assert not section.is_error, f"{label}: {_text(section)}"
            ok("read_result")
        if i % 4 == 2:
            r = await c.call_tool("up__elicit", {"message": "name?"})
            assert _text(r) == "elicited: accept {'name': 'alice'}", f"{label}: {_text(r)}"
            ok("elicit")


async def client(port: int, token: str, era: str, k: int, run: Run) -> None:
    """A client of the proxy; a handshake-era client whose session was lost with its replica
    (after the kill) starts a new session, once."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    label = f"{era}#{k}"
    while not run.stop.is_set():
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          limits=httpx2.Limits(max_keepalive_connections=0),
                                          timeout=httpx2.Timeout(30, read=60)) as h, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h), mode=era,
                           client_info=t.Implementation(name=label, version="1"),
                           elicitation_callback=_elicited) as c:
                await _session(c, run, era, label)
            return
        except Exception as e:
            what = f"{label}: {type(e).__name__}: {_flat(e)}"
            if era == "legacy" and run.killed and run.reinitialized[label] == 0:
                run.reinitialized[label] += 1       # its session was on the lost replica: a new one
                print(f"re-initialized after: {what}")
                continue
            run.failed.append(what)
            run.stop.set()
            return


def _flat(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_flat(x) for x in e.exceptions)
    return str(e)[:300]


# -- the tests ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def upstream(kit: Kit) -> Iterator[None]:
    """The project's one upstream, shared by the replicas: fault_server over streamable HTTP (an
    upstream that says which call its elicitation belongs to), on a socket this test bound to port
    0 and hands over; the project gates sessions and cuts results over 1,000 tokens."""
    kit.home.mkdir(parents=True, exist_ok=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(FAULT_SERVER), "--name", "up", "--http-fd", str(sock.fileno()),
                             "--tools", "4", "--ask-tools", "--large-tools"], pass_fds=[sock.fileno()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    sock.close()
    try:
        kit.http_server("up", f"http://127.0.0.1:{port}/mcp")
        kit.project("p", ["up"], gate={"enabled": True, "instructions": "Say what you are about to do."},
                    results={"maxTokens": 1000})
        yield
    finally:
        proc.kill()
        proc.wait(30 * SLACK)


async def _until(run: Run, condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout * SLACK
    while not condition():
        assert not run.failed, run.failed[:5]
        assert time.monotonic() < deadline, f"{what}: {run.total()} requests answered"
        await asyncio.sleep(0.05)


def elicit_rows(url: str) -> list[tuple[str, str]]:
    """(the replica that parked it, the replica that answered it) of each 2026-07-28 client's
    `up__elicit` call, from the log: a parked call's row (InputRequired) then its resumption's."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT client_name, host, error_class FROM invocations WHERE presented_name = "
                            "'up__elicit' AND client_name LIKE '2026%' ORDER BY ts").fetchall()
    pending: dict[str, str] = {}
    pairs = []
    for client_name, host, error_class in rows:
        if error_class == "InputRequired":
            pending[client_name] = host
        else:
            pairs.append((pending.pop(client_name), host))
    return pairs


def _replicas_in_table(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM replicas").fetchone()
    return int(row[0]) if row else 0


def _scenario(kit: Kit, url: str, kill: bool) -> tuple[Run, RoundRobin, list[Gateway], float]:
    gateways: list[Gateway] = []
    run = Run()
    proxy: RoundRobin | None = None
    t0 = time.monotonic()
    try:
        token = token_for("p")          # before the replicas start: one project token for all of them
        gateways = start_gateways(kit, url, [f"gw{i + 1}" for i in range(REPLICAS)])

        async def main() -> RoundRobin:
            rr = RoundRobin([gw.port for gw in gateways])
            await rr.start()
            deadline = time.monotonic() + 30 * SLACK
            while await asyncio.to_thread(_replicas_in_table, url) < REPLICAS:   # each has registered
                assert time.monotonic() < deadline, "the replicas did not register"
                await asyncio.sleep(0.1)
            tasks = [asyncio.create_task(client(rr.port, token, era, k, run)) for era in ERAS for k in range(CLIENTS)]
            try:
                if kill:
                    await _until(run, lambda: run.total() >= KILL_AFTER, 120, "requests before the kill")
                    run.killed = True
                    gateways[-1].proc.send_signal(signal.SIGKILL)
                done, _ = await asyncio.wait(tasks, timeout=180 * SLACK)
                assert len(done) == len(tasks), f"clients still running: {run.total()} requests answered"
            finally:
                run.stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)
                await rr.close()
                print(f"\nanswers: {dict(rr.statuses)}; not 2xx: {rr.refused[:10]}")
            return rr

        proxy = asyncio.run(main())
        elapsed = time.monotonic() - t0
        terminate(gw for gw in gateways if gw.proc.poll() is None)
    finally:
        kill_all(gateways)
    return run, proxy, gateways, elapsed


def test_three_replicas_answer_1000_requests_of_both_eras_through_a_round_robin_proxy(
        tmp_home: Path, pg_db: str) -> None:
    kit = Kit(tmp_home)
    with upstream(kit):
        run, proxy, _, elapsed = _scenario(kit, pg_db, kill=False)
    print(f"{run.total()} requests in {elapsed:.1f}s: {dict(run.answered)}; connections per replica "
          f"{dict(proxy.per_port)}")
    assert run.failed == []
    assert run.total() >= REQUESTS
    for era in ERAS:
        for kind in ("gate", "list", "call", "read_result", "elicit"):
            assert run.answered[era, kind] > 0, (era, kind)
    assert len(proxy.per_port) == REPLICAS and min(proxy.per_port.values()) > REQUESTS // (2 * REPLICAS)
    assert proxy.skipped == 0
    # Who answered, from the log's rows (host: the replica): a handshake-era session's calls all
    # ran on its replica, though its requests reached all three (forwarded); a 2026-07-28 client's
    # ran on all three; and each parked call was resumed by the replica it parked on.
    hosts: dict[str, set[str]] = {}
    for client_name, host in rows_by(pg_db, "client_name", "host"):
        hosts.setdefault(client_name, set()).add(host)
    for k in range(CLIENTS):
        assert len(hosts[f"legacy#{k}"]) == 1, hosts
        assert len(hosts[f"2026-07-28#{k}"]) == REPLICAS, hosts
    parked = elicit_rows(pg_db)
    assert parked and all(first == then for first, then in parked), parked
    assert kit.leftovers() == []


def test_a_replica_killed_mid_run_2026_clients_see_no_error_handshake_clients_start_again(
        tmp_home: Path, pg_db: str) -> None:
    kit = Kit(tmp_home)
    with upstream(kit):
        run, proxy, gateways, elapsed = _scenario(kit, pg_db, kill=True)
    print(f"{run.total()} requests in {elapsed:.1f}s, a replica killed after {KILL_AFTER}: "
          f"{dict(run.answered)}; re-initialized: {dict(run.reinitialized)}; skipped {proxy.skipped}")
    assert run.failed == []
    assert run.total() >= REQUESTS
    assert gateways[-1].proc.returncode == -signal.SIGKILL
    # the kill was in the run: the lost replica had answered, and later requests met it gone
    assert proxy.per_port[gateways[-1].port] > 0 and proxy.skipped > 0, (dict(proxy.per_port), proxy.skipped)
    assert all(n <= 1 for n in run.reinitialized.values())
    for era in ERAS:
        for kind in ("list", "call", "read_result", "elicit"):
            assert run.answered[era, kind] > 0, (era, kind)
    assert kit.leftovers() == []


def test_a_replica_on_a_database_without_the_cluster_schema_says_to_migrate(tmp_home: Path, pg_db: str) -> None:
    import psycopg

    kit = Kit(tmp_home)
    kit.home.mkdir(parents=True, exist_ok=True)
    kit.project("p", [])
    with psycopg.connect(pg_db) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE component = 'cluster'")
    r = subprocess.run([str(Path(sys.executable).parent / "mcpctl"), "serve", "--project", "p", "--transport", "http",
                        "--port", "0"], capture_output=True, text=True, timeout=60 * SLACK,
                       env={**os.environ, "MCPCTL_DATABASE_URL": pg_db, "MCPCTL_TEST_MARK": kit.mark})
    assert r.returncode != 0
    assert "cluster schema" in r.stderr and "mcpctl db migrate" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert kit.leftovers() == []


def test_a_session_begun_on_one_replica_is_told_its_tools_on_another(tmp_home: Path, pg_db: str) -> None:
    """A 2026-07-28 client's `subscriptions/listen` stream is open on one replica and its
    `begin_session` lands on another: the stream still hears `tools/list_changed` (NOTIFY
    mcpctl_gate), and the replica it is open on lists the session's whole view."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    kit = Kit(tmp_home)
    gateways: list[Gateway] = []
    with upstream(kit):
        try:
            token = token_for("p")
            gateways = start_gateways(kit, pg_db, ["gw1", "gw2"])
            info = t.Implementation(name="one-client", version="1")       # one identity, two replicas

            async def main() -> None:
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                              timeout=httpx2.Timeout(30, read=60)) as h, \
                        Client(streamable_http_client(f"http://127.0.0.1:{gateways[0].port}/mcp", http_client=h),
                               mode="2026-07-28", client_info=info) as listener, \
                        Client(streamable_http_client(f"http://127.0.0.1:{gateways[1].port}/mcp", http_client=h),
                               mode="2026-07-28", client_info=info) as caller:
                    changed = anyio.Event()
                    async with anyio.create_task_group() as tg, listener.listen(tools_list_changed=True) as sub:
                        async def wait() -> None:
                            async for _ in sub:
                                changed.set()
                                return

                        tg.start_soon(wait)
                        before = {tl.name for tl in (await listener.session.list_tools()).tools}
                        assert "up__synthetic_0001" not in before            # gated
                        begun = await caller.call_tool("begin_session", {"task": "across replicas"})
                        assert not begun.is_error
                        with anyio.fail_after(10 * SLACK):
                            await changed.wait()
                        after = {tl.name for tl in (await listener.session.list_tools()).tools}
                        assert "up__synthetic_0001" in after
                        tg.cancel_scope.cancel()

            asyncio.run(main())
            terminate(gateways)
        finally:
            kill_all(gateways)
    assert kit.leftovers() == []
