"""Shares that cannot add up to the whole: eight restricted tokens flood the real HTTP front with
its default limits (`mcpctl serve --transport http`, nothing lowered), first with connections that
never finish their bodies, then with sessions, then with calls parked for input on a stdio
upstream, while the project's token and a token never used before are each answered within a
second throughout (before: four tokens at their default shares filled every cap, so the fifth
credential, the project's own included, was reset, refused 503, or lost its elicitation).

Each probe is a handshake-era SDK client of its token over new TCP connections (as a client meets
a flood), timed request by request; the unused token opens its first session during the flood."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import SLACK, Kit, text_of, wait_tools
from test_credential_floods import PROFILES, Modern, _partial_body, _token
from test_http_sessions import _open_sessions
from test_serve_http import HttpGateway, http_client, http_gateway_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.stress,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

TOKENS = 8                   # restricted tokens flooding at once
CONNECTIONS = 160            # each token's connections held open (its share is 128)
SESSIONS = 80                # each token's sessions asked for (its share is 64)
PARKED = 110                 # each token's calls parked (its share is 256; the tokens' pool 768)
BOUND = 1.0                  # seconds: every request of the project's token and the unused token


async def _elicited(ctx: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "probe"})


class Probe:
    """One credential's client, each request timed with the slack of its own moment (the load
    beside it, read as it starts and as it ends: the flood's worst minute may be long gone when the
    test ends); the request furthest over its bound is `worst`."""

    def __init__(self, gw: HttpGateway, token: str, name: str) -> None:
        self.gw, self.token, self.name = gw, token, name
        self.times: list[tuple[str, float, float]] = []      # (request, seconds, slack then)

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Any]:
        import httpx2

        fresh = {"limits": httpx2.Limits(max_connections=4, max_keepalive_connections=0)}
        started = time.monotonic()
        async with http_client(self.gw.url, self.token, "legacy", name=self.name, http=fresh,
                               elicitation_callback=_elicited) as c:
            self.times.append(("initialize", time.monotonic() - started, float(SLACK)))
            yield c

    async def timed(self, what: str, request: Callable[[], Awaitable[Any]]) -> Any:
        started, slack = time.monotonic(), float(SLACK)
        with anyio.fail_after(30):
            got = await request()
        self.times.append((what, time.monotonic() - started, max(slack, float(SLACK))))
        return got

    async def round(self, c: Any, elicit: bool = False) -> None:
        await self.timed("ping", c.send_ping)
        listed = await self.timed("tools/list", c.list_tools)
        assert "good__echo" in {tool.name for tool in listed.tools}
        r = await self.timed("call", lambda: c.call_tool("good__echo", {"text": "served"}))
        assert text_of(r) == "served", text_of(r)
        if elicit:
            r = await self.timed("elicit", lambda: c.call_tool("good__elicit", {}))
            assert text_of(r) == "elicited: accept {'name': 'probe'}", text_of(r)

    @property
    def worst(self) -> tuple[str, float, float]:
        """(request, seconds, the bound's slack) of the request furthest over BOUND times its slack."""
        return max(self.times, key=lambda x: x[1] / x[2])


async def _throughout(probes: list[tuple[Probe, Any]], flooding: Callable[[], bool], elicit: bool = False,
                      rounds: int = 3) -> None:
    """Probe rounds from each credential while `flooding()` holds (at least `rounds`; at most 2,000
    rounds or 240 s, however slow a loaded machine makes the flood: then the test fails)."""
    deadline = time.monotonic() + 240
    for n in range(2000):
        for probe, c in probes:
            await probe.round(c, elicit)
        if n + 1 >= rounds and not flooding():
            return
        assert time.monotonic() < deadline, "the flood did not end within 240 s"
        await anyio.sleep(0.1)
    raise AssertionError("the flood did not end within 2,000 probe rounds")


def text_of_result(r: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in r.get("result", {}).get("content") or [])


class ConnectionFlood:
    """`per_token` connections of each token, each a request head and 5 bytes of its body (the rest
    never comes), kept open: one refused or closed is opened again (at most `rate` a second)."""

    def __init__(self, port: int, tokens: list[str], per_token: int, rate: float = 2000.0) -> None:
        self.port, self.tokens, self.per_token, self.gap = port, tokens, per_token, 1.0 / rate
        self.stop = threading.Event()
        self.outcomes = {"429": 0, "closed": 0}
        self.opened = 0
        self.held: dict[socket.socket, str] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _top_up(self) -> None:
        counts = dict.fromkeys(self.tokens, 0)
        for tok in self.held.values():
            counts[tok] += 1
        for tok, n in counts.items():
            for _ in range(self.per_token - n):
                if self.stop.is_set():
                    return
                try:
                    s = _partial_body(self.port, tok)
                except OSError:
                    return
                s.setblocking(False)
                self.held[s] = tok
                self.sel.register(s, selectors.EVENT_READ, bytearray())
                self.opened += 1
                time.sleep(self.gap)

    def _run(self) -> None:
        with selectors.DefaultSelector() as self.sel:
            while not self.stop.is_set() and self.opened < 50_000:
                self._top_up()
                for key, _ in self.sel.select(0.05):
                    s: socket.socket = key.fileobj  # type: ignore[assignment]
                    try:
                        chunk = s.recv(65536)
                    except (ConnectionResetError, BlockingIOError):
                        chunk = b""
                    if chunk:
                        key.data.extend(chunk)
                        continue
                    self.outcomes["429" if bytes(key.data).startswith(b"HTTP/1.1 429") else "closed"] += 1
                    self.sel.unregister(s)
                    self.held.pop(s, None)
                    s.close()
            for s in list(self.held):
                s.close()

    def __enter__(self) -> ConnectionFlood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


async def test_eight_restricted_tokens_cannot_shut_out_the_project_token_nor_an_unused_one(kit: Kit) -> None:
    kit.server("good", "--ask-tools", call=120.0)
    kit.project("p", ["good"], profiles=PROFILES)
    flooders = [_token(f"flood{i}", "narrow") for i in range(TOKENS)]
    unused = [_token(f"unused{i}", "narrow") for i in range(3)]
    with http_gateway_process(kit, "p") as gw:
        mine = Probe(gw, gw.token, "project")
        async with mine.client() as own:
            await wait_tools(own, {"good__echo"})
            await mine.round(own, elicit=True)
            mine.times.clear()
            probes = [mine]

            # 1. connections: 8 x 160 request heads whose bodies never finish (the body timeout is 30 s)
            with ConnectionFlood(gw.port, flooders, CONNECTIONS) as flood:
                with anyio.fail_after(60):
                    while flood.outcomes["429"] < TOKENS * CONNECTIONS - 512:
                        await anyio.sleep(0.1)
                fresh = Probe(gw, unused[0], "unused-0")
                probes.append(fresh)
                async with fresh.client() as theirs:
                    await _throughout([(mine, own), (fresh, theirs)], lambda: False, rounds=5)
            assert flood.outcomes["429"] >= TOKENS * CONNECTIONS - 512, flood.outcomes

            # 2. sessions: 8 x 80 `initialize`, never used again (sessions idle out after 300 s)
            statuses: dict[int, int] = {}
            done = anyio.Event()

            async def open_all() -> None:
                async def one(tok: str) -> None:
                    got, _ = await _open_sessions(gw.url, tok, SESSIONS, in_flight=4)
                    for status, n in got.items():
                        statuses[status] = statuses.get(status, 0) + n

                async with anyio.create_task_group() as tg:
                    for tok in flooders:
                        tg.start_soon(one, tok)
                done.set()

            fresh = Probe(gw, unused[1], "unused-1")
            probes.append(fresh)
            async with anyio.create_task_group() as tg:
                tg.start_soon(open_all)
                await anyio.sleep(0.5)
                async with fresh.client() as theirs:
                    await _throughout([(mine, own), (fresh, theirs)], lambda: not done.is_set())
            assert 503 not in statuses and statuses.get(429, 0) > 0, statuses
            assert statuses[200] <= 256 - 64 + TOKENS * 4, statuses

            # 3. calls parked for input on the stdio upstream: 8 x 110, one token after another (the
            # tokens' pool is 768); then, all of them held, the probes' own calls are asked (elicit)
            import httpx2

            kinds = {"parked": 0, "pool": 0, "crossing": 0}
            done = anyio.Event()

            async def park_all() -> None:
                async with httpx2.AsyncClient(timeout=60) as h:
                    for i, tok in enumerate(flooders):
                        flooder = Modern(h, gw.url, tok, f"parker-{i}")
                        for _ in range(PARKED):
                            await park_one(flooder)
                done.set()

            async def park_one(flooder: Modern) -> None:
                """One call, parked or refused by the pool; a call refused because a probe's call was
                running on the stdio upstream meanwhile (the wire cannot say whose the upstream's ask
                is) is asked again, as its client would (at most 200 times)."""
                for _ in range(200):
                    r = await flooder.call("good__elicit")
                    message = r.get("error", {}).get("message", "") or text_of_result(r)
                    if r.get("result", {}).get("resultType") == "input_required":
                        kinds["parked"] += 1
                        return
                    if "the gateway's tokens together hold" in message:
                        kinds["pool"] += 1
                        return
                    assert "several clients are calling" in message, r
                    kinds["crossing"] += 1
                    await anyio.sleep(0.01)
                raise AssertionError(f"a flooder's call crossed a probe's 200 times: {kinds}")

            fresh = Probe(gw, unused[2], "unused-2")
            probes.append(fresh)
            async with anyio.create_task_group() as tg:
                tg.start_soon(park_all)
                await anyio.sleep(0.5)
                async with fresh.client() as theirs:
                    await _throughout([(mine, own), (fresh, theirs)], lambda: not done.is_set())
                    # every flooder's call parked or refused, none running: the probes' calls are
                    # asked (a call running beside another session's on a stdio upstream is not:
                    # the wire cannot say whose it is, the "crossing" above)
                    await _throughout([(mine, own), (fresh, theirs)], lambda: False, elicit=True)
            assert kinds["pool"] > 0 and 768 <= kinds["parked"] <= 768 + TOKENS * 16, kinds
    now = float(SLACK)
    worst = {p.name: p.worst for p in probes}
    assert all(seconds < BOUND * max(slack, now) for _, seconds, slack in worst.values()), (worst, BOUND, now)
    stderr = gw.stderr.read_text()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "requests over the tokens' three quarters of the connections (429)" in stderr, stderr[-3000:]
    assert "new sessions over the tokens' three quarters of the sessions (429)" in stderr, stderr[-3000:]
