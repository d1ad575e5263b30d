"""Three gateway processes on one PostgreSQL: the log holds exactly one row per answered call,
in both protocol eras, though the database is stopped for 10 s mid-run; SIGTERM drains.

Real `mcpctl serve --transport http` processes (MCPCTL_GATEWAY_HOST gw1..gw3), a real fault_server
upstream each, two SDK clients per gateway (one handshake era, one 2026-07-28), and the real
database of tests/pg_support.py, stopped and started with pg_ctl while the calls go on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pg_support import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from gwkit import MCPCTL, SLACK, Kit, listening_port, wait_tools

GATEWAYS = 3
ERAS = ("legacy", "2026-07-28")
IN_FLIGHT = 3                   # calls in flight per client
TOOLS = 40
BEFORE_STOP = 400               # calls answered before the database is stopped
TOTAL = 2000                    # at least this many calls in all
OUTAGE_S = 10.0

pytestmark = pytest.mark.timeout(240)


class _Started:
    def __init__(self, proc: subprocess.Popen[bytes], stderr: Path, host: str) -> None:
        self.proc, self.stderr, self.host = proc, stderr, host


def _start(kit: Kit, url: str, host: str) -> _Started:
    stderr = kit.home / f"{host}.stderr"
    env = {**os.environ, "MCPCTL_DATABASE_URL": url, "MCPCTL_GATEWAY_HOST": host, "MCPCTL_TEST_MARK": kit.mark}
    with open(stderr, "wb") as err:
        proc = subprocess.Popen([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", "0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    return _Started(proc, stderr, host)


def _rows_by_host(url: str) -> Counter[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT host, count(*) FROM invocations GROUP BY host").fetchall()
    return Counter({str(h): int(n) for h, n in rows})


def test_three_gateways_one_row_per_answered_call_through_a_database_outage(
        tmp_home: Path, pg_db: str, pg_cluster: Cluster) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    kit = Kit(tmp_home)
    kit.server("up", "--tools", str(TOOLS))
    kit.project("p", ["up"])
    procs: list[subprocess.Popen[bytes]] = []
    answered: Counter[str] = Counter()
    failed: list[str] = []
    during_outage = [0]
    try:
        from mcpctl.gateway.http import load_or_create_token, token_path

        token = load_or_create_token(token_path("p"))      # before the gateways: one token for all three
        starts = [_start(kit, pg_db, f"gw{i + 1}") for i in range(GATEWAYS)]   # all three at once
        procs.extend(st.proc for st in starts)
        ports = [listening_port(st.proc, st.stderr, st.host) for st in starts]
        stop = asyncio.Event()
        outage = asyncio.Event()

        async def client(host: str, port: int, era: str) -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          timeout=httpx2.Timeout(30, read=60)) as h, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h), mode=era) as c:
                await wait_tools(c, {f"up__synthetic_{TOOLS - 1:04d}"})

                async def worker(k: int) -> None:
                    i = k
                    while not stop.is_set():
                        name = f"up__synthetic_{i % TOOLS:04d}"
                        i += IN_FLIGHT
                        try:
                            result = await c.session.call_tool(name, {})
                        except Exception as e:
                            failed.append(f"{host} {era}: {type(e).__name__}: {e}")
                            return
                        if result.is_error:
                            failed.append(f"{host} {era}: {name} answered an error")
                        answered[host] += 1
                        if outage.is_set():
                            during_outage[0] += 1

                await asyncio.gather(*(worker(k) for k in range(IN_FLIGHT)))

        async def until(condition: Any, timeout: float) -> None:
            deadline = time.monotonic() + timeout * SLACK
            while not condition():
                assert not failed, failed[:5]
                assert time.monotonic() < deadline, f"{sum(answered.values())} calls answered"
                await asyncio.sleep(0.05)

        async def scenario() -> None:
            tasks = [asyncio.create_task(client(f"gw{i + 1}", port, era))
                     for i, port in enumerate(ports) for era in ERAS]
            try:
                await until(lambda: sum(answered.values()) >= BEFORE_STOP, 60)
                await asyncio.to_thread(pg_cluster.stop)
                outage.set()
                await asyncio.sleep(OUTAGE_S)       # the outage itself: calls go on meanwhile
                outage.clear()
                await asyncio.to_thread(pg_cluster.start)
                after = sum(answered.values())
                await until(lambda: sum(answered.values()) >= max(TOTAL, after + 200), 60)
            finally:
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run(scenario())
        assert not failed, failed[:5]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            assert proc.wait(30 * SLACK) in (0, -signal.SIGTERM)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        if pg_cluster.pg_ctl("status", check=False).returncode != 0:
            pg_cluster.start()
    assert during_outage[0] > 0, "no call was answered while the database was down"
    assert sum(answered.values()) >= TOTAL
    assert _rows_by_host(pg_db) == answered          # exactly one row per answered call, per gateway
    assert not list((tmp_home / "state" / "log-spool").glob("*.jsonl"))
    assert kit.leftovers() == []
