"""The invocation log keeps every answered call when the gateway stops (defect 7).

A real `mcpctl serve` over stdio, a real fault_server upstream, a raw newline-JSON-RPC client
that keeps calls in flight, and the real SQLite file. After a SIGTERM, SIGINT or stdin EOF the log
holds a row for every call the client got an answer to (including the error results answered
while the gateway shut down). After a kill -9, what can be missing is bounded: the calls answered
in the last few milliseconds (docs/internals.md, "Guarantees").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from gwkit import MCPCTL, SLACK, Kit, free_port, wait_listening, wait_tools

# The documented bound: a kill -9 loses at most the calls answered in the last KILL_WINDOW_S.
KILL_WINDOW_S = 0.050


TOOLS = 2000                            # one name per call of a burst: a log row names its call


@dataclass
class Burst:
    sent: int = 0
    answered: int = 0
    errors: int = 0                     # isError results and JSON-RPC errors
    answers: list[tuple[float, str]] = field(default_factory=list)   # (when, presented name)
    first_call: float = 0.0

    def lost(self, logged: Counter[str]) -> list[tuple[float, str]]:
        """The answered calls with no row: per name, the latest answers beyond the rows logged."""
        left = Counter(logged)
        missing = []
        for when, name in self.answers:
            if left[name] > 0:
                left[name] -= 1
            else:
                missing.append((when, name))
        return missing


class RawGateway:
    """`mcpctl serve` as a child process, spoken to in raw JSON-RPC lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.calls: dict[int, str] = {}
        self.burst = Burst()
        self.probes = 0                 # calls made by `ready` (they are logged too)
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, kit: Kit, project: str) -> RawGateway:
        env = {**os.environ, "MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark}
        stderr = open(kit.home / f"gateway-stderr-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        proc = await asyncio.create_subprocess_exec(
            MCPCTL, "serve", "--project", project, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env, limit=64 * 1024 * 1024)
        stderr.close()
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            rid = msg.get("id")
            if rid is None or "method" in msg:
                continue
            if rid in self.calls:
                self.burst.answered += 1
                self.burst.answers.append((time.monotonic(), self.calls[rid]))
                if "error" in msg or msg.get("result", {}).get("isError"):
                    self.burst.errors += 1
            fut = self.pending.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the gateway closed its stdout"))
                fut.exception()       # retrieved: a call left unanswered is what these tests expect

    def send(self, method: str, params: dict[str, Any] | None = None, *, call: bool = False
             ) -> asyncio.Future[dict[str, Any]]:
        assert self.proc.stdin is not None
        self.next_id += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        if call:
            assert params is not None
            self.calls[self.next_id] = params["name"]
            self.burst.sent += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        return fut

    async def ready(self, tool: str, timeout: float = 30) -> None:
        """Initialise, wait until `tool` is listed and `up__echo` answers (each probe is logged)."""
        await asyncio.wait_for(self.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                        "clientInfo": {"name": "durability", "version": "1"}}), 20)
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = await asyncio.wait_for(self.send("tools/list"), 20 * SLACK)
            names = {t["name"] for t in listed["result"]["tools"]}
            if tool in names:
                self.probes += 1
                r = await asyncio.wait_for(self.send("tools/call", {"name": "up__echo", "arguments": {"text": "hi"}}),
                                           20)
                if not r.get("result", {}).get("isError"):
                    return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{tool} never became callable")

    async def burst_calls(self, in_flight: int, until: asyncio.Event, slow_every: int = 0) -> None:
        """Keep `in_flight` calls outstanding (a different tool each) until `until` is set or the
        gateway is gone; every `slow_every`-th call takes 0.5 s."""
        self.burst.first_call = time.monotonic()
        outstanding: set[asyncio.Future[dict[str, Any]]] = set()
        n = 0
        try:
            while not until.is_set() and not self.reader.done():
                while len(outstanding) < in_flight:
                    n += 1
                    if slow_every and n % slow_every == 0:
                        fut = self.send("tools/call", {"name": "up__slow", "arguments": {"seconds": 0.5}}, call=True)
                    else:
                        fut = self.send("tools/call", {"name": f"up__synthetic_{n % TOOLS:04d}"}, call=True)
                    outstanding.add(fut)
                _, outstanding = await asyncio.wait(outstanding, timeout=0.5, return_when=asyncio.FIRST_COMPLETED)
        except (ConnectionError, BrokenPipeError, RuntimeError):
            pass

    async def finish(self, timeout: float = 30) -> int:
        await asyncio.wait_for(self.reader, timeout)
        return await asyncio.wait_for(self.proc.wait(), timeout)


async def _until(condition: Any, timeout: float = 20) -> None:
    """Wait (bounded) until `condition()`: a burst long enough, however loaded the machine."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _logged(project: str, after: int = 0) -> tuple[Counter[str], int, int]:
    """Rows per presented name after cursor `after`, how many are errors, and the new cursor."""
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:
        cursor = log.cursor()
        rows = log.query(project=project, after_cursor=after, upto_cursor=cursor)
    return Counter(r.presented_name for r in rows), sum(1 for r in rows if r.outcome != "ok"), cursor


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "EOF"])
def test_a_clean_stop_loses_no_answered_call(kit: Kit, how: str) -> None:
    """Calls keep coming (64 in flight, some slow) while the gateway stops: every answer the
    client got, results and the error results answered during shutdown alike, has its row."""
    kit.server("up", "--tools", str(TOOLS), call=5)
    kit.project("p", ["up"])

    async def scenario() -> Burst:
        gw = await RawGateway.start(kit, "p")
        await gw.ready(f"up__synthetic_{TOOLS - 1:04d}")
        gw.calls.clear()
        gw.burst = Burst()
        stop = asyncio.Event()
        burst = asyncio.create_task(gw.burst_calls(64, stop, slow_every=7))
        await _until(lambda: gw.burst.answered >= 300)
        if how == "EOF":
            stop.set()
            await burst
            assert gw.proc.stdin is not None
            gw.proc.stdin.close()
        else:
            gw.proc.send_signal(getattr(signal, how))
            # calls keep coming while the gateway shuts down, until it closes its stdout
            await asyncio.wait_for(asyncio.shield(gw.reader), 20 * SLACK)
            stop.set()
            await burst
        rc = await gw.finish()
        assert rc in (0, -signal.SIGTERM, -signal.SIGINT), rc
        return gw.burst

    b = asyncio.run(scenario())
    assert b.answered >= 300, (b.sent, b.answered)
    logged, error_rows, _ = _logged("p")
    logged.subtract({"up__echo": logged["up__echo"]})      # the readiness probes
    lost = b.lost(logged)
    assert lost == [], f"{how}: {b.answered} calls answered, {len(lost)} of them not logged"
    assert error_rows >= b.errors, f"{how}: {b.errors} error results answered, {error_rows} logged"
    assert kit.leftovers() == []


def test_sigterm_over_http_loses_no_answered_call(kit: Kit) -> None:
    """The same over HTTP: SIGTERM while 24 calls of an SDK client are in flight."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    kit.server("up", "--tools", str(TOOLS), call=5)
    kit.project("p", ["up"])
    port = free_port()
    with open(kit.home / "http-gateway.stderr", "w") as err:
        proc = subprocess.Popen([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", str(port)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    answered: Counter[str] = Counter()
    try:
        wait_listening(port, proc, "the gateway")
        token = (kit.home / "state" / "tokens" / "p.token").read_text().strip()

        async def scenario() -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          timeout=httpx2.Timeout(30, read=60)) as h, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h), mode="legacy") as c:
                await wait_tools(c, {f"up__synthetic_{TOOLS - 1:04d}"})
                numbers = iter(range(100_000))

                async def worker() -> None:
                    for i in numbers:
                        name = "up__slow" if i % 7 == 0 else f"up__synthetic_{i % TOOLS:04d}"
                        try:
                            await c.session.call_tool(name, {"seconds": 0.5} if name == "up__slow" else {})
                        except Exception:   # the gateway is gone: this call was not answered
                            return
                        answered[name] += 1

                workers = [asyncio.create_task(worker()) for _ in range(24)]
                await _until(lambda: sum(answered.values()) >= 150)
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait(workers, timeout=20 * SLACK)

        with contextlib.suppress(Exception):   # closing the client's session fails: the gateway is gone
            asyncio.run(scenario())
        assert proc.wait(20 * SLACK) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sum(answered.values()) >= 150, answered
    logged, _, _ = _logged("p")
    lost = sum(max(0, n - logged[name]) for name, n in answered.items())
    assert lost == 0, f"{sum(answered.values())} calls answered, {lost} of them not logged"
    assert kit.leftovers() == []


def test_a_recorded_call_is_committed_within_the_window(tmp_home: Any) -> None:
    """The kill -9 window is the time from recording a call to its commit: measured on the
    gateway's own recorder and a real log file, 500 calls at ~400/s, each row's arrival seen by a
    separate reader connection (before the fix: 50-100 ms, the recorder's and the writer's timers)."""
    import sqlite3
    import threading

    from mcpctl import paths
    from mcpctl.gateway.run import _Recorder
    from mcpctl.storage import Storage

    recorded: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = threading.Event()

    def watch() -> None:
        db = sqlite3.connect(paths.invocation_log_path())
        last, give_up = 0, time.monotonic() + 30
        while time.monotonic() < give_up and not (done.is_set() and len(seen) >= len(recorded)):
            for rid, name in db.execute("SELECT id, presented_name FROM invocations WHERE id > ?", (last,)):
                seen[name] = time.monotonic()
                last = rid
            time.sleep(0.001)
        db.close()

    async def calls(recorder: _Recorder) -> None:
        for i in range(500):
            recorded[f"c{i}"] = time.monotonic()
            recorder.record(ts=time.time(), duration_ms=0.1, project="p", presented_name=f"c{i}",
                            canonical_id="s/t", outcome="ok")
            await asyncio.sleep(0.0025)
        await asyncio.sleep(0.2)      # the loop runs on, as a gateway's does (this is not a shutdown)

    recorder = _Recorder(Storage())
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        asyncio.run(calls(recorder))
    finally:
        done.set()
        watcher.join(40)
        recorder.close()
    assert set(seen) == set(recorded)
    delays = sorted(seen[n] - recorded[n] for n in recorded)
    p50, p95, worst = delays[len(delays) // 2], delays[len(delays) * 95 // 100], delays[-1]
    detail = f"p50 {1000 * p50:.1f} ms, p95 {1000 * p95:.1f} ms, max {1000 * worst:.1f} ms"
    print(f"record -> commit: {detail}")
    # The window is the recorder's and the writer's timers: a regression moves every call (before
    # the fix p50 was 50-100 ms). One call stalled by another process on these 2 cores is not one.
    assert p95 <= KILL_WINDOW_S * SLACK, detail
    assert worst <= 4 * KILL_WINDOW_S, detail


@pytest.mark.stress
def test_kill_9_loses_at_most_the_documented_window(kit: Kit) -> None:
    """kill -9 mid-burst (16 calls in flight), three times. The calls answered with no row,
    divided by the call rate, are the window of calls a kill lost: at most KILL_WINDOW_S in each
    run, and half that on average (before the fix: 0-100 ms, ~50 ms on average, up to 101 calls
    lost per kill at ~1,000 calls/s). The age of the newest row at the kill is reported too:
    rows commit in the order recorded, so every lost call was recorded after it."""
    from mcpctl.audit.log import InvocationLog

    kit.server("up", "--tools", str(TOOLS), call=5)
    kit.project("p", ["up"])
    report = []
    cursor = 0
    for run in range(3):
        async def scenario(run: int) -> tuple[Burst, float, float]:
            gw = await RawGateway.start(kit, "p")
            await gw.ready(f"up__synthetic_{TOOLS - 1:04d}")
            gw.calls.clear()
            gw.burst = Burst()
            stop = asyncio.Event()
            burst = asyncio.create_task(gw.burst_calls(16, stop))
            await _until(lambda: gw.burst.answered >= 500 + 137 * run)
            gw.proc.kill()
            killed_wall, killed_at = time.time(), time.monotonic()
            stop.set()
            await burst
            await gw.finish()
            return gw.burst, killed_wall, killed_at

        b, killed_wall, killed_at = asyncio.run(scenario(run))
        with InvocationLog() as log:
            newest = max(r.ts + r.duration_ms / 1000 for r in log.query(project="p", after_cursor=cursor))
        logged, _, cursor = _logged("p", cursor)
        logged.subtract({"up__echo": logged["up__echo"]})      # the readiness probes
        lost = b.lost(logged)
        rate = b.answered / (killed_at - b.first_call)
        report.append((b.answered, len(lost), killed_wall - newest, rate))
        assert kit.leftovers() == []
    detail = "; ".join(f"answered {a}, not logged {n} ({1000 * n / r:.1f} ms of calls), newest row "
                       f"{1000 * age:.1f} ms old at the kill, {r:.0f} calls/s" for a, n, age, r in report)
    print(detail)
    # other processes share this machine's two cores: the per-run bound gets SLACK
    assert all(n <= r * KILL_WINDOW_S * SLACK for _, n, _, r in report), detail
    # Half the window on average, with the load's slack but never near the ~50 ms the old
    # writer lost on average (measured 26 ms with three suites' workers on the two cores).
    mean_window = sum(n for _, n, _, _ in report) / sum(r for *_, r in report)
    assert mean_window <= min(KILL_WINDOW_S * 0.8, KILL_WINDOW_S / 2 * SLACK), detail
