"""Three gateway processes on one PostgreSQL, 3 x 5,000 calls in both protocol eras: the log holds
exactly one row per answered call, though the database is stopped for 10 s mid-run; SIGTERM drains.

Real `mcpctl serve --transport http` processes (MCPCTL_GATEWAY_HOST gw1..gw3), a real fault_server
upstream each, two SDK clients per gateway (one handshake era, one 2026-07-28), and the real
database of tests/pg_support.py, stopped and started with pg_ctl while the calls go on.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from teamkit import ERAS, TOOLS, Kit, Load, kill_all, rows_by, start_gateways, terminate, token_for

from pg_support import Cluster

GATEWAYS = 3
PER_GATEWAY = 5000              # at least this many answered calls per gateway (half in each era)
IN_FLIGHT = 6                   # calls in flight per client (the run is CPU-bound: more amortise)
BEFORE_STOP = 3000              # calls answered (in all) before the database is stopped
AFTER_START = 300               # at least this many answered after it is started again
OUTAGE_S = 10.0

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]     # measured: 261 s at load average 8-12 on 2 cores


def test_three_gateways_one_row_per_answered_call_through_a_database_outage(
        tmp_home: Path, pg_db: str, pg_cluster: Cluster) -> None:
    kit = Kit(tmp_home)
    kit.server("up", "--tools", str(TOOLS))
    kit.project("p", ["up"])
    gateways = []
    load = Load(token_for("p"), IN_FLIGHT)
    during_outage = [0, 0]          # answered before / after the outage began
    per_client = PER_GATEWAY // len(ERAS)
    t0 = time.monotonic()
    try:
        gateways = start_gateways(kit, pg_db, [f"gw{i + 1}" for i in range(GATEWAYS)])

        async def scenario() -> None:
            tasks = [asyncio.create_task(load.client(gw.host, gw.port, era)) for gw in gateways for era in ERAS]
            try:
                await load.until(lambda: load.total() >= BEFORE_STOP, 120, "calls before the outage")
                await asyncio.to_thread(pg_cluster.stop)
                during_outage[0] = load.total()
                await asyncio.sleep(OUTAGE_S)       # the outage itself: calls go on meanwhile
                during_outage[1] = load.total()
                await asyncio.to_thread(pg_cluster.start)
                after = load.total()
                await load.until(lambda: min(load.answered[gw.host, era] for gw in gateways for era in ERAS)
                                 >= per_client and load.total() >= after + AFTER_START, 300, "3 x 5,000 calls")
            finally:
                load.stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run(scenario())
        assert not load.failed, load.failed[:5]
        terminate(gateways)
    finally:
        kill_all(gateways)
        if pg_cluster.pg_ctl("status", check=False).returncode != 0:
            pg_cluster.start()
    elapsed = time.monotonic() - t0
    print(f"\n{load.total()} calls answered in {elapsed:.1f}s ({during_outage[1] - during_outage[0]} "
          f"while the database was down)")
    assert during_outage[1] > during_outage[0], "no call was answered while the database was down"
    hosts = Counter({gw.host: sum(load.answered[gw.host, era] for era in ERAS) for gw in gateways})
    assert min(hosts.values()) >= PER_GATEWAY and load.total() >= GATEWAYS * PER_GATEWAY
    # exactly one row per answered call: per gateway, per client (era), per tool
    assert rows_by(pg_db, "host") == Counter({(h,): n for h, n in hosts.items()})
    assert rows_by(pg_db, "client_name", "presented_name") == Counter({k: n for k, n in load.by_tool.items()})
    assert not list((tmp_home / "state" / "log-spool").glob("*.jsonl"))
    assert kit.leftovers() == []
