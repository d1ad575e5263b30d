"""A 2026 client's retry of a parked call that reaches the gateway twice (a load balancer sends it
again when the replica it went through died before answering, while the owner had resumed the
call): the repeat gets the resumption's answer and the upstream runs once; a resumption cancelled
with its request (the answer's way lost) leaves a repeat to make the call again, answered from its
`inputResponses`, as a retry whose replica is gone is (tests/gateway/test_park_restart.py).

`Asks` alone, with the least of a pool and a client it needs (as test_relay_park_refused.py)."""

from __future__ import annotations

import asyncio
import contextvars
import time
from types import SimpleNamespace
from typing import Any

import anyio
import mcp.types as t
import pytest
from mcp import MCPError

from mcpctl.gateway.asks import MAX_PARKED, RESUMED_KEPT, Asks
from mcpctl.gateway.sessions import Caller

pytestmark = pytest.mark.anyio

ELICIT = t.ElicitRequest(params=t.ElicitRequestFormParams(
    message="name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}))


class Pool:
    def get(self, server: str) -> Any:
        return SimpleNamespace(protocol_version="2025-06-18",
                               spec=SimpleNamespace(transport="stdio", timeouts=SimpleNamespace(call=30.0)))


def _caller(session: str = "s1", credential: str = "alice") -> Caller:
    peer = SimpleNamespace(modern=True, capabilities={"elicitation": {"form": {}}})
    return Caller(session, peer=peer, credential=credential)


class Upstream:
    """A stdio upstream's tool that asks its client a name, then (once `go` is set) answers with it."""

    def __init__(self, asks: Asks) -> None:
        self.asks, self.runs, self.cancelled = asks, 0, 0
        self.go, self.answered, self.stopped = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def call(self) -> dict[str, Any]:
        self.runs += 1
        task = asyncio.get_running_loop().create_task(self.asks.ask("up", ELICIT), context=contextvars.Context())
        try:
            got = await task
            self.answered.set()
            await self.go.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            self.stopped.set()
            raise
        return {"content": [{"type": "text", "text": f"run {self.runs}: {got.content}"}]}


async def _parked(asks: Asks, up: Upstream) -> dict[str, Any]:
    first = await asks.relay(_caller(), "up", up.call)
    assert first["resultType"] == "input_required", first
    (key,) = first["inputRequests"]
    return {"name": "up__ask", "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"name": "zoe"}}}}


async def test_a_retry_repeated_gets_the_resumptions_answer_and_the_upstream_runs_once() -> None:
    asks = Asks(Pool(), views=None)  # type: ignore[arg-type]
    up = Upstream(asks)
    retry = await _parked(asks, up)
    up.go.set()
    with anyio.fail_after(5):
        done = await asks.resume(_caller(), retry)
        assert not asks.orphan(retry)
        again = await asks.resume(_caller(), retry)      # after the first answered
    assert done["content"][0]["text"] == "run 1: {'name': 'zoe'}", done
    assert again == done and up.runs == 1
    # while the resumption still waits on its upstream, a repeat joins it
    up.go.clear()
    retry = await _parked(asks, up)
    with anyio.fail_after(5):
        first = asyncio.ensure_future(asks.resume(_caller(), retry))
        await up.answered.wait()
        second = asyncio.ensure_future(asks.resume(_caller(), retry))
        await asyncio.sleep(0)
        up.go.set()
        results = await asyncio.gather(first, second)
    assert results[0] == results[1] and results[0]["content"][0]["text"] == "run 2: {'name': 'zoe'}"
    assert up.runs == 2 and up.cancelled == 0
    # a repeat is still the caller's own: another session or credential gets the protocol's error
    for stranger in (_caller(session="s2"), _caller(credential="mallory")):
        with pytest.raises(MCPError, match="unknown or expired requestState"):
            await asks.resume(stranger, retry)


async def test_a_resumption_cancelled_with_its_request_leaves_the_repeat_to_call_again() -> None:
    asks = Asks(Pool(), views=None)  # type: ignore[arg-type]
    up = Upstream(asks)
    retry = await _parked(asks, up)
    with anyio.fail_after(5):
        resuming = asyncio.ensure_future(asks.resume(_caller(), retry))
        await up.answered.wait()
        resuming.cancel()                  # the request it rode went away (its replica killed)
        with pytest.raises(asyncio.CancelledError):
            await resuming
        await up.stopped.wait()            # the upstream's call is cancelled with it
    assert asks.orphan(retry)              # the router makes the call again, answered from the retry
    assert not asks.orphan({**retry, "requestState": "mcpctl:" + asks.tag + "unknown"})


async def test_a_resumed_answer_is_kept_only_a_while_after_it_ends_and_only_so_many() -> None:
    asks = Asks(Pool(), views=None)  # type: ignore[arg-type]
    up = Upstream(asks)
    retry = await _parked(asks, up)
    state = retry["requestState"][len("mcpctl:"):]
    with anyio.fail_after(5):
        resuming = asyncio.ensure_future(asks.resume(_caller(), retry))
        await up.answered.wait()
        assert asks.resumed[state].expires == float("inf")      # kept while it runs, however long
        up.go.set()
        await resuming
    assert asks.resumed[state].expires <= time.monotonic() + RESUMED_KEPT
    asks.resumed[state].expires = time.monotonic() - 1          # RESUMED_KEPT later
    asks._expire()
    assert state not in asks.resumed
    with pytest.raises(MCPError, match="unknown or expired requestState"):
        await asks.resume(_caller(), retry)
    for _ in range(MAX_PARKED // 4 + 3):                        # bounded: the oldest go first
        retry = await _parked(asks, up)
        with anyio.fail_after(5):
            await asks.resume(_caller(), retry)
    assert len(asks.resumed) == MAX_PARKED // 4 and retry["requestState"][len("mcpctl:"):] in asks.resumed
