"""The team tests' kit (imported as `teamkit`): `mcpctl serve --transport http` processes on one
PostgreSQL, SDK clients that keep calls in flight against them and count what was answered, and
the log's rows counted by column.

Each client presents itself as `<host>/<era>` (clientInfo name), so a row's `client_name` says
which client made the call: a test can match answered calls to rows client by client, tool by tool.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from gwkit import MCPCTL, SLACK, Kit, listening_port, wait_tools

ERAS = ("legacy", "2026-07-28")
TOOLS = 40              # the upstream's synthetic tools: a client calls them in turn


@dataclass
class Gateway:
    proc: subprocess.Popen[bytes]
    stderr: Path
    host: str
    port: int = 0


def start_gateways(kit: Kit, url: str, hosts: Iterable[str], project: str = "p") -> list[Gateway]:
    """`mcpctl serve --project P --transport http --port 0` per host (MCPCTL_GATEWAY_HOST), all
    started at once, each on the port it prints."""
    started = []
    for host in hosts:
        stderr = kit.home / f"{host}.stderr"
        env = {**os.environ, "MCPCTL_DATABASE_URL": url, "MCPCTL_GATEWAY_HOST": host, "MCPCTL_TEST_MARK": kit.mark}
        with open(stderr, "ab") as err:
            proc = subprocess.Popen([MCPCTL, "serve", "--project", project, "--transport", "http", "--port", "0"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
        started.append(Gateway(proc, stderr, host))
    for gw in started:
        gw.port = listening_port(gw.proc, gw.stderr, gw.host)
    return started


def terminate(gateways: Iterable[Gateway], timeout: float = 30.0) -> None:
    """SIGTERM each, then wait for each to exit cleanly (it drains the log first)."""
    gws = list(gateways)
    for gw in gws:
        gw.proc.send_signal(signal.SIGTERM)
    for gw in gws:
        assert gw.proc.wait(timeout * SLACK) in (0, -signal.SIGTERM), gw.stderr.read_text(errors="replace")[-4000:]


def kill_all(gateways: Iterable[Gateway]) -> None:
    for gw in gateways:
        if gw.proc.poll() is None:
            gw.proc.kill()
            gw.proc.wait(30 * SLACK)


def rows_by(url: str, *columns: str) -> Counter[tuple[Any, ...]]:
    """The log's rows counted by `columns` (names of the `invocations` table's columns)."""
    import psycopg

    cols = ", ".join(columns)
    with psycopg.connect(url) as conn:
        got = conn.execute(f"SELECT {cols}, count(*) FROM invocations GROUP BY {cols}").fetchall()
    return Counter({tuple(row[:-1]): int(row[-1]) for row in got})


@dataclass
class Load:
    """SDK clients, `in_flight` calls each, each call to the next of the upstream's TOOLS tools,
    until `stop` is set. Counts answered calls per (host, era) and per (client, tool); any
    exception or error result is a failure, except once `broken` is set (a gateway was killed:
    its clients end quietly)."""

    token: str
    in_flight: int
    answered: Counter[tuple[str, str]] = field(default_factory=Counter)
    by_tool: Counter[tuple[str, str]] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    broken: bool = False
    on_answer: Callable[[], None] | None = None
    ready: int = 0                  # clients that listed the tools and began calling

    def total(self) -> int:
        return sum(self.answered.values())

    async def client(self, host: str, port: int, era: str) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.types import Implementation

        label = f"{host}/{era}"
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"},
                                          timeout=httpx2.Timeout(30, read=60)) as h, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h), mode=era,
                           client_info=Implementation(name=label, version="1")) as c:
                await wait_tools(c, {f"up__synthetic_{TOOLS - 1:04d}"})
                self.ready += 1
                await asyncio.gather(*(self._worker(c, host, era, k) for k in range(self.in_flight)))
        except Exception as e:
            if not self.broken:
                self.failed.append(f"{label}: {type(e).__name__}: {e}")

    async def _worker(self, c: Any, host: str, era: str, k: int) -> None:
        i = k
        while not self.stop.is_set():
            name = f"up__synthetic_{i % TOOLS:04d}"
            i += self.in_flight
            try:
                result = await c.session.call_tool(name, {})
            except Exception as e:
                if not self.broken:
                    self.failed.append(f"{host}/{era}: {type(e).__name__}: {e}")
                return
            if result.is_error:
                self.failed.append(f"{host}/{era}: {name} answered an error")
                return
            self.answered[host, era] += 1
            self.by_tool[f"{host}/{era}", name] += 1
            if self.on_answer is not None:
                self.on_answer()

    async def until(self, condition: Callable[[], bool], timeout: float, what: str = "") -> None:
        """Wait (polling, bounded by `timeout` * SLACK) until `condition()`; fail at once on a failure."""
        deadline = time.monotonic() + timeout * SLACK
        while not condition():
            assert not self.failed, self.failed[:5]
            assert time.monotonic() < deadline, f"{what or 'condition'} not met: {self.total()} calls answered"
            await asyncio.sleep(0.05)


def token_for(project: str = "p") -> str:
    """The project's own token (created before the gateways start: one token for all)."""
    from mcpctl.gateway.http import load_or_create_token, token_path

    return load_or_create_token(token_path(project))
