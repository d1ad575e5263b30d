"""Live everywhere: three `mcpctl serve --transport http` processes on one database, each with its
own MCPCTL_HOME (nothing shared but the database), serve an `apply` made through the CLI within a
second with `tools/list_changed`, and all refuse a token deleted through the CLI at the next request."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import MCPCTL, SLACK, SRC_ENV, Kit, listening_port, wait_tools
from test_serve_http import http_client

pytestmark = pytest.mark.anyio
GATEWAYS = 3


def mcpctl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPCTL, *args], capture_output=True, text=True, timeout=60 * SLACK, input=stdin,
                          env={**os.environ, **SRC_ENV})


@contextlib.contextmanager
def gateways(kit: Kit, project: str, n: int) -> Iterator[list[tuple[str, str]]]:
    """`n` HTTP gateways, each with a home of its own; yields (url, project token) for each."""
    procs: list[tuple[subprocess.Popen[bytes], Any]] = []
    out: list[tuple[str, str]] = []
    try:
        for i in range(n):                               # started together, as a Deployment's replicas
            err = kit.home.parent / f"host{i}.stderr"
            log = open(err, "w")  # noqa: SIM115
            proc = subprocess.Popen([MCPCTL, "serve", "--project", project, "--transport", "http", "--port", "0"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                    env={**os.environ, **SRC_ENV, "MCPCTL_HOME": str(kit.home.parent / f"host{i}"),
                                         "MCPCTL_TEST_MARK": kit.mark})
            procs.append((proc, log))
        for i, (proc, _) in enumerate(procs):
            home = kit.home.parent / f"host{i}"
            port = listening_port(proc, kit.home.parent / f"host{i}.stderr", f"gateway {i}")
            token = (home / "state" / "tokens" / f"{project}.token").read_text().strip()
            out.append((f"http://127.0.0.1:{port}/mcp", token))
        yield out
    finally:
        for proc, log in procs:
            proc.terminate()
            try:
                proc.wait(timeout=15 * SLACK)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


PROJECT = """apiVersion: mcpctl/v1
kind: Project
metadata: {{name: p}}
spec:
  servers: [alpha]
  tools: {{disabled: [{disabled}]}}
"""


async def test_an_apply_is_served_by_every_gateway_within_a_second(pg_db: str, kit: Kit) -> None:
    kit.server("alpha")
    assert mcpctl("apply", "-f", "-", stdin=PROJECT.format(disabled="")).returncode == 0
    events = [anyio.Event() for _ in range(GATEWAYS)]
    seen: list[float] = [0.0] * GATEWAYS

    def handler(i: int) -> Any:
        async def on_message(msg: object) -> None:
            if isinstance(msg, t.ToolListChangedNotification) and not events[i].is_set():
                seen[i] = time.time()
                events[i].set()
        return on_message

    with gateways(kit, "p", GATEWAYS) as gws:
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(http_client(url, tok, "legacy", message_handler=handler(i)))
                       for i, (url, tok) in enumerate(gws)]
            for c in clients:
                await wait_tools(c, {"alpha__echo"})
            for i in range(GATEWAYS):
                events[i] = anyio.Event()                # only what the apply causes
            r = await anyio.to_thread.run_sync(lambda: mcpctl("apply", "-f", "-",
                                                              stdin=PROJECT.format(disabled="alpha/echo")))
            assert r.returncode == 0, r.stderr
            with anyio.fail_after(1.0 * SLACK + 1.0):     # after the CLI exited: it committed before
                for e in events:
                    await e.wait()
            from mcpctl.db.pool import connection

            with connection(pg_db) as conn:                   # when the apply's transaction wrote the project
                row = conn.execute("SELECT extract(epoch FROM updated_at) FROM resources "
                                   "WHERE kind = 'Project' AND name = 'p'").fetchone()
            took = [s - float(row[0]) for s in seen]
            for c in clients:
                assert "alpha__echo" not in {tool.name for tool in (await c.list_tools()).tools}
    print("apply served by the gateways " + ", ".join(f"{x:.3f}" for x in took) + " s after its transaction")
    assert max(took) < 1.0 * SLACK + 1.0


async def test_a_token_deleted_through_the_cli_is_refused_by_every_gateway(pg_db: str, kit: Kit) -> None:
    import httpx2

    kit.server("alpha")
    kit.project("p", ["alpha"])
    r = mcpctl("create", "token", "ci", "--project", "p")
    assert r.returncode == 0, r.stderr
    secret = r.stdout.strip()
    assert not (kit.home / "state" / "credentials").exists()            # the hash is in the database
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    head = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
            "Authorization": f"Bearer {secret}"}
    with gateways(kit, "p", GATEWAYS) as gws:
        async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
            for url, _ in gws:
                assert (await h.post(url, json=body, headers=head)).status_code != 401
            r = await anyio.to_thread.run_sync(lambda: mcpctl("delete", "token", "ci"))
            assert r.returncode == 0, r.stderr
            codes = [(await h.post(url, json=body, headers=head)).status_code for url, _ in gws]
    assert codes == [401] * GATEWAYS


def test_a_gateway_facing_an_older_schema_says_to_migrate(pg_url: str, kit: Kit, tmp_path: Path) -> None:
    env = {**os.environ, **SRC_ENV, "MCPCTL_DATABASE_URL": pg_url}
    r = subprocess.run([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", "0"],
                       capture_output=True, text=True, timeout=60 * SLACK, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "mcpctl db migrate" in r.stderr and "store schema is not created yet" in r.stderr


async def test_the_database_away_and_back(pg_db: str, pg_cluster: Any, kit: Kit) -> None:
    """Stopped under a running gateway: it keeps answering calls with the token it read; started
    again: a change made then reaches the gateway (its LISTEN reconnects)."""
    import httpx2

    kit.server("alpha")
    assert mcpctl("apply", "-f", "-", stdin=PROJECT.format(disabled="")).returncode == 0
    r = mcpctl("create", "token", "ci", "--project", "p")
    assert r.returncode == 0, r.stderr
    secret = r.stdout.strip()
    changed = anyio.Event()

    async def on_message(msg: object) -> None:
        if isinstance(msg, t.ToolListChangedNotification):
            changed.set()

    with gateways(kit, "p", 1) as [(url, _)]:
        async with http_client(url, secret, "legacy", message_handler=on_message) as c:
            await wait_tools(c, {"alpha__echo"})
            await anyio.to_thread.run_sync(pg_cluster.stop)
            try:
                for i in range(20):                            # answered meanwhile, token and all
                    res = await c.session.call_tool("alpha__echo", {"text": f"away {i}"})
                    assert not res.is_error
                async with httpx2.AsyncClient(timeout=10 * SLACK) as h:    # and a new connection with the token
                    ping = await h.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={
                        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
                        "Authorization": f"Bearer {secret}"})
                    assert ping.status_code != 401
                down = mcpctl("get", "projects")
                assert down.returncode == 1 and "cannot connect to the database" in down.stderr
            finally:
                await anyio.to_thread.run_sync(pg_cluster.start)
            changed = anyio.Event()
            r = await anyio.to_thread.run_sync(lambda: mcpctl("apply", "-f", "-",
                                                              stdin=PROJECT.format(disabled="alpha/echo")))
            assert r.returncode == 0, r.stderr
            with anyio.fail_after(3.0 * SLACK + 2.0):           # the LISTEN reconnects each second
                await changed.wait()
            assert "alpha__echo" not in {tool.name for tool in (await c.list_tools()).tools}
