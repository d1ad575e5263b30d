"""HTTP sessions: what one session is for a 2026-era client, and what abandoned handshake-era
sessions may cost (`mcpctl serve --transport http`, the real process)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from gwkit import SLACK, Kit, text_of, wait_tools
from test_serve_http import http_client, http_gateway, http_gateway_process

pytestmark = pytest.mark.anyio

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "abandoner", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _logged_rows(project: str, want: int, timeout: float = 10) -> list[Any]:
    from mcpctl.audit.log import InvocationLog

    deadline = time.monotonic() + timeout
    while True:
        with InvocationLog() as log:
            rows = log.query(project=project)
        if len(rows) >= want or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


async def test_a_pooled_2026_client_is_one_session_over_many_tcp_connections(kit: Kit) -> None:
    import httpx2

    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    ports: dict[str, set[int]] = {"pooled": set(), "other": set()}

    def pool(name: str) -> dict[str, Any]:
        """No keep-alive: every request of this client opens a TCP connection of its own."""
        async def seen(response: Any) -> None:
            stream = response.extensions.get("network_stream")
            addr = stream.get_extra_info("client_addr") if stream is not None else None
            if addr:
                ports[name].add(addr[1])

        return {"limits": httpx2.Limits(max_connections=4, max_keepalive_connections=0),
                "event_hooks": {"response": [seen]}}

    calls = 24
    with http_gateway(kit, project) as (url, token):
        async with http_client(url, token, "auto", name="pooled", http=pool("pooled")) as c:
            assert c.protocol_version == "2026-07-28"
            await wait_tools(c, {"alpha__echo"})

            async def call(i: int) -> None:
                r = await c.session.call_tool("alpha__echo", {"text": f"call {i}"})
                assert text_of(r) == f"call {i}"

            with anyio.fail_after(60 * SLACK):
                async with anyio.create_task_group() as tg:
                    for i in range(calls):
                        tg.start_soon(call, i)
        # The same client again, spelling the scheme in lower case: the same credential.
        async with http_client(url, token, "auto", name="pooled", http=pool("pooled"), scheme="bearer") as c:
            await c.session.call_tool("alpha__echo", {"text": "again"})
        async with http_client(url, token, "auto", name="other", http=pool("other")) as c:
            for i in range(3):
                await c.session.call_tool("alpha__echo", {"text": f"other {i}"})
    assert len(ports["pooled"]) >= 8, ports     # the calls really came over many connections
    rows = _logged_rows(project, calls + 4)
    assert len(rows) == calls + 4
    sessions = {name: {r.session_id for r in rows if r.client_name == name} for name in ("pooled", "other")}
    assert len(sessions["pooled"]) == 1, sessions
    assert len(sessions["other"]) == 1, sessions
    assert sessions["pooled"] != sessions["other"]


async def _open_sessions(url: str, token: str, count: int, in_flight: int = 16) -> tuple[dict[int, int], list[str]]:
    """`count` handshake-era sessions opened with `initialize` and never used again or deleted."""
    import httpx2

    statuses: dict[int, int] = {}
    ids: list[str] = []
    todo = iter(range(count))
    async with httpx2.AsyncClient(timeout=30 * SLACK, limits=httpx2.Limits(max_connections=in_flight),
                                  headers={**HEADERS, "Authorization": f"Bearer {token}"}) as h:
        async def worker() -> None:
            for _ in todo:
                r = await h.post(url, json=INITIALIZE)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                if r.status_code == 200:
                    ids.append(r.headers["mcp-session-id"])

        async with anyio.create_task_group() as tg:
            for _ in range(in_flight):
                tg.start_soon(worker)
    return statuses, ids


@pytest.mark.stress
async def test_three_thousand_abandoned_sessions_are_capped(kit: Kit) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    # one token may hold every session here, so that the gateway-wide cap is what is measured
    # (test_credential_floods measures each token's own share)
    with http_gateway_process(kit, project, "--max-sessions-per-credential", "4096") as gw:
        with anyio.fail_after(20 * SLACK):
            statuses, _ = await _open_sessions(gw.url, gw.token, 1)
        assert statuses == {200: 1}
        before = gw.rss_mb()
        with anyio.fail_after(90 * SLACK):
            statuses, _ = await _open_sessions(gw.url, gw.token, 3000)
        after = gw.rss_mb()
        # The default cap (256 sessions in all) admits 255 more; the rest are told 503.
        assert statuses == {200: 255, 503: 2745}, statuses
        assert after - before < 30, f"RSS {before:.0f} -> {after:.0f} MB"
        stderr = gw.stderr.read_text()
        assert stderr.count("Refusing to open a new session") == 0     # not a line per refusal
        assert len(stderr) < 8192, stderr[-2000:]


async def test_idle_sessions_are_reaped_and_make_room(kit: Kit) -> None:
    import httpx2

    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    idle = 1.0
    with http_gateway_process(kit, project, "--max-sessions", "3", "--session-idle-timeout", str(idle)) as gw:
        # A client that keeps its GET stream open is never idle, however long it waits.
        async with http_client(gw.url, gw.token, "legacy") as c:
            await wait_tools(c, {"alpha__echo"})
            opening = time.monotonic()          # the sessions' last activity is between these two
            with anyio.fail_after(20 * SLACK):
                statuses, ids = await _open_sessions(gw.url, gw.token, 4, in_flight=1)
            abandoned = time.monotonic()
            assert statuses == {200: 2, 503: 2}
            # Waiting for room to open a session does not touch the abandoned ones (a request
            # to a session would keep it alive): the first of them to go idle makes room.
            with anyio.fail_after(idle + 10 * SLACK):
                while (await _open_sessions(gw.url, gw.token, 1))[0] != {200: 1}:
                    await anyio.sleep(0.05)
            assert idle * 0.9 <= time.monotonic() - opening and time.monotonic() - abandoned < idle + 5 * SLACK
            hdrs = {**HEADERS, "Authorization": f"Bearer {gw.token}", "Mcp-Protocol-Version": "2025-11-25",
                    "Mcp-Session-Id": ids[0]}
            async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
                r = await h.post(gw.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=hdrs)
            assert r.status_code == 404
            await anyio.sleep(max(0.0, idle * 2.5 - (time.monotonic() - abandoned)))
            r = await c.session.call_tool("alpha__echo", {"text": "still here"})
            assert text_of(r) == "still here"
