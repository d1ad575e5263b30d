"""One credential cannot take the HTTP front from the others, and a parked call is resumed only
as itself (`mcpctl serve --transport http`, the real process, loopback).

Each flood comes from one token (the narrowest profile's) against small configured shares, and
meanwhile another credential's `ping`, `tools/list` and a tool call must answer within a few
seconds of their own baseline."""

from __future__ import annotations

import contextlib
import json
import re
import selectors
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest
from gwkit import SLACK, Kit, http_upstream, text_of, wait_tools
from test_http_sessions import _open_sessions
from test_serve_http import HttpGateway, http_client, http_gateway_process
from typer.testing import CliRunner

from mcpctl.cli import app

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

MODERN = "2026-07-28"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}}
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
        async with httpx2.AsyncClient(timeout=30 * SLACK) as h:
            mine, theirs = Modern(h, gw.url, gw.token), Modern(h, gw.url, other)
            with anyio.fail_after(30 * SLACK):
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



# -- floods from one credential ------------------------------------------------------------------

Probe = Callable[[], Awaitable[float]]


@contextlib.asynccontextmanager
async def _other_credential(gw: HttpGateway) -> AsyncIterator[tuple[Probe, float]]:
    """The project's own token as a handshake-era client (2026-07-28 has no ping) opening a new TCP
    connection per request (as a new client meets the flood), and the bound for its ping +
    tools/list + call: a few seconds, five times what they took before the flood."""
    import httpx2

    no_keepalive = {"limits": httpx2.Limits(max_connections=4, max_keepalive_connections=0)}
    async with http_client(gw.url, gw.token, "legacy", name="other", http=no_keepalive) as c:
        await wait_tools(c, {"good__echo"})

        async def probe() -> float:
            started = time.monotonic()
            with anyio.fail_after(30 * SLACK):
                await c.send_ping()
                assert "good__echo" in {t.name for t in (await c.list_tools()).tools}
                r = await c.call_tool("good__echo", {"text": "still served"})
                assert text_of(r) == "still served"
            return time.monotonic() - started

        baseline = min([await probe() for _ in range(3)])
        yield probe, max(3.0, 5 * baseline) * SLACK


def _no_traceback(gw: HttpGateway) -> None:
    stderr = gw.stderr.read_text()
    assert "Traceback" not in stderr, stderr[-3000:]


async def _logged(gw: HttpGateway, pattern: str) -> None:
    """Wait for the refusal summary matching `pattern` (one line per burst, after 2 s of quiet);
    no traceback meanwhile."""
    with anyio.fail_after(15 * SLACK):
        while not re.search(pattern, gw.stderr.read_text()):
            await anyio.sleep(0.1)
    _no_traceback(gw)


def _partial_body(port: int, token: str) -> socket.socket:
    """A request head with the token and 5 of its 100 bytes of body: the rest never comes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SLACK)
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
               "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
               "Content-Length: 100\r\n\r\n{\"jso").encode())
    return s


def _outcomes(socks: list[socket.socket], timeout: float) -> dict[str, int]:
    """How each socket ended within `timeout`: answered 429, closed without an answer, or still open."""
    got = {"429": 0, "closed": 0, "open": 0, "other": 0}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        for s in socks:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, bytearray())
        while sel.get_map() and time.monotonic() < deadline:
            for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                try:
                    chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except (ConnectionResetError, BlockingIOError):
                    chunk = b""
                if chunk:
                    key.data.extend(chunk)
                    continue
                data = bytes(key.data)
                got["429" if data.startswith(b"HTTP/1.1 429") else "closed" if not data else "other"] += 1
                sel.unregister(key.fileobj)
        got["open"] = len(sel.get_map())
    return got


class _Conn:
    """What the guard uses of a connection: its transport and whether a request is being served."""

    def __init__(self, busy: bool) -> None:
        self.closed = False
        self.response_complete = not busy

    def close(self) -> None:
        self.closed = True


async def test_over_its_share_a_token_loses_an_idle_connection_before_a_request_is_refused() -> None:
    from mcpctl.gateway import http_guard as gg
    from mcpctl.gateway.http import BearerAuth, HttpLimits

    limits = HttpLimits(max_connections_per_credential=2)
    guard = gg.Guard(BearerAuth(None, "tok"), limits, 32, gg.Refusals(limits, 32))  # type: ignore[arg-type]

    def connect(busy: bool) -> Any:
        conn = object.__new__(gg.GuardedH11Protocol)
        conn.guard, conn.cycle = guard, _Conn(busy)
        conn.transport = conn.cycle  # type: ignore[assignment]
        conn.authenticated, conn._counted, conn._head_timer, conn._body_timer = True, True, None, None
        conn.credential = None
        guard.open += 1
        return conn

    try:
        a1, a2, a3, a4, b1 = connect(True), connect(False), connect(True), connect(True), connect(True)
        assert guard.admit(a1, "a") is None and guard.admit(a2, "a") is None
        assert guard.admit(a3, "a") is None and a2.transport.closed       # the idle one made room
        refused = guard.admit(a4, "a")                                     # all busy: this request is refused
        assert refused is not None and not a4.transport.closed and a4.credential is None
        assert "token 'a' already holds 2 busy connections" in refused and "--max-connections-per-credential" in refused
        assert guard.admit(b1, "b") is None                                # another token has its own share
        assert guard.admit(a1, "") is None and guard.shares.count("a") == 1  # a new token on a kept-alive connection
        a3.cycle.response_complete = True
        assert guard.make_room() and a3.transport.closed                   # at the cap: an idle one of the largest
        assert not guard.make_room()                                       # nothing idle, nothing unauthenticated
        assert guard.open == 3 and {k: len(v) for k, v in guard.shares.held.items()} == {"b": 1, "": 1}
    finally:
        guard.refusals.flush()


async def test_past_the_pool_and_the_reserve_the_cap_takes_from_the_token_holding_most() -> None:
    """512 connections: three tokens fill the tokens' pool (3 x 128 busy), sixteen late ones take the
    reserve at their floor (16 x 8); the next request of a token over its floor is refused, yet at
    the cap a new connection closes the oldest of the token holding most, not itself."""
    from mcpctl.gateway import http_guard as gg
    from mcpctl.gateway.http import BearerAuth, HttpLimits

    limits = HttpLimits()
    guard = gg.Guard(BearerAuth(None, "tok"), limits, 512, gg.Refusals(limits, 512))  # type: ignore[arg-type]

    def connect() -> Any:
        conn = object.__new__(gg.GuardedH11Protocol)
        conn.guard, conn.cycle = guard, _Conn(True)
        conn.transport = conn.cycle  # type: ignore[assignment]
        conn.authenticated, conn._counted, conn._head_timer, conn._body_timer = True, True, None, None
        conn.credential = None
        guard.open += 1
        return conn

    try:
        first = {}
        for tok in ("a", "b", "c"):
            for i in range(128):
                conn = connect()
                first.setdefault(tok, conn)
                assert guard.admit(conn, tok) is None, (tok, i)
        assert guard.shares.restricted == 384
        late = [f"late{i}" for i in range(16)]
        for tok in late:
            for _ in range(8):
                assert guard.admit(connect(), tok) is None
        refused = guard.admit(connect(), late[0])
        assert refused is not None and "tokens together hold 512 busy connections" in refused, refused
        guard.open -= 1
        assert guard.open == 512 and guard.admit(connect(), "") is None      # the project's token: always
        assert guard.make_room() and first["a"].transport.closed             # the cap: the oldest of the largest
        assert guard.shares.count("a") == 127
    finally:
        guard.refusals.flush()


async def test_partial_bodies_of_one_token_hold_only_its_share_of_connections(kit: Kit) -> None:
    """300 connections of one token that send a request head and 5 bytes of body: past its share
    (20) its requests are answered 429, the 20 it holds are closed at the body timeout, and the
    project's token is served meanwhile (before: every connection was held, the cap filled, and
    every other request was reset)."""
    kit.server("good")
    kit.project("p", ["good"], profiles=PROFILES)
    narrow = _token("narrow", "narrow")
    share, body_timeout, count = 20, 3.0, 300
    with http_gateway_process(kit, "p", "--max-connections", "64", "--max-connections-per-credential", str(share),
                              "--body-timeout", str(body_timeout)) as gw:
        async with _other_credential(gw) as (probe, bound):
            flood: list[socket.socket] = []
            stop = threading.Event()

            def flooding() -> None:
                while len(flood) < count and not stop.is_set():
                    flood.append(_partial_body(gw.port, narrow))

            try:
                thread = threading.Thread(target=flooding)
                thread.start()
                during = [await probe()]                        # while the flood connects ...
                await anyio.to_thread.run_sync(thread.join, 30)
                assert len(flood) == count
                during += [await probe() for _ in range(2)]     # ... and while it is held
                assert max(during) < bound, (during, bound)
                ended = await anyio.to_thread.run_sync(_outcomes, flood, body_timeout + 5 * SLACK)
            finally:
                stop.set()
                for s in flood:
                    s.close()
            assert ended["open"] == 0 and ended["other"] == 0, ended
            assert ended["429"] >= count - 64 - share, ended
            # A connection that drops mid-body costs a summary count, not a traceback.
            dropped = _partial_body(gw.port, narrow)
            await probe()
            dropped.close()
            assert await probe() < bound
        await _logged(gw, r"\d+ requests over a credential's 20 busy connections \(429\)")
        await _logged(gw, r"\d+ no complete request body within 3 s")


async def test_handshake_sessions_of_one_token_fill_only_its_share(kit: Kit) -> None:
    """40 `initialize` sessions of one token, never used again: past its share (10) it is told 429
    naming the limit, and the project's token still opens sessions and is served (before: the
    token filled the session cap and every new session of anyone got 503)."""
    import httpx2

    kit.server("good")
    kit.project("p", ["good"], profiles=PROFILES)
    narrow = _token("narrow", "narrow")
    share, cap, count = 10, 30, 40
    with http_gateway_process(kit, "p", "--max-sessions", str(cap), "--max-sessions-per-credential", str(share)) as gw:
        async with _other_credential(gw) as (probe, bound):
            with anyio.fail_after(30 * SLACK):
                statuses, _ = await _open_sessions(gw.url, narrow, count, in_flight=8)
            assert statuses == {200: share, 429: count - share}, statuses
            assert await probe() < bound
            with anyio.fail_after(30 * SLACK):
                assert (await _open_sessions(gw.url, gw.token, 5))[0] == {200: 5}
            async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
                r = await h.post(gw.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {narrow}"})
            assert r.status_code == 429
            assert "token 'narrow' already holds 10 open sessions" in r.json()["error"]["message"], r.text
            assert "--max-sessions-per-credential" in r.json()["error"]["message"], r.text
        await _logged(gw, r"\d+ new sessions over a credential's 10 \(429\)")


async def test_parked_calls_of_one_token_fill_only_its_share(kit: Kit) -> None:
    """A 2026 client of one token parks calls on input until its share (10) is full: the next is a
    JSON-RPC error naming the limit, while the project's token is served and can still park (and
    resume) a call of its own on the same upstream (before: one token filled the gateway's table
    of 1,024, and nobody else's call could ask its client anything)."""
    import httpx2

    share, extra = 10, 5
    answer = {"r1": {"action": "accept", "content": {"name": "x"}}}
    with http_upstream(kit, "good", "--ask-tools"):
        kit.project("p", ["good"], profiles=PROFILES)
        narrow = _token("narrow", "narrow")
        with http_gateway_process(kit, "p", "--max-parked-per-credential", str(share)) as gw:
            async with httpx2.AsyncClient(timeout=30 * SLACK) as h, _other_credential(gw) as (probe, bound):
                flooder, mine = Modern(h, gw.url, narrow, "flooder"), Modern(h, gw.url, gw.token, "mine")
                with anyio.fail_after(60 * SLACK):
                    results = [await flooder.call("good__elicit") for _ in range(share + extra)]
                kinds = ["parked" if r.get("result", {}).get("resultType") == "input_required" else
                         "refused" if "error" in r else repr(r) for r in results]
                assert kinds == ["parked"] * share + ["refused"] * extra, kinds
                message = results[-1]["error"]["message"]
                assert "token 'narrow' already holds 10 calls waiting for input" in message, message
                assert "--max-parked-per-credential" in message, message
                assert await probe() < bound
                with anyio.fail_after(30 * SLACK):
                    parked = await mine.call("good__elicit")
                    assert parked["result"]["resultType"] == "input_required", parked
                    done = await mine.call("good__elicit", requestState=parked["result"]["requestState"],
                                           inputResponses=answer)
                assert done["result"]["content"][0]["text"] == "elicited: accept {'name': 'x'}", done
            _no_traceback(gw)


def test_the_tokens_share_a_pool_and_the_reserve_serves_whoever_holds_least() -> None:
    """Three quarters of a cap for the restricted tokens together, the rest for the project's token
    and tokens holding fewer than the floor; what the cap may take back comes from the token holding
    most, and only while it holds more than the floor and more than the newcomer."""
    from mcpctl.resources.shares import Share

    share: Share[int] = Share(100, "things", "--max-things-per-credential", 64, "--max-things")
    assert (share.pool, share.reserve, share.floor) == (48, 16, 1)
    for i in range(48):
        assert share.refusal("a" if i < 40 else "b") is None
        share.add("a" if i < 40 else "b", i)
    refused = share.refusal("a")
    assert refused is not None and "tokens together hold 48 things" in refused and "--max-things 64" in refused
    assert share.refusal("c") is None and share.refusal("") is None     # holding nothing, or the project's
    share.add("c", 100)
    assert share.refusal("c") is not None                                # its floor taken from the reserve
    assert share.refusal("") is None and share.refusal(None) is None
    assert list(share.over_floor("d"))[:2] == [0, 1]                     # the oldest of the one holding most
    assert list(share.over_floor("a")) == [] and share.restricted == 49
    for i in range(48):
        share.discard("a" if i < 40 else "b", i)
    assert share.restricted == 1 and share.refusal("a") is None


async def test_at_the_session_cap_the_token_holding_most_gives_one_up_for_a_newcomer(kit: Kit) -> None:
    """--max-sessions 8: one token fills the tokens' pool (6), two more take the reserve (2); a
    fourth token holding nothing still opens a session (the first token's oldest is ended: its id
    answers 404), where before it was refused 503."""
    import httpx2

    kit.server("good")
    kit.project("p", ["good"], profiles=PROFILES)
    tokens = [_token(f"t{i}", "narrow") for i in range(4)]
    with http_gateway_process(kit, "p", "--max-sessions", "8", "--max-sessions-per-credential", "8") as gw:
        with anyio.fail_after(30):
            statuses, ids = await _open_sessions(gw.url, tokens[0], 8, in_flight=1)
            assert statuses == {200: 6, 429: 2}, statuses
            for tok in tokens[1:3]:
                assert (await _open_sessions(gw.url, tok, 1))[0] == {200: 1}
            assert (await _open_sessions(gw.url, tokens[3], 1))[0] == {200: 1}
            async with httpx2.AsyncClient(timeout=10) as h:
                r = await h.post(gw.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={
                    **HEADERS, "Authorization": f"Bearer {tokens[0]}", "Mcp-Session-Id": ids[0],
                    "Mcp-Protocol-Version": "2025-11-25"})
            assert r.status_code == 404, r.text
        await _logged(gw, r"1 sessions of the token holding most ended for a new one at --max-sessions")
