"""One credential cannot take the HTTP front from the others, and a parked call is resumed only
as itself (`mcpctl serve --transport http`, the real process, loopback).

Each flood comes from one token (the narrowest profile's) against small configured shares, and
meanwhile another credential's `ping`, `tools/list` and a tool call must answer within a few
seconds of their own baseline."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from gwkit import Kit
from test_serve_http import http_gateway_process
from typer.testing import CliRunner

from mcpctl.cli import app

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
PROFILES = {"narrow": {"allow": ["good/echo", "good/elicit"]}}


def _meta(name: str = "c") -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


def _token(name: str, profile: str) -> str:
    r = CliRunner().invoke(app, ["create", "token", name, "-p", "p", "--profile", profile], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    return r.stdout.strip()


class Modern:
    """Raw 2026-07-28 requests over HTTP (the SDK's client answers input-required results itself;
    these tests need the `requestState`)."""

    def __init__(self, h: Any, url: str, token: str, name: str = "c") -> None:
        self.h, self.url, self.token, self.name, self.n = h, url, token, name, 0

    async def post(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self.n += 1
        params = {**(params or {}), "_meta": _meta(self.name)}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "Authorization": f"Bearer {self.token}", "Mcp-Protocol-Version": MODERN, "Mcp-Method": method}
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        r = await self.h.post(self.url, headers=headers,
                              json={"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        return r.status_code, json.loads(r.text) if r.text else {}

    async def call(self, name: str, **params: Any) -> dict[str, Any]:
        status, body = await self.post("tools/call", {"name": name, "arguments": {}, **params})
        assert status in (200, 400), (status, body)
        return body


def _rows(project: str, want: int, timeout: float = 10) -> list[Any]:
    from mcpctl.audit.log import InvocationLog

    deadline = time.monotonic() + timeout
    while True:
        with InvocationLog() as log:
            rows = log.query(project=project)
        if len(rows) >= want or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


async def test_a_resumed_call_is_checked_and_logged_as_the_call_it_is(kit: Kit) -> None:
    """A retry carrying `good__elicit`'s requestState under another tool's name is refused and
    logged `denied`; the right retry is logged as `good__elicit`; another credential (same
    client name and version) cannot resume it at all."""
    import httpx2

    kit.server("good", "--ask-tools")
    kit.project("p", ["good"], profiles=PROFILES)
    other = _token("other", "narrow")
    answer = {"r1": {"action": "accept", "content": {"name": "x"}}}
    with http_gateway_process(kit, "p") as gw:
        async with httpx2.AsyncClient(timeout=30) as h:
            mine, theirs = Modern(h, gw.url, gw.token), Modern(h, gw.url, other)
            with anyio.fail_after(30):
                parked = await mine.call("good__elicit")
                state = parked["result"]["requestState"]
                assert parked["result"]["resultType"] == "input_required"
                swapped = await mine.call("good__delete_all", requestState=state, inputResponses=answer)
                assert swapped["error"]["code"] == -32602, swapped
                assert "'good__elicit'" in swapped["error"]["message"], swapped
                stolen = await theirs.call("good__elicit", requestState=state, inputResponses=answer)
                assert "unknown or expired requestState" in stolen["error"]["message"], stolen
                done = await mine.call("good__elicit", requestState=state, inputResponses=answer)
                assert done["result"]["content"][0]["text"] == "elicited: accept {'name': 'x'}", done
    logged = [(r.presented_name, r.outcome, r.error_class) for r in _rows("p", 4)]
    assert logged == [("good__elicit", "ok", "InputRequired"), ("good__delete_all", "denied", "RequestStateMismatch"),
                      ("good__elicit", "protocol_error", "MCPError-32600"), ("good__elicit", "ok", None)], logged

