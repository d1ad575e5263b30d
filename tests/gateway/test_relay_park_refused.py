"""A 2026 client's call refused at park time (its credential's share of parked calls full): the
upstream's request is answered with an error at once, and the call leaves the calls in flight, so
it can never make another client's ask look ambiguous (before: the upstream's request waited
forever for an answer nobody would give, and the refused call's relay task with it).

`Asks` alone, with the least of a pool and a client it needs."""

from __future__ import annotations

import asyncio
import contextvars
from types import SimpleNamespace
from typing import Any

import anyio
import mcp.types as t
import pytest
from mcp import MCPError

from mcpctl.gateway.asks import Asks
from mcpctl.gateway.sessions import Caller

pytestmark = pytest.mark.anyio


class Pool:
    def get(self, server: str) -> Any:
        return SimpleNamespace(protocol_version="2025-06-18",
                               spec=SimpleNamespace(transport="stdio", timeouts=SimpleNamespace(call=30.0)))


def _modern_caller(session: str, credential: str) -> Caller:
    peer = SimpleNamespace(modern=True, capabilities={"elicitation": {"form": {}}})
    return Caller(session, peer=peer, credential=credential)  # type: ignore[arg-type]


ELICIT = t.ElicitRequest(params=t.ElicitRequestFormParams(
    message="name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}))


async def test_a_call_refused_at_park_time_answers_its_upstream_and_leaves_the_calls_in_flight() -> None:
    asks = Asks(Pool(), views=None)  # type: ignore[arg-type]
    asks.shares.limit = 1            # one parked call per credential
    upstream_got: list[Any] = []
    answered = anyio.Event()

    async def upstream_call() -> dict[str, Any]:
        """A stdio upstream's tool asks its client: the request arrives on the connection's own
        task (no call's context), and the tool answers once its request is answered."""
        async def callback() -> None:
            upstream_got.append(await asks.ask("up", ELICIT))
            answered.set()

        asyncio.get_running_loop().create_task(callback(), context=contextvars.Context())
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    first = await asks.relay(_modern_caller("s1", "narrow"), "up", upstream_call)
    assert first["resultType"] == "input_required"
    with pytest.raises(MCPError, match="already holds 1 calls waiting for input"):
        await asks.relay(_modern_caller("s1", "narrow"), "up", upstream_call)
    with anyio.fail_after(5):
        await answered.wait()
    assert isinstance(upstream_got[0], t.ErrorData) and "did not answer" in upstream_got[0].message, upstream_got
    with anyio.fail_after(5):
        while len(asks.inflight["up"]) > 1:      # the refused call's task ends (cancelled)
            await anyio.sleep(0.01)
    assert len(asks.parked) == 1 and len(asks.inflight["up"]) == 1
