"""What upstreams ask of clients: sampling, elicitation and roots, carried to the right client.

**Which call a request belongs to.** An upstream's `sampling/createMessage`, `elicitation/create`
or `roots/list` (and its log messages) must reach the client whose call caused it, never another.
JSON-RPC does not say which request a server-to-client request belongs to, so:

- **streamable-HTTP upstreams**: a server that relates its request to the call (as the SDKs do:
  `related_request_id`) sends it on that call's own response stream, and the SDK's client runs
  its handler in the contextvars of the task that sent the call (`sdk.py`). The relay sets
  `CURRENT_CALL` before it sends, so the handler finds the exact call, however many clients are
  calling at once. What such an upstream sends on its standalone (GET) stream belongs to no call.
- **stdio upstreams**: the wire carries no association. The relay keeps the calls in flight per upstream; a request goes to
  the client of those calls when they all belong to one client session (always so over the stdio
  front), and is refused otherwise (the upstream gets an error, and the gateway's log says why).
  A call whose upstream is waiting for its client's answer (a 2026 client's parked call, or a
  handshake-era client slow to answer) is not counted: a tool handler asks one thing at a time
  and waits for it (as the SDKs' `create_message` and `elicit` do), so it cannot be the sender of
  a new request, and another credential's hundreds of parked calls do not take the asking away
  from a call of someone else. An upstream seen asking a second thing while its only calls in
  flight were all waiting (a handler that asks concurrently) loses that exception for good
  (`concurrent`). Two clients whose calls to one stdio upstream are both running at once still
  cannot be asked during those calls; they never see each other's requests.

**What goes to the client.** Only what it declared (`sampling`, `sampling.tools` for tool use,
`elicitation.form` / `.url`, `roots`); otherwise the upstream gets the protocol's error
(`INVALID_REQUEST`, "<feature> not supported", as the SDK's own client answers). The client's
answer (or error) goes back to the upstream's request unchanged.

**2026-07-28 clients** cannot be sent requests: for them a call whose upstream asks something is
answered with an input-required result (`resultType: input_required`, the requests under
`inputRequests`, an opaque `requestState`), while the upstream's call stays open; the client's retry
of the same call with `inputResponses` and that `requestState` answers the upstream's requests, and
the call goes on (more rounds, or its result). A parked call the client does not resume within the
server's call timeout is cancelled. The state is bound to the session that got it; its retry
repeated (a proxy's, the answer lost) gets the same answer for `RESUMED_KEPT`. An upstream that
speaks 2026-07-28 itself answers with input-required results: those are passed through to 2026
clients as they are (their retries reach the upstream with their `inputResponses` and
`requestState`), and resolved for handshake-era clients by asking them (up to `MAX_ROUNDS` rounds).

**Roots outside a call** (an upstream listing roots on its own): over stdio the one client; over
HTTP the handshake-era session that made a request most recently among those that declared roots
(`Sessions.roots_peer`); only a session whose view includes that upstream (`Surfaces.may_use`: a
credential never hears from a server it may not use); none: the protocol's error.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as t
from mcp import MCPError
from mcp.types.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl.gateway.peers import declares, feature
from mcpctl.gateway.sessions import Caller, Progress
from mcpctl.resources.shares import Share

if TYPE_CHECKING:
    from mcpctl.gateway.pool import Pool
    from mcpctl.gateway.views import Views

log = logging.getLogger("mcpctl.gateway")

MAX_ROUNDS: Final = 8                 # input-required rounds resolved for a handshake-era client
STATE_PREFIX: Final = "mcpctl:"       # requestState the gateway itself issued (a parked call)
MAX_PARKED: Final = 1024
RESUMED_KEPT: Final = 30.0      # seconds a resumed call's answer is kept for a repeat of its retry
DRAIN_S: Final = 1.0                  # how long a result waits for its call's notifications in flight
REQUESTS: Final[dict[str, Any]] = {"sampling/createMessage": t.CreateMessageRequest, "elicitation/create": t.ElicitRequest,
                   "roots/list": t.ListRootsRequest}


@dataclass(eq=False, slots=True)
class Relayed:
    """One request relayed to an upstream, in flight."""

    caller: Caller
    server: str
    deliveries: int = 0                       # notifications of this call being delivered
    idle: anyio.Event | None = None
    bridge: Bridge | None = None              # a 2026 caller: what the upstream asks, parked
    tool: tuple[str, str] | None = None       # a tools/call: (the name the caller used, canonical id)
    asking: int = 0                           # the upstream's requests of this call awaiting the client

    def delivering(self) -> None:
        self.deliveries += 1

    def delivered(self) -> None:
        self.deliveries -= 1
        if self.deliveries <= 0 and self.idle is not None:
            self.idle.set()

    async def drain(self) -> None:
        """Let the call's notifications already on their way reach the client before its result."""
        if self.deliveries > 0:
            self.idle = anyio.Event()
            with anyio.move_on_after(DRAIN_S):
                await self.idle.wait()


Send = Callable[[], Coroutine[Any, Any, dict[str, Any]]]
CURRENT_CALL: contextvars.ContextVar[Relayed | None] = contextvars.ContextVar("mcpctl_relayed", default=None)
AMBIGUOUS: Final = object()


def counted(progress: Progress) -> Progress:
    """`progress` as a delivery of the call in flight (`CURRENT_CALL`, set around `send`), so that
    the call's result waits for it (`Relayed.drain`). The SDK (and the raw stdio channel) runs an
    upstream's progress callback as its own task, started before the upstream's result is handed
    back: counting on that task's first step, before any await, is in time.

    Progress goes to the request the call currently rides: a 2026 client's parked call is resumed
    by a new request (`Asks.resume` sets `call.caller`), and the first request is over by then, so
    its token is no longer the client's; with no token on the resuming request, nothing is sent."""
    call = CURRENT_CALL.get()
    if call is None:
        return progress

    async def report(value: float, total: float | None, message: str | None) -> None:
        target = call.caller.progress
        if target is None:
            return
        call.delivering()
        try:
            await target(value, total, message)
        finally:
            call.delivered()

    return report


@dataclass(eq=False)
class Bridge:
    """A 2026 caller's call to a handshake-era upstream: the upstream's requests wait here for the
    client's `inputResponses`."""

    pending: dict[str, tuple[Any, asyncio.Future[dict[str, Any]]]] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)     # keys already sent to the client
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    n: int = 0
    given: dict[str, Any] = field(default_factory=dict)    # a restarted call's answers, by key

    async def ask(self, request: Any) -> dict[str, Any]:
        self.n += 1
        key = f"r{self.n}"
        given = self.given.pop(key, None)
        if isinstance(given, dict):
            return given
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[key] = (request, fut)
        self.changed.set()
        try:
            return await fut
        finally:
            self.pending.pop(key, None)
            self.shown.discard(key)

    def answer(self, responses: dict[str, Any]) -> None:
        for key, value in responses.items():
            entry = self.pending.get(key)
            if entry is not None and not entry[1].done() and isinstance(value, dict):
                entry[1].set_result(value)

    def cancel(self) -> None:
        for _, fut in self.pending.values():
            if not fut.done():
                fut.set_exception(MCPError(code=INVALID_REQUEST, message="the client did not answer"))


@dataclass(eq=False)
class Parked:
    """A 2026 caller's call waiting for its input; resumed only by the session and credential that
    got its `requestState`, under the same tool (`Router._resume` checks the name)."""

    task: asyncio.Task[dict[str, Any]]
    call: Relayed
    session_id: str
    expires: float
    credential: str | None = None
    answer: asyncio.Task[dict[str, Any]] | None = None     # its resumption, once retried


class Asks:
    """Routes upstreams' requests to clients, and keeps the calls in flight that they may belong to."""

    def __init__(self, pool: Pool, views: Views) -> None:
        self.pool = pool
        self.views = views
        self.inflight: dict[str, list[Relayed]] = {}
        self.concurrent: set[str] = set()     # stdio upstreams seen asking while their calls all waited
        self.parked: dict[str, Parked] = {}
        self.resumed: dict[str, Parked] = {}    # kept a while: a retry repeated gets the same answer
        self.tag = ""           # this replica's id and a dot, in each requestState (`cluster.join`)
        # each credential's parked calls (`serve --max-parked-per-credential` sets the limit)
        self.shares: Share[str] = Share(MAX_PARKED, "calls waiting for input", "--max-parked-per-credential",
                                        MAX_PARKED, "(the parked calls' table)")

    # -- calls in flight ---------------------------------------------------------------------------

    def begin(self, caller: Caller, server: str) -> tuple[Relayed, contextvars.Token[Relayed | None]]:
        call = Relayed(caller, server)
        self.inflight.setdefault(server, []).append(call)
        return call, CURRENT_CALL.set(call)

    def end(self, call: Relayed, token: contextvars.Token[Relayed | None]) -> None:
        CURRENT_CALL.reset(token)
        calls = self.inflight.get(call.server)
        if calls is not None:
            calls.remove(call)

    def find(self, server: str, *, request: bool = False) -> Any:
        """The call an upstream's message belongs to: a `Relayed`, None (outside any call) or
        AMBIGUOUS (calls of several sessions in flight, no association on the wire). `request`:
        the message is a request of the upstream (what tells a concurrent asker)."""
        call = CURRENT_CALL.get()
        if call is not None and call.server == server:
            return call
        up = self.pool.get(server)
        if up is not None and up.spec.transport == "http":
            return None          # not on a call's response stream: its standalone stream
        calls = self.inflight.get(server)
        if not calls:
            return None
        running = [c for c in calls if not c.asking]
        if request and not running and len({c.caller.session_id for c in calls}) == 1:
            self.concurrent.add(server)         # one session's calls all waited, and it asked again
        if running and server not in self.concurrent:
            calls = running
        sid = calls[-1].caller.session_id
        if all(c.caller.session_id == sid for c in calls):
            return calls[-1]
        return AMBIGUOUS

    async def relay(self, caller: Caller, server: str, send: Send, *,
                    tool: tuple[str, str] | None = None) -> dict[str, Any]:
        """Run one relayed request (`send`) as a call in flight of `caller` on `server`; `tool`:
        a tools/call's (presented name, canonical id), kept with the call if it parks."""
        call, token = self.begin(caller, server)
        call.tool = tool
        if caller.peer is not None and caller.peer.modern and self._may_ask(caller.peer, server):
            try:
                return await self._bridged(call, send)
            finally:
                CURRENT_CALL.reset(token)       # the call leaves the in-flight list when its task ends
        try:
            result = await send()
            if call.deliveries:
                await call.drain()
            return result
        finally:
            self.end(call, token)

    def _may_ask(self, peer: Any, server: str) -> bool:
        """Whether a 2026 caller's call may need input the upstream asks for: the upstream speaks
        the handshake era (a 2026 one answers input-required results itself) and the client
        declared something it could be asked."""
        up = self.pool.get(server)
        if up is None or up.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return False
        caps = peer.capabilities
        return bool(caps) and any(k in caps for k in ("sampling", "elicitation", "roots"))

    # -- the upstream side: its requests ----------------------------------------------------------------

    def hooks(self, server: str) -> dict[str, Any]:
        """The client callbacks an upstream's connection gets (`mcp.Client` keyword arguments)."""

        async def sampling(ctx: Any, params: t.CreateMessageRequestParams) -> Any:
            return await self.ask(server, t.CreateMessageRequest(params=params))

        async def elicitation(ctx: Any, params: Any) -> Any:
            return await self.ask(server, t.ElicitRequest(params=params))

        async def roots(ctx: Any) -> Any:
            return await self.ask(server, t.ListRootsRequest())

        # (the capabilities they stand for are declared in upstream_client.client_options)
        return {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": roots}

    async def ask(self, server: str, request: Any) -> Any:
        """One request of upstream `server`: the client's typed answer, or the error for it."""
        method = request.method
        call = self.find(server, request=True)
        if call is AMBIGUOUS:
            log.warning("upstream %s sent %s while clients of several sessions were calling it, over a "
                        "connection that does not say which call it belongs to: refused", server, method)
            return t.ErrorData(code=INVALID_REQUEST, message=(
                f"{method} refused by mcpctl: several clients are calling {server!r} at once and the "
                "request does not say whose call it belongs to"))
        if call is None:
            peer = self.views.sessions.roots_peer(
                lambda sid, profile: self.views.may_use(sid, profile, server)) if method == "roots/list" else None
            if peer is None:
                what = "no connected client whose view includes this server offers roots" \
                    if method == "roots/list" else "outside a call"
                return t.ErrorData(code=INVALID_REQUEST, message=f"{feature(request)} not supported ({what})")
            bridge = None
        else:
            peer, bridge = call.caller.peer, call.bridge
            if peer is None:
                return t.ErrorData(code=INVALID_REQUEST, message=f"{feature(request)} not supported")
        if not declares(peer.capabilities, request):
            return t.ErrorData(code=INVALID_REQUEST, message=f"{feature(request)} not supported by the client")
        up = self.pool.get(server)
        timeout = up.spec.timeouts.call if up is not None else None
        if call is not None:
            call.asking += 1
        try:
            if bridge is not None:
                raw = await bridge.ask(request)
            elif peer.modern:
                return t.ErrorData(code=INVALID_REQUEST, message=f"{feature(request)} not supported outside a call "
                                   "by a 2026-07-28 client")
            else:
                raw = await peer.request(request, timeout)
            return _typed_result(request, raw)
        except MCPError as e:
            return e.error
        except Exception as e:
            log.warning("relaying %s from %s to the client failed: %s", method, server, e)
            return t.ErrorData(code=INTERNAL_ERROR, message=f"mcpctl could not relay {method}: {e}")
        finally:
            if call is not None:
                call.asking -= 1

    # -- 2026 clients: input-required results --------------------------------------------------------

    async def _bridged(self, call: Relayed, send: Send) -> dict[str, Any]:
        call.bridge = Bridge(given=dict(call.caller.answers or {}))
        task = asyncio.get_running_loop().create_task(send(), context=contextvars.copy_context())
        task.add_done_callback(lambda _t: self._forget(call))
        return await self._wait(call, task)

    def _forget(self, call: Relayed) -> None:
        calls = self.inflight.get(call.server)
        if calls is not None and call in calls:
            calls.remove(call)

    async def _wait(self, call: Relayed, task: asyncio.Task[dict[str, Any]]) -> dict[str, Any]:
        bridge = call.bridge
        assert bridge is not None
        try:
            while True:
                bridge.changed.clear()
                # an answered request leaves `pending` only when its `ask` resumes: not asked again
                fresh = {k: req for k, (req, fut) in bridge.pending.items()
                         if k not in bridge.shown and not fut.done()}
                if fresh:
                    return self._park(call, task, bridge, fresh)
                changed = asyncio.ensure_future(bridge.changed.wait())
                try:
                    await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    changed.cancel()
                if task.done():
                    result = task.result()
                    if call.deliveries:
                        await call.drain()
                    return result
        except BaseException:
            if not task.done() and not any(p.task is task for p in self.parked.values()):
                bridge.cancel()         # the upstream's requests get an error, not a wait forever
                task.cancel()
            raise

    def _park(self, call: Relayed, task: asyncio.Task[dict[str, Any]], bridge: Bridge,
              fresh: dict[str, Any]) -> dict[str, Any]:
        self._expire()
        credential = call.caller.credential
        refused = self.shares.refusal(credential)
        if refused is not None:
            raise MCPError(code=INVALID_REQUEST, message=refused + ": answer or abandon some first (each "
                           "expires after the server's call timeout)")
        if len(self.parked) >= MAX_PARKED:     # the credential holding most loses its oldest
            for oldest in self.shares.largest():
                self._unpark(oldest, cancel=True)
                break
        up = self.pool.get(call.server)
        ttl = up.spec.timeouts.call if up is not None else 120.0
        state = self.tag + secrets.token_urlsafe(18)
        self.parked[state] = Parked(task, call, call.caller.session_id, time.monotonic() + ttl, credential)
        self.shares.add(credential, state)
        bridge.shown.update(fresh)
        loop = asyncio.get_running_loop()
        loop.call_later(ttl + 0.5, self._expire)
        requests = {k: req.model_dump(by_alias=True, mode="json", exclude_none=True) for k, req in fresh.items()}
        return {"resultType": "input_required", "inputRequests": requests, "requestState": STATE_PREFIX + state}

    def owns(self, params: dict[str, Any]) -> bool:
        state = params.get("requestState")
        return isinstance(state, str) and state.startswith(STATE_PREFIX)

    def orphan(self, params: dict[str, Any]) -> bool:
        """A retry whose call was parked by a replica that is gone (forwarded otherwise), or whose
        resumption here was cancelled with its request (the answer's way lost): restarted."""
        state = str(params.get("requestState"))[len(STATE_PREFIX):]
        again = self.resumed.get(state)
        if again is not None and again.answer is not None:
            return again.answer.cancelled()
        return "." in state and not state.startswith(self.tag) and state not in self.parked

    def parked_call(self, caller: Caller, params: dict[str, Any]) -> tuple[str, Parked]:
        """The parked call a retry's `requestState` names, if it is `caller`'s own (same session,
        same credential); else the protocol's error."""
        state = str(params.get("requestState"))[len(STATE_PREFIX):]
        parked = self.parked.get(state) or self.resumed.get(state)
        if parked is None or parked.session_id != caller.session_id or parked.credential != caller.credential:
            raise MCPError(code=INVALID_REQUEST, message="unknown or expired requestState (the call was "
                           "cancelled, or belongs to another session): call the tool again")
        return state, parked

    async def resume(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        """A 2026 client's retry of a parked call: answer the upstream's requests, go on waiting."""
        state, parked = self.parked_call(caller, params)
        if parked.answer is not None:     # the same retry again (a proxy's, the first answer lost)
            return await asyncio.shield(parked.answer)
        self._unpark(state)
        bridge = parked.call.bridge
        assert bridge is not None
        responses = params.get("inputResponses")
        bridge.answer(responses if isinstance(responses, dict) else {})
        bridge.shown.clear()          # what is still unanswered is asked again
        parked.call.caller = caller   # its log messages now ride this request
        parked.answer = asyncio.ensure_future(self._wait(parked.call, parked.task))
        parked.expires = float("inf")         # kept while it runs, and RESUMED_KEPT after its answer
        parked.answer.add_done_callback(lambda _a: setattr(parked, "expires", time.monotonic() + RESUMED_KEPT))
        self.resumed[state] = parked
        if len(self.resumed) > MAX_PARKED // 4:     # the oldest first (each may hold a large result)
            del self.resumed[next(iter(self.resumed))]
        return await parked.answer      # cancelled with this request: so is the resumption

    def _expire(self) -> None:
        now = time.monotonic()
        for state, p in list(self.parked.items()):
            if p.expires <= now:      # a call that ended meanwhile is kept: its retry gets the result
                self._unpark(state, cancel=True)
        for state, p in list(self.resumed.items()):
            if p.expires <= now:
                del self.resumed[state]

    def _unpark(self, state: str, cancel: bool = False) -> None:
        p = self.parked.pop(state)
        self.shares.discard(p.credential, state)
        if cancel:
            if p.call.bridge is not None:
                p.call.bridge.cancel()
            p.task.cancel()

    async def resolve(self, caller: Caller, result: dict[str, Any],
                      retry: Callable[[dict[str, Any], str | None], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """An upstream's own input-required result for a handshake-era client: ask the client
        each request, retry with its answers (at most MAX_ROUNDS rounds)."""
        peer = caller.peer
        for _ in range(MAX_ROUNDS):
            if result.get("resultType") != "input_required":
                return result
            if peer is None or peer.modern:
                return result
            answers: dict[str, Any] = {}
            for key, raw in (result.get("inputRequests") or {}).items():
                request = _typed_request(raw)
                if request is None or not declares(peer.capabilities, request):
                    raise MCPError(code=INVALID_REQUEST, message=(
                        f"the upstream needs {raw.get('method') if isinstance(raw, dict) else raw!r} from the "
                        "client, which it did not declare"))
                answers[key] = await peer.request(request, None)
            state = result.get("requestState")
            result = await retry(answers, state if isinstance(state, str) else None)
        return result


def _typed_request(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return None
    cls = REQUESTS.get(str(raw.get("method")))
    if cls is None:
        return None
    try:
        return cls.model_validate(raw, by_name=False)
    except Exception:
        return None


def _typed_result(request: Any, raw: dict[str, Any]) -> Any:
    if isinstance(request, t.CreateMessageRequest):
        if isinstance(raw.get("content"), list):
            return t.CreateMessageResultWithTools.model_validate(raw, by_name=False)
        return t.CreateMessageResult.model_validate(raw, by_name=False)
    if isinstance(request, t.ElicitRequest):
        return t.ElicitResult.model_validate(raw, by_name=False)
    return t.ListRootsResult.model_validate(raw, by_name=False)
