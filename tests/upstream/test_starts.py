"""`upstream.starts`: the bound on upstreams starting at once (the gateway's test with real
processes: tests/gateway/test_upstream_starts.py)."""

from __future__ import annotations

import os

import anyio
import pytest

from mcpctl.upstream.starts import ENV_LIMIT, PER_CPU, Starts, start_limit

pytestmark = pytest.mark.anyio


def test_the_limit_is_a_few_per_cpu_unless_set() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert start_limit({}) == PER_CPU * cpus
    assert start_limit({ENV_LIMIT: "3"}) == 3
    assert start_limit({ENV_LIMIT: "0"}) == 1
    assert start_limit({ENV_LIMIT: "many"}) == PER_CPU * cpus


async def test_a_slot_is_held_once_per_name_and_none_is_given_once_closed() -> None:
    starts = Starts(2)
    await starts.acquire("a")
    await starts.acquire("a")             # held already (a retried handshake): at once
    await starts.acquire("b")
    got: list[str] = []

    async def start(name: str) -> None:
        await starts.acquire(name)
        got.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(start, "c")
        tg.start_soon(start, "d")
        await anyio.wait_all_tasks_blocked()
        assert got == [] and starts.starting == 2
        starts.release("a")
        starts.release("a")                # not held any more: nothing
        await anyio.wait_all_tasks_blocked()
        assert got == ["c"]
        starts.close()
        starts.release("b")               # stopping: the slot goes to no one
        await anyio.wait_all_tasks_blocked()
        assert got == ["c"] and starts.starting == 1
        tg.cancel_scope.cancel()
    assert Starts().starting == 0          # no limit: nothing is held
