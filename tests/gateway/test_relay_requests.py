"""What an upstream asks of a client during a call (sampling, elicitation, roots) reaches the
client whose call caused it, in both protocol eras, over stdio and HTTP, and nobody else.

Most run in-process (`front="inproc"`: the gateway in this process, its upstreams in memory,
`inproc`); each behaviour keeps a run through the real `mcpctl serve` (stdio or HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, http_upstream, npm_bin, text_of, wait_tools
from inproc import Harness
from test_serve_http import http_client, http_gateway

from ci_support import SLACK, skip_unless_ci

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
BARE = {"names": {"style": "bare"}}


def answering(who: str) -> dict[str, Any]:
    """Client callbacks that answer every request as `who` (so a test can tell who answered)."""

    async def sampling(ctx: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        asked = getattr(params.messages[0].content, "text", "?")
        return t.CreateMessageResult(role="assistant", model=who,
                                     content=t.TextContent(type="text", text=f"{who}: {asked}"))

    async def elicitation(ctx: Any, params: Any) -> t.ElicitResult:
        if getattr(params, "mode", None) == "url":
            return t.ElicitResult(action="accept")
        return t.ElicitResult(action="accept", content={"name": who})

    async def roots(ctx: Any) -> t.ListRootsResult:
        return t.ListRootsResult(roots=[t.Root(uri=f"file:///{who}", name=who)])

    return {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": roots}


@contextlib.asynccontextmanager
async def gateway_client(kit: Kit, project: str, front: str, mode: str, gw: Harness | None = None,
                         **kw: Any) -> AsyncIterator[Any]:
    """A client of the project's gateway: `mcpctl serve` over stdio or HTTP, or in-process (`gw`)."""
    if front == "inproc":
        assert gw is not None
        async with gw.client(project, mode, **kw) as c:
            yield c
    elif front == "stdio":
        async with kit.client(project, mode, **kw) as c:
            yield c
    else:
        with http_gateway(kit, project) as (url, token):
            async with http_client(url, token, mode, **kw) as c:
                yield c


async def call(c: Any, name: str, args: dict[str, Any] | None = None) -> tuple[bool, str]:
    r = await c.call_tool(name, args or {})
    return bool(r.is_error), text_of(r)


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("http", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_sampling_elicitation_and_roots_are_answered_by_the_calling_client(kit: Kit, gw: Harness, front: str,
                                                                                mode: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    async with gateway_client(kit, project, front, mode, gw, **answering("alice")) as c:
        await wait_tools(c, {"sample"})
        assert await call(c, "sample", {"text": "hi"}) == (False, "sampled: alice: hi")
        assert await call(c, "elicit", {"message": "name?"}) == (False, "elicited: accept {'name': 'alice'}")
        assert await call(c, "elicit", {"mode": "url"}) == (False, "elicited: accept None")
        assert await call(c, "roots") == (False, "roots: file:///alice")
    assert kit.leftovers() == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_without_the_capability_leaves_the_upstream_with_the_protocol_error(kit: Kit, gw: Harness,
                                                                                          mode: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    roots_only = {"list_roots_callback": answering("bob")["list_roots_callback"]}
    async with gw.client(project, mode, **roots_only) as c:
        await c.gw.wait_tools(c, {"sample"})
        failed, text = await call(c, "sample", {"text": "hi"})
        assert failed and text == "refused: -32600 Sampling not supported by the client"
        failed, text = await call(c, "elicit")
        assert failed and text == "refused: -32600 Elicitation not supported by the client"
        assert await call(c, "roots") == (False, "roots: file:///bob")


@contextlib.asynccontextmanager
async def two_clients_over_an_http_upstream(kit: Kit, gw: Harness, front: str, mode: str
                                            ) -> AsyncIterator[tuple[Any, Any]]:
    """Alice and Bob, clients of one gateway whose upstream `up` speaks streamable HTTP (its
    requests are related to the call that caused them): `mcpctl serve --transport http` over a
    fault server process, or in-process (`inproc`: the HTTP upstream in memory, as the SDK's
    HTTP client delivers its requests)."""
    if front == "inproc":
        gw.upstreams.http(kit.store, "up", "--ask-tools")
        project = kit.project("p", ["up"], **BARE)
        async with gw.serve(project) as g, g.client(mode, "alice", **answering("alice")) as a, \
                g.client(mode, "bob", **answering("bob")) as b:
            yield a, b
        return
    with http_upstream(kit, "up", "--ask-tools"):
        project = kit.project("p", ["up"], **BARE)
        with http_gateway(kit, project) as (url, token):
            async with http_client(url, token, mode, "alice", **answering("alice")) as a, \
                    http_client(url, token, mode, "bob", **answering("bob")) as b:
                yield a, b


@pytest.mark.parametrize(("front", "mode"), [("inproc", "legacy"), ("http", "auto")])
async def test_two_clients_calling_at_once_never_see_each_others_requests(kit: Kit, gw: Harness, front: str,
                                                                          mode: str) -> None:
    """200 interleaved round trips through an HTTP upstream, two clients of one HTTP gateway: every
    request is answered by the client whose call caused it."""
    async with two_clients_over_an_http_upstream(kit, gw, front, mode) as (a, b):
        await wait_tools(a, {"sample"})
        await wait_tools(b, {"sample"})
        wrong: list[str] = []

        async def one(c: Any, who: str, i: int) -> None:
            kind = i % 3
            if kind == 0:
                got, want = await call(c, "sample", {"text": f"{who}-{i}"}), f"sampled: {who}: {who}-{i}"
            elif kind == 1:
                got, want = await call(c, "elicit"), f"elicited: accept {{'name': '{who}'}}"
            else:
                got, want = await call(c, "roots"), f"roots: file:///{who}"
            if got != (False, want):
                wrong.append(f"{who} #{i}: {got}")

        async def client(c: Any, who: str) -> None:
            for i in range(0, 100, 4):           # 4 calls in flight per client
                async with anyio.create_task_group() as tg:
                    for j in range(i, i + 4):
                        tg.start_soon(one, c, who, j)

        with anyio.fail_after(120 * SLACK):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client, a, "alice")
                tg.start_soon(client, b, "bob")
        assert wrong == []
    assert kit.leftovers() == []


async def test_over_a_stdio_upstream_requests_of_concurrent_clients_are_refused_never_crossed(kit: Kit,
                                                                                              gw: Harness) -> None:
    """A stdio upstream's requests carry no association: while calls of two sessions are in flight
    the gateway refuses them; a lone call is answered by its own client."""
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    async with gw.serve(project) as g, g.client("legacy", "alice", **answering("alice")) as a, \
                g.client("legacy", "bob", **answering("bob")) as b:
        await wait_tools(a, {"sample"})
        await wait_tools(b, {"sample"})
        assert await call(a, "sample", {"text": "alone"}) == (False, "sampled: alice: alone")
        outcomes: dict[str, int] = {"own": 0, "refused": 0}
        crossed: list[str] = []

        async def many(c: Any, who: str) -> None:
            for i in range(30):
                failed, text = await call(c, "sample", {"text": f"{who}-{i}"})
                if (failed, text) == (False, f"sampled: {who}: {who}-{i}"):
                    outcomes["own"] += 1
                elif failed and "several clients are calling" in text:
                    outcomes["refused"] += 1
                else:
                    crossed.append(f"{who}: {text}")

        async def busy(c: Any) -> None:
            for _ in range(30):
                await call(c, "slow", {"seconds": 0.02})

        with anyio.fail_after(120 * SLACK):
            async with anyio.create_task_group() as tg:
                tg.start_soon(many, a, "alice")
                tg.start_soon(many, b, "bob")
                tg.start_soon(busy, b)
        assert crossed == []
        assert outcomes["own"] + outcomes["refused"] == 60


async def test_a_call_waiting_for_its_client_does_not_take_the_asking_from_another_clients_call(
        kit: Kit, gw: Harness) -> None:
    """While alice's calls to a stdio upstream wait for her answers (she takes her time, as a
    credential's parked calls do), bob's call to the same upstream is asked and answered by bob
    (before: refused, "several clients are calling"); alice then answers her own."""
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    release = anyio.Event()
    waiting = [0]
    slow = answering("alice")
    quick = slow["elicitation_callback"]

    async def held(ctx: Any, params: Any) -> Any:
        waiting[0] += 1
        await release.wait()
        return await quick(ctx, params)

    slow["elicitation_callback"] = held
    async with gw.serve(project) as g, g.client("legacy", "alice", **slow) as a, \
            g.client("legacy", "bob", **answering("bob")) as b:
        await wait_tools(a, {"elicit"})
        await wait_tools(b, {"sample"})
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                held_calls: list[tuple[bool, str]] = []

                async def alice() -> None:
                    held_calls.append(await call(a, "elicit"))

                for _ in range(5):
                    tg.start_soon(alice)
                await g.until(lambda: waiting[0] == 5, 15, poll=0.02)
                assert await call(b, "sample", {"text": "mine"}) == (False, "sampled: bob: mine")
                assert await call(b, "elicit") == (False, "elicited: accept {'name': 'bob'}")
                release.set()
        assert held_calls == [(False, "elicited: accept {'name': 'alice'}")] * 5


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_roots_outside_a_call_come_from_a_connected_client_and_roots_changes_reach_upstreams(
        kit: Kit, gw: Harness, front: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)

    async def roots_seen(c: Any, want: list[str]) -> dict[str, Any]:
        with anyio.fail_after(15 * SLACK):
            while True:
                await anyio.sleep(0.3)      # no call in flight while the upstream asks (stdio: no association)
                r = await c.call_tool("state", {})
                if r.structured_content["roots_outside"] == want:
                    return dict(r.structured_content)

    if front == "stdio":
        async with kit.client(project, "legacy", **answering("alice")) as c:
            await wait_tools(c, {"state"})
            await c.session.send_roots_list_changed()
            seen = await roots_seen(c, ["file:///alice"])
            assert seen["roots_changed"] == 1
        return
    async with gw.serve(project) as g:
        async def roots_seen(c: Any, want: list[str]) -> dict[str, Any]:
            await g.until(lambda: gw.upstreams.seen("up")["roots_outside"] == want, 15)
            return dict(gw.upstreams.seen("up"))

        async with g.client("legacy", "alice", **answering("alice")) as a, \
                g.client("legacy", "bob") as b:        # bob offers no roots
            await wait_tools(a, {"state"})
            await wait_tools(b, {"state"})
            await b.session.send_roots_list_changed()
            await roots_seen(b, ["file:///alice"])                 # the only client with roots
            async with g.client("legacy", "carol", **answering("carol")) as c:
                await wait_tools(c, {"state"})                     # the most recently active one
                await c.session.send_roots_list_changed()
                await roots_seen(c, ["file:///carol"])


@pytest.mark.parametrize(("front", "mode"), [("stdio", "auto"), ("http", "legacy"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_progress_after_the_client_answered_reaches_the_request_that_answered(kit: Kit, gw: Harness,
                                                                                  front: str, mode: str) -> None:
    """A 2026 client's call is answered input-required while the upstream asks, and resumed by a new
    request with its own progress token: progress the upstream reports after the answer belongs to
    that request (the first one is over). A handshake-era client has one request throughout."""
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    steps: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, message))

    async with gateway_client(kit, project, front, mode, gw, **answering("erin")) as c:
        await wait_tools(c, {"elicit"})
        r = await c.call_tool("elicit", {"progress": True}, progress_callback=on_progress)
        assert text_of(r) == "elicited: accept {'name': 'erin'}"
        with anyio.fail_after(5 * SLACK):          # notification callbacks may run just after the result
            while len(steps) < 3:
                await anyio.sleep(0.02)
        assert steps == [(1, "asking"), (2, "answered"), (3, "answered")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_upstreams_input_required_results_are_carried_both_ways(kit: Kit, gw: Harness, mode: str) -> None:
    """A 2026-07-28-only upstream answers with an input-required result: a 2026 client gets it and
    its retry reaches the upstream; a handshake-era client is asked by the gateway instead."""
    kit.server("modern", "--ask-tools", "--modern-only")
    project = kit.project("p", ["modern"], **BARE)
    async with gw.client(project, mode, **answering("dana")) as c:
        await wait_tools(c, {"ask_input"})
        assert await call(c, "ask_input") == (False, "hello {'name': 'dana'} (state round-1)")
    assert kit.store.status("Server", "modern")["protocolVersion"] == "2026-07-28"


@pytest.mark.npm
async def test_npm_server_everything_sampling_elicitation_and_roots_through_the_gateway(kit: Kit) -> None:
    exe = npm_bin("mcp-server-everything")
    if exe is None:
        skip_unless_ci("npm reference server 'everything' not installed (.ci/run installs it)")
    kit.server("everything", command=exe)
    project = kit.project("p", ["everything"], **BARE)
    async with kit.client(project, "legacy", **answering("erin")) as c:
        await wait_tools(c, {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}, 30)
        failed, text = await call(c, "trigger-sampling-request", {"prompt": "hello"})
        assert not failed and "erin: Resource trigger-sampling-request context: hello" in text
        failed, text = await call(c, "trigger-elicitation-request")
        assert not failed and "erin" in text
        failed, text = await call(c, "get-roots-list")
        assert not failed and "file:///erin" in text
