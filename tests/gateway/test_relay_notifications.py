"""Logging, resource subscriptions, completion and listings through the gateway, in both protocol
eras, over stdio and HTTP: each reaches the upstream that owns it and only the clients it is for.

Most run in-process (`front="inproc"`, `inproc`); each behaviour keeps a run through the real
`mcpctl serve` (stdio or HTTP)."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, text_of, until, wait_tools
from inproc import Harness
from test_relay_requests import BARE, gateway_client

from ci_support import SLACK

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


def _collector() -> tuple[list[Any], Any]:
    seen: list[Any] = []

    async def on_message(msg: Any) -> None:
        if not isinstance(msg, Exception):
            seen.append(msg)

    return seen, on_message


async def _state(c: Any) -> dict[str, Any]:
    r = await c.call_tool("state", {})
    return dict(r.structured_content)


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_set_level_reaches_the_upstream_and_its_log_messages_reach_the_caller_at_that_level(
        kit: Kit, gw: Harness, front: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    logs: list[tuple[str, Any]] = []

    async def on_log(params: t.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async with gateway_client(kit, project, front, "legacy", gw, logging_callback=on_log) as c:
        await wait_tools(c, {"log"})
        assert c.server_capabilities.logging is not None
        r = await c.call_tool("log", {"level": "info", "n": 2, "tag": "before"})
        assert text_of(r) == "logged"
        assert logs == [("info", "before 0"), ("info", "before 1")]   # delivered before the result
        await c.set_logging_level("warning")
        assert (await _state(c))["level"] == "warning"
        logs.clear()
        await c.call_tool("log", {"level": "info", "n": 2, "tag": "quiet"})
        await c.call_tool("log", {"level": "error", "n": 1, "tag": "loud"})
        assert logs == [("error", "loud 0")]


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_an_upstream_that_restarts_gets_the_log_level_and_subscriptions_it_had(kit: Kit, gw: Harness,
                                                                                    front: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    async with gateway_client(kit, project, front, "legacy", gw) as c:
        await wait_tools(c, {"state", "crash"})
        presented = str((await c.list_resources()).resources[0].uri)
        await c.set_logging_level("debug")
        await c.subscribe_resource(presented)
        before = await _state(c)
        assert before["level"] == "debug" and before["subscribed"] == ["file:///up/readme.txt"]
        assert (await c.call_tool("crash", {})).is_error
        after: dict[str, Any] = {}

        async def restored() -> bool:
            nonlocal after
            r = await c.call_tool("state", {})
            after = dict(r.structured_content or {}) if not r.is_error else {}
            return after.get("pid") not in (None, before["pid"]) and after.get("level") == "debug" \
                and bool(after.get("subscribed"))

        if front == "inproc":              # re-checked at each status and each change the upstream sees
            await c.gw.until(restored, 20)
        else:
            with anyio.fail_after(20 * SLACK):     # restart backoff 0.5 s; then the level and subscriptions
                while not await restored():
                    await anyio.sleep(0.1)
        assert after["level"] == "debug" and after["subscribed"] == ["file:///up/readme.txt"]


async def test_each_http_session_gets_log_messages_at_its_own_level_and_the_upstream_the_most_verbose(
        kit: Kit, gw: Harness) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    logs: dict[str, list[Any]] = {"a": [], "b": []}

    def collect(who: str) -> Any:
        async def on_log(params: t.LoggingMessageNotificationParams) -> None:
            logs[who].append(params.data)
        return on_log

    async with gw.serve(project) as g, g.client("legacy", "a", logging_callback=collect("a")) as a, \
            g.client("legacy", "b", logging_callback=collect("b")) as b:
        await wait_tools(a, {"log"})
        await a.set_logging_level("debug")
        await b.set_logging_level("error")
        assert (await _state(b))["level"] == "debug"
        await a.call_tool("log", {"level": "info", "n": 1, "tag": "a"})
        await b.call_tool("log", {"level": "info", "n": 1, "tag": "b"})
        await b.call_tool("log", {"level": "critical", "n": 1, "tag": "b"})
        assert logs == {"a": ["a 0"], "b": ["b 0"]}


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_a_2026_client_gets_log_messages_only_when_its_request_asks_for_them(kit: Kit, gw: Harness,
                                                                                  front: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    logs: list[Any] = []

    async def on_log(params: t.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with gateway_client(kit, project, front, "auto", gw, logging_callback=on_log, log_level="warning") as c:
        await wait_tools(c, {"log"})
        await c.call_tool("log", {"level": "info", "n": 1, "tag": "info"})
        await c.call_tool("log", {"level": "warning", "n": 1, "tag": "warn"})
        assert logs == ["warn 0"]
    async with gateway_client(kit, project, front, "auto", gw, logging_callback=on_log) as c:
        await wait_tools(c, {"log"})
        await c.call_tool("log", {"level": "emergency", "n": 1, "tag": "unasked"})
        assert logs == ["warn 0"]


async def test_a_resource_update_reaches_only_its_subscribers_under_their_own_uri(kit: Kit, gw: Harness) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    async with gw.serve(project) as g:
        seen_a, on_a = _collector()
        seen_b, on_b = _collector()
        async with g.client("legacy", "a", message_handler=on_a) as a, \
                g.client("legacy", "b", message_handler=on_b) as b, \
                g.client("auto", "c") as c:
            await wait_tools(a, {"touch"})
            presented = str((await a.list_resources()).resources[0].uri)
            assert presented.startswith("mcpctl://up/")
            upstream_uri = "file:///up/readme.txt"
            await a.subscribe_resource(presented)
            await c.list_tools()
            async with c.listen(resource_subscriptions=[upstream_uri]) as sub:
                assert (await _state(b))["subscribed"] == [upstream_uri]
                await b.call_tool("touch", {"uri": upstream_uri})
                await g.until(lambda: any(isinstance(m, t.ResourceUpdatedNotification) for m in seen_a), 10)
                with anyio.fail_after(10 * SLACK):
                    event = await sub.__anext__()
                assert getattr(event, "uri", None) == upstream_uri        # c subscribed with the upstream URI
            updates = [m.params.uri for m in seen_a if isinstance(m, t.ResourceUpdatedNotification)]
            assert updates == [presented]
            assert not any(isinstance(m, t.ResourceUpdatedNotification) for m in seen_b)
            await a.unsubscribe_resource(presented)
            await g.until(lambda: not gw.upstreams.seen("up")["subscribed"], 10)     # c's stream ended too
            assert (await _state(b))["subscribed"] == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("http", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_completion_is_routed_to_the_upstream_that_owns_the_prompt_or_template(kit: Kit, gw: Harness,
                                                                                     front: str, mode: str) -> None:
    kit.server("a", "--ask-tools")
    kit.server("b", "--ask-tools")
    project = kit.project("p", ["a", "b"], **BARE)
    async with gateway_client(kit, project, front, mode, gw) as c:
        await wait_tools(c, {"a__sample", "b__sample"})
        assert c.server_capabilities.completions is not None
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert prompts == {"a__greet", "b__greet"}
        r = await c.complete(t.PromptReference(type="ref/prompt", name="b__greet"), {"name": "who", "value": ""})
        assert r.completion.values == ["b-a", "b-b", "prompt:greet"]
        r = await c.complete(t.ResourceTemplateReference(type="ref/resource", uri="note://a/{id}"),
                             {"name": "id", "value": "a"})
        assert r.completion.values == ["a-a", "a-b"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_capabilities_are_only_what_some_upstream_offers(kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("plain")
    project = kit.project("plain-only", ["plain"])
    async with gw.client(project, mode) as c:
        caps = c.server_capabilities
        assert caps.logging is None and caps.completions is None
        assert caps.resources is not None and not caps.resources.subscribe and caps.prompts is not None
    kit.server("rich", "--ask-tools")
    project = kit.project("both", ["plain", "rich"])
    async with gw.client(project, mode) as c:
        caps = c.server_capabilities
        assert caps.logging is not None and caps.completions is not None and caps.resources.subscribe


@pytest.mark.parametrize(("front", "mode"), [("stdio", "auto"), ("http", "legacy"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_a_paginated_upstream_listing_reaches_clients_whole(kit: Kit, gw: Harness, front: str,
                                                                  mode: str) -> None:
    kit.server("paged", "--page-size", "3", "--tools", "10")
    project = kit.project("p", ["paged"], **BARE)
    async with gateway_client(kit, project, front, mode, gw) as c:
        with warnings.catch_warnings():
            tools = await wait_tools(c, 24)
        names = {tl.name for tl in tools}
        assert {f"synthetic_{i:04d}" for i in range(10)} <= names and "echo" in names
        assert (await c.call_tool("synthetic_0009", {})).is_error is False


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("http", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_progress_and_log_messages_of_a_call_reach_the_calling_client(kit: Kit, gw: Harness, front: str,
                                                                           mode: str) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    logs: list[Any] = []
    steps: list[tuple[float, str | None]] = []

    async def on_log(params: t.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, message))

    level = {"log_level": "debug"} if mode == "auto" else {}     # 2026: the request opts in
    async with gateway_client(kit, project, front, mode, gw, logging_callback=on_log, **level) as c:
        await wait_tools(c, {"progress", "log"})
        r = await c.session.call_tool("progress", {}, progress_callback=on_progress)
        assert text_of(r) == "done"
        if front == "inproc":              # notification callbacks may run just after the result
            await c.gw.until(lambda: len(steps) >= 3, 5)
        else:
            with anyio.fail_after(5 * SLACK):
                while len(steps) < 3:
                    await anyio.sleep(0.02)
        assert [s[0] for s in steps] == [1, 2, 3]
        await c.call_tool("log", {"level": "info", "n": 2, "tag": "call"})
        assert logs == ["call 0", "call 1"]


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_over_stdio_a_subscribed_client_gets_updates_under_its_uri_until_it_unsubscribes(
        kit: Kit, gw: Harness, front: str) -> None:
    """Over stdio (one session), and in-process (a handshake-era session of its own)."""
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], **BARE)
    seen, on_message = _collector()
    async with gateway_client(kit, project, front, "legacy", gw, message_handler=on_message) as c:
        await wait_tools(c, {"touch"})
        presented = str((await c.list_resources()).resources[0].uri)
        upstream_uri = "file:///up/readme.txt"
        await c.subscribe_resource(presented)
        assert (await _state(c))["subscribed"] == [upstream_uri]
        await c.call_tool("touch", {"uri": upstream_uri})
        await c.call_tool("touch", {"uri": "file:///up/other.txt"})        # nobody subscribed to it
        await until(c, lambda: any(isinstance(m, t.ResourceUpdatedNotification) for m in seen), 10, 0.05)
        await c.unsubscribe_resource(presented)
        assert (await _state(c))["subscribed"] == []
        await c.call_tool("touch", {"uri": upstream_uri})
        await c.list_tools()                 # one more round trip after the last touch
        updates = [str(m.params.uri) for m in seen if isinstance(m, t.ResourceUpdatedNotification)]
        assert updates == [presented]
