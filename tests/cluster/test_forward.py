"""The forwarding layer between replicas (`mcpctl.cluster.forward`) and its signed hop, in-process:
two replicas' `Forwarder`s in front of recording ASGI apps, the hop going through httpx2's ASGI
transport (the real one between processes runs in tests/team/test_replicas.py)."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import httpx2
import pytest

from mcpctl.cluster import hop
from mcpctl.cluster.forward import Forwarder, state_owner
from mcpctl.cluster.registry import Registry

pytestmark = pytest.mark.anyio
SECRET = b"s3cret"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Peers(Registry):
    """A registry without a database: the live replicas are what the test says."""

    def __init__(self, rid: str, peers: dict[str, str]) -> None:
        super().__init__("postgresql://unused")
        self.id, self.peers, self.secret = rid, peers, SECRET

    def _read_peers(self) -> None:
        return None


class App:
    """An ASGI app that records what reached it and answers with a session id of its own."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.seen.append({"headers": dict(scope["headers"]), "body": body})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"sdk1")]})
        for part in (b"data: one\n\n", b"data: " + self.name.encode() + b"\n\n"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def replicas(owner_up: bool = True) -> tuple[Forwarder, App, App]:
    """Replica a (the one a client reaches) and replica b (the owner), each a Forwarder before its app."""
    app_a, app_b = App("a"), App("b")
    fwd_b = Forwarder(app_b, Peers("bbbbbbbb", {}), lambda: None)

    def client() -> httpx2.AsyncClient:
        if owner_up:
            return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=fwd_b))

        def refuse(request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError("connection refused", request=request)

        return httpx2.AsyncClient(transport=httpx2.MockTransport(refuse))

    fwd_a = Forwarder(app_a, Peers("aaaaaaaa", {"bbbbbbbb": "http://b:8765"}), client)
    return fwd_a, app_a, app_b


async def post(app: Any, headers: dict[str, str], body: bytes = b"{}") -> httpx2.Response:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://gw") as c:
        return await c.post("/mcp", headers={"authorization": "Bearer t", **headers}, content=body)


def retry(state: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "up__elicit", "arguments": {}, "requestState": state,
        "inputResponses": {"r1": {"action": "accept"}}}}).encode()


async def test_a_session_of_this_replica_stays_here_with_the_sdks_own_id() -> None:
    fwd_a, app_a, app_b = replicas()
    r = await post(fwd_a, {"mcp-session-id": "aaaaaaaa.sdk1"})
    assert r.status_code == 200 and r.headers["mcp-session-id"] == "aaaaaaaa.sdk1"
    assert app_a.seen[0]["headers"][b"mcp-session-id"] == b"sdk1" and app_b.seen == []
    assert fwd_a.forwarded == 0


async def test_a_new_session_gets_this_replicas_prefix() -> None:
    fwd_a, app_a, _ = replicas()
    r = await post(fwd_a, {})
    assert r.headers["mcp-session-id"] == "aaaaaaaa.sdk1" and len(app_a.seen) == 1


async def test_another_replicas_session_is_forwarded_and_streamed_back_with_its_headers() -> None:
    fwd_a, app_a, app_b = replicas()
    r = await post(fwd_a, {"mcp-session-id": "bbbbbbbb.sdk1"}, b'{"x":1}')
    assert r.status_code == 200 and r.text == "data: one\n\ndata: b\n\n"
    assert r.headers["mcp-session-id"] == "bbbbbbbb.sdk1"       # the owner's, as the client knows it
    assert app_a.seen == [] and fwd_a.forwarded == 1
    (seen,) = app_b.seen
    assert seen["body"] == b'{"x":1}' and seen["headers"][b"authorization"] == b"Bearer t"
    assert seen["headers"][b"mcp-session-id"] == b"sdk1" and hop.HEADER not in seen["headers"]


async def test_a_session_whose_replica_is_gone_is_answered_404() -> None:
    for headers, owner_up in (({"mcp-session-id": "cccccccc.sdk1"}, True),     # not in the table
                              ({"mcp-session-id": "bbbbbbbb.sdk1"}, False)):   # refuses connections
        fwd_a, app_a, app_b = replicas(owner_up)
        r = await post(fwd_a, headers)
        assert r.status_code == 404 and "Session not found" in r.json()["error"]["message"]
        assert app_a.seen == app_b.seen == []


async def test_a_parked_calls_retry_goes_to_its_replica_or_stays_here_when_it_is_gone() -> None:
    fwd_a, app_a, app_b = replicas()
    await post(fwd_a, {}, retry("mcpctl:bbbbbbbb.tok"))
    assert app_a.seen == [] and len(app_b.seen) == 1
    await post(fwd_a, {}, retry("mcpctl:aaaaaaaa.tok"))          # its own: here
    assert len(app_a.seen) == 1
    fwd_a, app_a, app_b = replicas(owner_up=False)
    r = await post(fwd_a, {}, retry("mcpctl:bbbbbbbb.tok"))      # gone: answered here (restarted)
    assert r.status_code == 200 and len(app_a.seen) == 1 and app_b.seen == []


async def test_a_hop_header_not_made_with_the_clusters_secret_is_refused() -> None:
    fwd_a, app_a, _ = replicas()
    body = b"{}"
    forged = hop.sign(b"guess", "bbbbbbbb", "aaaaaaaa", "POST", "/mcp", b"", body)
    r = await post(fwd_a, {hop.HEADER.decode(): forged.decode()}, body)
    assert r.status_code == 403 and app_a.seen == []
    good = hop.sign(SECRET, "bbbbbbbb", "aaaaaaaa", "POST", "/mcp", b"", body)
    assert (await post(fwd_a, {hop.HEADER.decode(): good.decode()}, body)).status_code == 200
    assert (await post(fwd_a, {hop.HEADER.decode(): good.decode()}, b'{"other":1}')).status_code == 403


def test_the_hop_is_bound_to_its_target_its_time_and_its_request() -> None:
    value = hop.sign(SECRET, "a", "b", "POST", "/mcp", b"s", b"body", now=1000)
    assert hop.verify(SECRET, value, "b", "POST", "/mcp", b"s", b"body", now=1010)
    assert not hop.verify(SECRET, value, "a", "POST", "/mcp", b"s", b"body", now=1010)       # another target
    assert not hop.verify(SECRET, value, "b", "POST", "/mcp", b"s", b"body", now=1000 + 31)  # too old
    assert not hop.verify(SECRET, value, "b", "GET", "/mcp", b"s", b"body", now=1010)
    assert not hop.verify(SECRET, value, "b", "POST", "/mcp", b"t", b"body", now=1010)
    assert not hop.verify(SECRET, b"garbage", "b", "POST", "/mcp", b"s", b"body")


def test_the_owner_of_a_request_state() -> None:
    assert state_owner(retry("mcpctl:bbbbbbbb.tok")) == "bbbbbbbb"
    assert state_owner(retry("mcpctl:tok")) is None                  # a gateway without a database
    assert state_owner(retry("upstream-state")) is None
    assert state_owner(b"not json") is None
