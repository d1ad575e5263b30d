"""`mcpctl serve` over stdio with the official SDK client, in both protocol eras; the same behaviour
of the gateway in-process too (`front="inproc"`, `inproc`)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, text_of, until, wait_tools
from inproc import Harness
from mcp import MCPError
from test_relay_requests import gateway_client

from ci_support import SLACK

pytestmark = pytest.mark.anyio

PORTABLE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _setup(kit: Kit, marker_dir: Path) -> str:
    kit.server("alpha", "--marker-dir", str(marker_dir))
    kit.server("beta", "--legacy-only", "--page-size", "4")   # handshake-era upstream, paginated
    return kit.project("p", ["alpha", "beta"], tools={"disabled": ["alpha/delete_*", "beta/*"],
                                                      "enabled": ["beta/echo", "beta/add_tool", "beta/extra_*"]})


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("stdio", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto"), ("inproc", "2026-07-28")])
async def test_catalogue_calls_and_passthrough(kit: Kit, gw: Harness, tmp_path: Path, front: str, mode: str) -> None:
    project = _setup(kit, tmp_path)
    async with gateway_client(kit, project, front, mode, gw) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        # first contact: never-listed servers are waited for, so a client that lists once sees them
        first = await c.list_tools()
        assert {"search_tools", "alpha__echo", "beta__echo"} <= {x.name for x in first.tools}

        tools = {x.name: x for x in await wait_tools(c, {"alpha__echo", "beta__echo"})}
        assert all(PORTABLE.match(n) and len(n) <= 48 for n in tools)
        # curation: disabled tools are not listed; the allow-list exception is
        assert "alpha__delete_all" not in tools and "beta__add" not in tools and "beta__echo" in tools
        # beta pages 4 tools at a time: every enabled page arrived
        assert {"beta__echo", "beta__add_tool"} <= set(tools)
        # pass-through of schema, annotations, outputSchema and _meta
        echo = tools["alpha__echo"]
        assert echo.input_schema["required"] == ["text"]
        assert echo.annotations is not None and echo.annotations.read_only_hint is True
        assert echo.meta == {"vendor/x": 1}
        assert tools["alpha__structured"].output_schema["required"] == ["square"]
        odd = [n for n in tools if n.startswith("alpha__odd")]
        assert len(odd) == 1 and PORTABLE.match(odd[0])

        r = await c.session.call_tool("alpha__echo", {"text": "hello"})
        assert text_of(r) == "hello" and not r.is_error
        assert r.meta is not None and r.meta.get("upstream/meta") == "kept"
        stamp = (r.meta or {}).get("io.modelcontextprotocol/serverInfo")
        assert stamp is None if mode == "legacy" else stamp["name"] == "mcpctl"
        r = await c.session.call_tool("beta__echo", {"text": "from beta"})
        assert text_of(r) == "from beta"
        r = await c.session.call_tool("alpha__structured", {"n": 9})
        assert r.structured_content == {"square": 81}
        r = await c.session.call_tool("alpha__fail", {})
        assert r.is_error and "always fails" in text_of(r)
        r = await c.session.call_tool(odd[0], {})
        assert not r.is_error and "ok" in text_of(r)

        # disabled tools are not callable
        r = await c.session.call_tool("alpha__delete_all", {})
        assert r.is_error and "disabled" in text_of(r)

        # progress flows back
        seen: list[float] = []

        async def on_progress(p: float, total: float | None, msg: str | None) -> None:
            seen.append(p)

        r = await c.session.call_tool("alpha__progress", {}, progress_callback=on_progress)
        assert text_of(r) == "done"
        await until(c, lambda: len(seen) >= 3, 5, 0.02)
        assert seen == [1.0, 2.0, 3.0]

        # client cancellation cancels the upstream request
        with anyio.move_on_after(0.5):
            await c.session.call_tool("alpha__hang", {})
        await until(c, lambda: bool(list(tmp_path.glob("cancelled-*"))), 10, 0.05)

        # prompts and resources are aggregated, namespaced and routed back; a server whose tools
        # are disabled as a whole (`beta/*`, whatever single tools are enabled again) shows none of
        # its prompts and resources: curation decides them by server (docs/internals.md)
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert "alpha__greet" in prompts and "beta__greet" not in prompts
        got = await c.get_prompt("alpha__greet", {"who": "ann"})
        assert "hello ann from alpha" in got.messages[0].content.text
        resources = [str(x.uri) for x in (await c.list_resources()).resources]
        alpha_uri = next(u for u in resources if "alpha" in u)
        assert not [u for u in resources if "beta" in u]
        read = await c.read_resource(alpha_uri)
        assert "content of file:///alpha/readme.txt from alpha" in read.contents[0].text
        with pytest.raises(MCPError):
            await c.read_resource("note://beta/42")      # beta's template: outside the curated view
    assert kit.leftovers() == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("stdio", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_upstream_list_changed_reaches_the_client(kit: Kit, gw: Harness, tmp_path: Path, front: str,
                                                        mode: str) -> None:
    project = _setup(kit, tmp_path)
    changed = anyio.Event()

    async def on_message(msg: object) -> None:
        if isinstance(msg, t.ToolListChangedNotification):
            changed.set()

    async with gateway_client(kit, project, front, mode, gw, message_handler=on_message) as c:
        await wait_tools(c, {"alpha__echo", "beta__echo"})
        async with anyio.create_task_group() as tg:
            if mode == "auto":
                listening = anyio.Event()

                async def listen() -> None:
                    async with c.listen(tools_list_changed=True) as sub:
                        listening.set()
                        async for _ in sub:
                            changed.set()
                            return
                tg.start_soon(listen)
                with anyio.fail_after(10 * SLACK):
                    await listening.wait()         # entered: the gateway acknowledged the stream
            for server, expected in (("alpha", "alpha__extra_1"), ("beta", "beta__extra_1")):
                changed = anyio.Event() if mode == "legacy" else changed
                await c.session.call_tool(f"{server}__add_tool", {})
                with anyio.fail_after(10 * SLACK):
                    await changed.wait()
                # a notification from the start-up listings may arrive late; the new tool follows
                await wait_tools(c, {expected}, timeout=10)
                if mode == "auto":
                    break   # one listen stream, one event: enough for the modern era
            tg.cancel_scope.cancel()
    assert kit.leftovers() == []


@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])
async def test_search_tools_contract(kit: Kit, gw: Harness, tmp_path: Path, mode: str) -> None:
    project = _setup(kit, tmp_path)
    async with gw.client(project, mode) as c:
        await wait_tools(c, {"alpha__echo", "beta__echo"})
        r = await c.session.call_tool("search_tools", {"query": "sleep for some seconds", "top_k": 3})
        assert not r.is_error
        data = r.structured_content
        assert data is not None and set(data) == {"tools", "total_searched"}
        assert data["tools"][0]["name"] == "alpha__slow"
        assert data["tools"][0]["inputSchema"]["properties"]["seconds"]["type"] == "number"
        assert all(set(x) == {"name", "description", "inputSchema", "score"} for x in data["tools"])
        assert len(data["tools"]) <= 3
        names = {x["name"] for x in data["tools"]}
        assert "search_tools" not in names and "alpha__delete_all" not in names
        assert data["total_searched"] == len([x for x in (await c.list_tools()).tools if x.name not in ("search_tools", "read_result")])
        import json

        assert json.loads(text_of(r)) == data
        r = await c.session.call_tool("search_tools", {"query": "echo"})
        assert len(r.structured_content["tools"]) <= 5     # default topK
        for bad in ({"query": "  "}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": 21},
                    {"query": "x", "top_k": "3"}, {}):
            r = await c.session.call_tool("search_tools", bad)
            assert r.is_error, bad
            assert "search_tools" in text_of(r)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_can_be_disabled(kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("alpha")
    project = kit.project("p", ["alpha"], search={"enabled": False})
    async with gw.client(project, mode) as c:
        tools = await wait_tools(c, {"alpha__echo"})
        assert "search_tools" not in {x.name for x in tools}


async def test_curation_changes_apply_while_serving(kit: Kit, gw: Harness, runner: object) -> None:
    from mcpctl.cli import app

    kit.server("alpha")
    project = kit.project("p", ["alpha"])
    changed = anyio.Event()

    async def on_message(msg: object) -> None:
        if isinstance(msg, t.ToolListChangedNotification):
            changed.set()

    async with gw.client(project, message_handler=on_message) as c:
        await wait_tools(c, {"alpha__echo", "alpha__add"})
        changed = anyio.Event()
        r = runner.invoke(app, ["tools", "disable", "--project", "p", "alpha/add"])  # type: ignore[attr-defined]
        assert r.exit_code == 0, r.output
        with anyio.fail_after(10 * SLACK):
            await changed.wait()

        async def gone() -> bool:
            return "alpha__add" not in {x.name for x in (await c.list_tools()).tools}

        await until(c, gone, 10)
        r = await c.session.call_tool("alpha__add", {"a": 1, "b": 2})
        assert r.is_error and "disabled" in text_of(r)
    assert kit.leftovers() == []


async def test_http_upstream_with_headers_from_the_resource(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import socket
    import subprocess
    import sys

    from gwkit import FAULT_SERVER, free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FAULT_SERVER), "--name", "web", "--http-port", str(port),
                             "--require-token", "tok-123"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    try:
        with anyio.fail_after(20 * SLACK):
            while True:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                await anyio.sleep(0.05)
        kit.http_server("web", f"http://127.0.0.1:{port}/mcp", headers={"X-Test-Token": "${env:WEB_TOKEN}"})
        kit.http_server("webbad", f"http://127.0.0.1:{port}/mcp", headers={"X-Test-Token": "wrong"})
        kit.project("p", ["web", "webbad"])
        params = kit.params("p")
        params.env["WEB_TOKEN"] = "tok-123"
        from mcp import Client

        async with Client(params, mode="auto") as c:
            await wait_tools(c, {"web__echo"})
            r = await c.session.call_tool("web__echo", {"text": "over http upstream"})
            assert text_of(r) == "over http upstream"
            seen: list[float] = []

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                seen.append(p)

            r = await c.session.call_tool("web__progress", {}, progress_callback=on_progress)
            assert text_of(r) == "done"
            assert not any(x.name.startswith("webbad__") for x in (await c.list_tools()).tools)
        # never up: down, or (under load the backoff ends first) connecting again for the next try
        assert kit.store.status("Server", "webbad")["state"] in ("down", "connecting"), kit.store.status("Server", "webbad")
        assert kit.store.status("Server", "web")["serverInfo"]["name"] == "web"
    finally:
        proc.terminate()
        proc.wait(timeout=10 * SLACK)
