"""A person's call limit holds across real replicas (`cluster.limits`): three `mcpctl serve
--transport http` on one PostgreSQL, a profile allowing 1 call a minute with a burst of 6, the
replicas syncing every 0.2 s (MCPCTL_LIMIT_SYNC_S, read for tests only).

alice spends her burst on the first replica; once its count is in `limit_spend` and the second
replica has synced since (seen by the row of a probe token's call there, published in the same
statement batch that reads alice's), the second and third replicas refuse her, where each would
have given her 6 more on its own. Then calls spread over the three replicas are all refused."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import mcp.types as t
import pytest
from teamkit import Gateway, Kit, kill_all, start_gateways, terminate

from ci_support import SLACK

BURST = 6
SYNC_S = "0.2"


def _token(name: str) -> str:
    r = subprocess.run(["mcpctl", "create", "token", name, "--project", "p", "--profile", "lim"],
                       capture_output=True, text=True, timeout=60 * SLACK)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _taken(url: str, identity: str) -> dict[str, int]:
    """The count each replica published for `identity`."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT replica, taken FROM limit_spend WHERE identity = %s", (identity,)).fetchall()
    return {str(r): int(n) for r, n in rows}


def _poll(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout * SLACK
    for _ in range(10_000):
        if condition():
            return
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    raise AssertionError(what)


async def _calls(port: int, secret: str, n: int) -> list[bool]:
    """Whether each of `n` calls of `alpha__echo` on the replica at `port` was admitted."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    admitted = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                                  timeout=httpx2.Timeout(30, read=60)) as h, \
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h), mode="2026-07-28",
                   client_info=t.Implementation(name="limits", version="1")) as c:
        for i in range(n):
            r = await c.call_tool("alpha__echo", {"text": f"call {i}"})
            text = "".join(getattr(b, "text", "") for b in r.content)
            assert not r.is_error or text.startswith("call limit reached"), text
            admitted.append(not r.is_error)
    return admitted


def test_a_persons_limit_holds_across_three_replicas(tmp_home: Path, pg_db: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCTL_LIMIT_SYNC_S", SYNC_S)
    kit = Kit(tmp_home)
    kit.home.mkdir(parents=True, exist_ok=True)
    kit.server("alpha")
    kit.project("p", ["alpha"], profiles={"lim": {"limits": {"callsPerMinute": 1, "burst": BURST}}})
    alice, probe = _token("alice"), _token("probe")
    gateways: list[Gateway] = []
    try:
        gateways = start_gateways(kit, pg_db, ["gw1", "gw2", "gw3"])
        ports = [gw.port for gw in gateways]
        assert asyncio.run(_calls(ports[0], alice, BURST + 1)) == [True] * BURST + [False]
        _poll(lambda: list(_taken(pg_db, "alice").values()) == [BURST], "the first replica publishes alice's count")
        for k, port in enumerate(ports[1:], 1):    # a sync there since: it read alice's count
            assert asyncio.run(_calls(port, probe, 1)) == [True]
            _poll(lambda k=k: len(_taken(pg_db, "probe")) == k, "the replica publishes the probe's call")
        elsewhere = [asyncio.run(_calls(port, alice, 2)) for port in ports[1:]]
        assert elsewhere == [[False, False], [False, False]], elsewhere    # each alone would admit 6
        spread = [asyncio.run(_calls(port, alice, 1))[0] for port in ports * 2]
        assert spread == [False] * 6
        assert list(_taken(pg_db, "alice").values()) == [BURST]          # admitted by the first only
        terminate(gateways)
    finally:
        kill_all(gateways)
    assert kit.leftovers() == []
