"""Limits per identity and per upstream, through the gateway in-process (`inproc`): a profile's
calls-per-minute budget with a burst (and an identity's own), and a server's `maxConcurrency`.

The budgets' clock is the test's (`Clock`), so every count is exact whatever the machine's load;
the upstream here (`Counting`) counts the calls it sees and how many are in flight at once, and
holds them until the test opens its gate."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, text_of
from inproc import Harness, Running
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app
from mcpctl.presentation.budgets import LIMITED

pytestmark = pytest.mark.anyio

CALLERS = 16
PROFILES = {"narrow": {"limits": {"callsPerMinute": 60, "burst": 5,
                                  "identities": {"vip": {"burst": 12}}}}}


class Clock:
    """The budgets' clock: still until the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Counting:
    """An upstream with `work` (held at the gate while it is closed) and `quick`: it counts the
    calls it answers and the most it ever had in flight at once."""

    gate: anyio.Event = field(default_factory=anyio.Event)
    calls: int = 0
    in_flight: int = 0
    most: int = 0
    moved: anyio.Event = field(default_factory=anyio.Event)

    def _moved(self) -> None:
        self.moved.set()
        self.moved = anyio.Event()

    def build(self) -> Server[Any]:
        async def list_tools(ctx: ServerRequestContext, params: Any) -> t.ListToolsResult:
            return t.ListToolsResult(tools=[t.Tool(name=n, description=f"{n} a while", input_schema={"type": "object"})
                                            for n in ("work", "quick")])

        async def call_tool(ctx: ServerRequestContext, params: t.CallToolRequestParams) -> t.CallToolResult:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self._moved()
            try:
                if params.name == "work":
                    await self.gate.wait()
                self.calls += 1
                return t.CallToolResult(content=[t.TextContent(type="text", text="done")])
            finally:
                self.in_flight -= 1
                self._moved()

        return Server("counting", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _token(name: str, profile: str = "narrow") -> str:
    r = CliRunner().invoke(app, ["create", "token", name, "-p", "p", "--profile", profile], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    return r.stdout.strip()


def _rows(project: str) -> list[Any]:
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:
        return log.query(project=project)


@contextlib.asynccontextmanager
async def _clients(g: Running, token: str, n: int) -> AsyncIterator[list[Any]]:
    """`n` sessions of one token, each its own client."""
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(g.client("legacy", f"c{i}", token=token)) for i in range(n)]


async def _all(calls: list[Any]) -> list[Any]:
    """Run every call at once; their results in order."""
    out: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        out[i] = await calls[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(one, i)
    return out


def _counted(results: list[Any]) -> tuple[int, int]:
    """(answered, limited) among tools/call results."""
    limited = [r for r in results if r.is_error and text_of(r).startswith("call limit reached")]
    assert all(not r.is_error for r in results if r not in limited), [text_of(r) for r in results]
    return len(results) - len(limited), len(limited)


def _setup(kit: Kit, gw: Harness, upstream: Counting, **server: Any) -> None:
    kit.server("up")
    if server:
        spec = kit.store.get("Server", "up")
        spec["spec"].update(server)
        kit.store.put(spec)
    gw.upstreams.add("up", upstream.build)
    kit.project("p", ["up"], profiles=PROFILES)


async def test_budgets_hold_exactly_under_16_concurrent_callers(kit: Kit, gw: Harness) -> None:
    """16 sessions of each of two tokens of the profile call 3 times each, all at once: the profile's
    identity gets exactly its burst (5), the identity with its own budget exactly its own (12), the
    rest are `limited` (isError naming the limit and the wait), logged `limited`; a second later each
    has one more call (60 a minute)."""
    upstream, clock = Counting(), Clock()
    upstream.gate.set()
    _setup(kit, gw, upstream)
    alice, vip = _token("alice"), _token("vip")
    async with gw.serve("p", log=True) as g:
        g.gateway.views.limits.clock = clock
        async with _clients(g, alice, CALLERS) as a, _clients(g, vip, CALLERS) as v:
            await g.wait_tools(a[0], {"up__quick"})
            with anyio.fail_after(30 * SLACK):
                results = await _all([lambda c=c: c.session.call_tool("up__quick", {}) for c in a + v for _ in range(3)])
            per = 3 * CALLERS
            assert _counted(results[:per]) == (5, per - 5)
            assert _counted(results[per:]) == (12, per - 12)
            refused = next(text_of(r) for r in results[:per] if r.is_error)
            assert refused == ("call limit reached: identity 'alice' may make 60 calls per minute (burst 5) "
                               "(profiles.narrow.limits); retry in 1 s"), refused
            mine = next(text_of(r) for r in results[per:] if r.is_error)
            assert "identity 'vip' may make 60 calls per minute (burst 12) (profiles.narrow.limits.identities.vip)" \
                in mine, mine
            assert upstream.calls == 5 + 12                  # a limited call never reaches the upstream
            clock.now += 1.0
            again = await _all([lambda c=c: c.session.call_tool("up__quick", {}) for c in (a[0], a[1], v[0], v[1])])
            assert _counted(again) == (2, 2)
        await g.settle_log()
    outcomes: dict[tuple[str | None, str], int] = {}
    for row in _rows("p"):
        key = (row.credential, row.outcome)
        outcomes[key] = outcomes.get(key, 0) + 1
        assert row.outcome == "ok" or (row.error_class, row.canonical_id) == ("CallLimit", "up/quick")
    assert outcomes == {("alice", "ok"): 6, ("alice", "limited"): per - 5 + 1,
                        ("vip", "ok"): 13, ("vip", "limited"): per - 12 + 1}
    shown = CliRunner().invoke(app, ["logs", "--project", "p", "--outcome", "limited", "-o", "json"])
    assert shown.exit_code == 0, shown.output
    assert {r["outcome"] for r in json.loads(shown.stdout)} == {"limited"}
    assert len(json.loads(shown.stdout)) == 2 * per - 17 + 2


async def test_a_limited_identity_does_not_slow_another(kit: Kit, gw: Harness) -> None:
    """While one token's 16 callers are over budget and keep calling, another token's call is held
    at the upstream: every refusal is answered meanwhile (none waits behind it or for the upstream),
    and the other token's budget and calls are untouched by them."""
    upstream, clock = Counting(), Clock()
    _setup(kit, gw, upstream)
    alice, bob = _token("alice"), _token("bob")
    async with gw.serve("p") as g:
        g.gateway.views.limits.clock = clock
        async with _clients(g, alice, CALLERS) as a, g.client("legacy", "bob", token=bob) as b:
            await g.wait_tools(b, {"up__work"})
            with anyio.fail_after(30 * SLACK):
                spent = await _all([lambda c=c: c.session.call_tool("up__quick", {}) for c in a[:5]])
                assert _counted(spent) == (5, 0)
                async with anyio.create_task_group() as tg:
                    held: list[Any] = []

                    async def bobs_call() -> None:
                        held.append(await b.session.call_tool("up__work", {}))

                    tg.start_soon(bobs_call)
                    while upstream.in_flight == 0:
                        await upstream.moved.wait()
                    flood = await _all([lambda c=c: c.session.call_tool("up__work", {}) for c in a for _ in range(4)])
                    assert _counted(flood) == (0, 4 * CALLERS) and held == [] and upstream.in_flight == 1
                    upstream.gate.set()
                assert [text_of(r) for r in held] == ["done"]
                rest = await _all([lambda: b.session.call_tool("up__quick", {}) for _ in range(4)])
                assert _counted(rest) == (4, 0)              # bob's burst: 5, one spent before
                assert upstream.calls == 5 + 1 + 4


async def test_other_requests_over_budget_get_a_json_rpc_error(kit: Kit, gw: Harness) -> None:
    """resources/read and prompts/get take from the same budget; over it, a JSON-RPC error naming
    the limit, with the seconds to wait in its data."""
    kit.server("good")
    kit.project("p", ["good"], profiles={"narrow": {"limits": {"callsPerMinute": 2, "burst": 2}}})
    alice = _token("alice")
    async with gw.serve("p") as g:
        g.gateway.views.limits.clock = Clock()
        async with g.client("legacy", "alice", token=alice) as c:
            await g.wait_tools(c, {"good__echo"})
            uri = next(str(r.uri) for r in (await c.list_resources()).resources if str(r.uri).endswith("readme.txt"))
            prompt = next(p.name for p in (await c.list_prompts()).prompts if p.name.endswith("greet"))
            assert (await c.read_resource(uri)).contents
            assert (await c.get_prompt(prompt, {"who": "x"})).messages
            with pytest.raises(MCPError) as read:
                await c.read_resource(uri)
            assert read.value.error.code == LIMITED
            assert read.value.error.message == ("call limit reached: identity 'alice' may make 2 calls per minute "
                                                "(burst 2) (profiles.narrow.limits); retry in 30 s")
            assert read.value.error.data == {"retryAfterSeconds": 30}
            with pytest.raises(MCPError):
                await c.get_prompt(prompt, {"who": "x"})
            assert {t.name for t in (await c.list_tools()).tools} >= {"good__echo"}   # lists take nothing


async def test_max_concurrency_holds_at_the_upstream(kit: Kit, gw: Harness) -> None:
    """maxConcurrency 3 and 16 callers at once: the upstream never has more than 3 calls in flight,
    the other 13 wait at the gateway (none refused), and every call is answered."""
    upstream = Counting()
    _setup(kit, gw, upstream, maxConcurrency=3)
    async with gw.serve("p") as g:
        ceiling = g.gateway.pool.ceilings["up"]
        async with _clients(g, g.token, CALLERS) as cs:
            await g.wait_tools(cs[0], {"up__work"})
            with anyio.fail_after(30 * SLACK):
                async with anyio.create_task_group() as tg:
                    results: list[Any] = []

                    async def call(c: Any) -> None:
                        results.append(await c.session.call_tool("up__work", {}))

                    for c in cs:
                        tg.start_soon(call, c)
                    await g.until(lambda: upstream.in_flight == 3 and
                                  ceiling._slots.statistics().tasks_waiting == CALLERS - 3, poll=0.01)
                    assert upstream.calls == 0 and ceiling.in_flight == 3
                    upstream.gate.set()
            assert [text_of(r) for r in results] == ["done"] * CALLERS
            assert upstream.most == 3 and upstream.calls == CALLERS and ceiling.in_flight == 0


async def test_a_call_waiting_past_its_timeout_for_room_is_limited(kit: Kit, gw: Harness) -> None:
    """maxConcurrency 1, one call held: the next waits for room as long as the server's call timeout
    (here cut to 0.2 s, so that the held call itself does not time out first), then gets an isError
    naming the ceiling, logged `limited`; the held call is answered when released."""
    upstream = Counting()
    _setup(kit, gw, upstream, maxConcurrency=1, timeouts={"connect": 20.0, "call": 60.0})
    async with gw.serve("p", log=True) as g, g.client("legacy") as c:
        ceiling = g.gateway.pool.ceilings["up"]
        assert (ceiling.limit, ceiling.wait) == (1, 60.0)
        ceiling.wait = 0.2
        await g.wait_tools(c, {"up__work"})
        with anyio.fail_after(30 * SLACK):
            async with anyio.create_task_group() as tg:
                first: list[Any] = []

                async def held_call() -> None:
                    first.append(await c.session.call_tool("up__work", {}))

                tg.start_soon(held_call)
                while upstream.in_flight == 0:
                    await upstream.moved.wait()
                r = await c.session.call_tool("up__quick", {})
                assert r.is_error and text_of(r) == (
                    "upstream server 'up' already has 1 calls in flight (maxConcurrency: 1) and none finished "
                    "within 0.2s (timeouts.call); retry later"), text_of(r)
                upstream.gate.set()
        assert [text_of(x) for x in first] == ["done"]
        await g.settle_log()
    assert [(r.presented_name, r.outcome, r.error_class) for r in _rows("p")] == [
        ("up__work", "ok", None), ("up__quick", "limited", "Saturated")]     # in the order they began
