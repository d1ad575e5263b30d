"""The rules of the 2026-07-28 protocol a gateway must keep, each in both directions (what is
accepted, what is refused), beside what the official conformance suite checks
(tests/gateway/test_conformance.py):

- `Mcp-Method`, `Mcp-Name` and `MCP-Protocol-Version` HTTP headers that match the body are
  answered; a mismatch or a missing header is refused with the spec's error (-32020, HTTP 400)
  before anything reaches an upstream (the real `mcpctl serve --transport http`);
- `ttlMs` and `cacheScope` on every list and read result of a 2026-07-28 client, `private` (what
  is listed depends on the credential's view), and never on a handshake-era client's;
- one deterministic order of `tools/list`, whatever order the upstreams answer in;
- the W3C trace context (`traceparent`, `tracestate` in `_meta`) reaches the upstream the call is
  routed to, from clients of both eras.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from gwkit import Kit, text_of, wait_tools
from inproc import Harness
from test_serve_http import http_gateway_process

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
HEADER_MISMATCH = -32020
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACESTATE = "vendor=abc"


def _body(method: str, params: dict[str, Any], n: int = 1) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": {**params, "_meta": meta}}


async def test_routing_headers_that_match_the_body_are_answered_and_any_mismatch_is_refused(kit: Kit) -> None:
    import httpx2

    kit.server("alpha")
    kit.project("p", ["alpha"])
    with http_gateway_process(kit, "p") as gw:
        base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                "Authorization": f"Bearer {gw.token}", "MCP-Protocol-Version": MODERN}

        async def post(body: dict[str, Any], **headers: str) -> tuple[int, dict[str, Any]]:
            sent = {**base, **{k.replace("_", "-"): v for k, v in headers.items()}}
            sent = {k: v for k, v in sent.items() if v}
            r = await h.post(gw.url, headers=sent, json=body)
            return r.status_code, json.loads(r.text) if r.text else {}

        call = _body("tools/call", {"name": "alpha__echo", "arguments": {"text": "hi"}})
        async with httpx2.AsyncClient(timeout=60) as h:
            status, listed = await post(_body("tools/list", {}), Mcp_Method="tools/list")
            assert status == 200 and "alpha__echo" in {t["name"] for t in listed["result"]["tools"]}, listed
            status, got = await post(call, Mcp_Method="tools/call", Mcp_Name="alpha__echo")
            assert status == 200 and got["result"]["content"][0]["text"] == "hi", got

            refusals = {
                "Mcp-Method names another method": dict(Mcp_Method="tools/list", Mcp_Name="alpha__echo"),
                "no Mcp-Method": dict(Mcp_Method="", Mcp_Name="alpha__echo"),
                "Mcp-Name names another tool": dict(Mcp_Method="tools/call", Mcp_Name="alpha__add"),
                "no Mcp-Name": dict(Mcp_Method="tools/call", Mcp_Name=""),
            }
            for why, headers in refusals.items():
                status, got = await post(call, **headers)
                assert status == 400 and got.get("error", {}).get("code") == HEADER_MISMATCH, (why, status, got)
            # a version header that is not the body's: a handshake-era version makes it a handshake-era
            # request, which has no session (-32600); no version header at all is a mismatch
            status, got = await post(call, Mcp_Method="tools/call", Mcp_Name="alpha__echo",
                                     MCP_Protocol_Version="2025-11-25")
            assert status == 400 and got["error"]["code"] == -32600, got
            status, got = await post(call, Mcp_Method="tools/call", Mcp_Name="alpha__echo", MCP_Protocol_Version="")
            assert status == 400 and "error" in got, got
            read = _body("resources/read", {"uri": "mcpctl://nothing"})
            status, got = await post(read, Mcp_Method="resources/read", Mcp_Name="mcpctl://other")
            assert status == 400 and got["error"]["code"] == HEADER_MISMATCH, got

    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:       # only the one matching call reached the upstream
        assert [r.presented_name for r in log.query(project="p")] == ["alpha__echo"]


async def test_list_and_read_results_carry_ttl_and_a_private_scope_for_2026_clients_only(
        kit: Kit, gw: Harness) -> None:
    kit.server("alpha", "--list-items", "2")
    kit.project("p", ["alpha"])
    async with gw.serve("p") as g, g.client("auto") as modern, g.client("legacy") as legacy:
        await wait_tools(modern, {"alpha__echo"})
        await wait_tools(legacy, {"alpha__echo"})
        for c, era in ((modern, MODERN), (legacy, "legacy")):
            resources = await c.list_resources(cache_mode="bypass")
            assert resources.resources, era
            results = {
                "tools/list": await c.list_tools(cache_mode="bypass"),
                "prompts/list": await c.list_prompts(cache_mode="bypass"),
                "resources/list": resources,
                "resources/templates/list": await c.list_resource_templates(cache_mode="bypass"),
                "resources/read": await c.read_resource(str(resources.resources[0].uri), cache_mode="bypass"),
            }
            for method, r in results.items():
                if era == MODERN:
                    assert (r.ttl_ms, r.cache_scope) == (0, "private"), (method, r.ttl_ms, r.cache_scope)
                else:
                    assert not {"ttl_ms", "cache_scope"} & r.model_fields_set, (method, r.model_fields_set)


async def test_tools_are_listed_in_one_order_whatever_order_the_upstreams_answer_in(
        kit: Kit, gw: Harness) -> None:
    orders = []
    for slow in ("alpha", "beta"):       # the other upstream answers first
        kit.server("alpha", "--tools", "3", *(["--start-delay", "0.3"] if slow == "alpha" else []))
        kit.server("beta", "--tools", "3", *(["--start-delay", "0.3"] if slow == "beta" else []))
        kit.project("p", ["alpha", "beta"])
        async with gw.serve("p") as g:
            async with g.client("auto") as a:
                await wait_tools(a, {"alpha__echo", "beta__echo"})
                first = [t.name for t in (await a.list_tools(cache_mode="bypass")).tools]
            async with g.client("legacy") as b:
                second = [t.name for t in (await b.list_tools()).tools]
        assert first == second
        orders.append(first)
    assert orders[0] == orders[1]
    servers = [name.split("__")[0] for name in orders[0] if "__" in name]
    assert servers == sorted(servers, key=["alpha", "beta"].index)     # the project's order of servers


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_trace_context_reaches_the_upstream_the_call_is_routed_to(
        kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    async with gw.serve("p") as g, g.client(mode) as c:
        await wait_tools(c, {"alpha__echo"})
        meta: Any = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
        r = await c.call_tool("alpha__echo", {"text": "traced"}, meta=meta)
        assert text_of(r) == "traced"
        seen = g.upstreams.seen("alpha")["echo_meta"]
        assert (seen.get("traceparent"), seen.get("tracestate")) == (TRACEPARENT, TRACESTATE), seen
        r = await c.call_tool("alpha__echo", {"text": "untraced"})
        assert "traceparent" not in g.upstreams.seen("alpha")["echo_meta"]
