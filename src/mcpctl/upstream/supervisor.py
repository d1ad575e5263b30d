"""Upstream connections: one supervised, long-lived MCP client per upstream server.

Each `Upstream` owns its `Client` from one supervisor task (anyio requires the task that
entered a client to exit it). The supervisor connects (within `timeouts.connect`), lists
everything (following `nextCursor`), reports the listing, then waits for the connection to
close or for a `list_changed` to re-list. A crash or failed connect is retried with capped
exponential backoff and at most `MAX_SPAWNS_PER_MINUTE` spawns a minute. Calls go out as raw
JSON-RPC over the live session (no result re-validation: the gateway relays the upstream's
JSON as it is), so one upstream's trouble never touches another's calls. The transport under
the client (the stdio process or the HTTP client, from the spec) comes from `upstream_transport`;
what goes wrong, and its one-line description, from `upstream_errors`.

A call that finds the upstream not up never waits longer than the current connect attempt: it
fails at once with the last error when the upstream is down or the last attempt failed (a
restart after a failure is under way), and otherwise waits for the attempt's outcome, at most
until its connect timeout (and the call timeout). `HUNG_AFTER_TIMEOUTS` call timeouts in a row,
with no answer in between, restart the upstream: a process that never answers is hung.

A remote server whose sign-in lapsed (`mcpctl.auth.expiry`: never signed in, or a renewal the
authorization server refused) is not retried with backoff: it is down with the `mcpctl login`
hint, every call to it answered with that hint, until its token file changes; then it connects
again at once.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import mcp.types as t
from mcp import Client, MCPError
from mcp.client.session import ClientSession
from mcp.types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl.auth import expiry
from mcpctl.resources.kinds import ServerSpec
from mcpctl.sdk import raw_request, stamp
from mcpctl.upstream.client import ERA, client_options
from mcpctl.upstream.errors import (
    ConfigError,
    UpstreamTimeout,
    UpstreamUnavailable,
    describe_error,
    leaves,
    refused_handshake,
)
from mcpctl.upstream.starts import Starts
from mcpctl.upstream.stdio import RawStdioChannel
from mcpctl.upstream.transport import open_transport, upstream_log_path

log = logging.getLogger("mcpctl.gateway")

MAX_SPAWNS_PER_MINUTE: Final = 5
BACKOFF_FIRST: Final = 0.5
BACKOFF_CAP: Final = 30.0
STABLE_AFTER: Final = 60.0          # a connection up this long resets the backoff
HUNG_AFTER_TIMEOUTS: Final = 3      # call timeouts in a row, no answer between: restart the upstream
MAX_PAGES: Final = 1000

SECTIONS: Final = (
    # (section, list method, result key, capability attribute)
    ("tools", "tools/list", "tools", "tools"),
    ("resources", "resources/list", "resources", "resources"),
    ("resourceTemplates", "resources/templates/list", "resourceTemplates", "resources"),
    ("prompts", "prompts/list", "prompts", "prompts"),
)
_REQUIRED_KEY: Final = {"tools": "name", "resources": "uri", "resourceTemplates": "uriTemplate",
                        "prompts": "name"}

# Not a list the server serves: its own name, title, description and instructions from the
# initialize/discover reply, kept with the listing (and the catalogue cache) for search_tools.
ABOUT_SECTION: Final = "about"


def server_about(info: t.Implementation | None, instructions: str | None) -> list[dict[str, Any]]:
    """The `about` section: [{name, title, description, instructions}] (the fields given), or []."""
    fields = {"name": getattr(info, "name", None), "title": getattr(info, "title", None),
              "description": getattr(info, "description", None), "instructions": instructions}
    about = {k: v.strip() for k, v in fields.items() if isinstance(v, str) and v.strip()}
    return [about] if about else []


Listing = dict[str, list[dict[str, Any]]]
OnListing = Callable[["Upstream", Listing], Awaitable[None]]
OnState = Callable[["Upstream"], None]
OnEvent = Callable[["Upstream", Any], Awaitable[None]]
OpenTransport = Callable[[ServerSpec, Callable[[], None]], contextlib.AbstractAsyncContextManager[tuple[Any, Any, Any]]]


@dataclass
class Upstream:
    """One upstream server: its supervisor, its live session and its last listing."""

    spec: ServerSpec
    on_listing: OnListing
    on_state: OnState
    state: str = "connecting"                     # connecting | up | down
    last_error: str | None = None
    fatal: bool = False                           # misconfigured: not retried
    protocol_version: str | None = None
    server_info: dict[str, Any] | None = None
    tool_count: int = 0
    capabilities: dict[str, Any] | None = None    # the server's, as it declared them (wire form)
    # The protocol era asked for: ERA ("legacy", the initialize handshake), the era in which an
    # upstream may ask the client things during a call (`asks`); a server that refuses the
    # handshake is then spoken to with "auto" (2026-07-28 server/discover).
    era: str = ERA
    # The gateway's client callbacks (sampling, roots, ...); with or without them, every
    # connection declares the same capabilities (`upstream_client.client_options`).
    client_kw: dict[str, Any] = field(default_factory=dict)
    on_event: OnEvent | None = None               # other notifications, and "up" after each connect
    # How the server is reached: (spec, on_eof) -> async context of (read, write, raw stdio channel).
    # Tests connect in-memory servers here.
    open_transport: OpenTransport = open_transport
    starts: Starts = field(default_factory=Starts)  # each attempt waits for a slot (the gateway's bound)
    next_attempt: float | None = None             # monotonic time of the next spawn when down
    spawns: deque[float] = field(default_factory=deque)
    _session: ClientSession | None = None
    _kick: anyio.Event = field(default_factory=anyio.Event)
    _closed: bool = False
    _refresh: set[str] = field(default_factory=set)
    _raw: RawStdioChannel | None = None
    _outcome: anyio.Event = field(default_factory=anyio.Event)   # the current connect attempt ended
    _last_failed: bool = False                    # the last attempt ended without coming up
    _attempt_up: bool = False                     # the current attempt came up
    _connect_by: float = math.inf                 # monotonic time the current attempt gives up
    _timeouts: int = 0                            # call timeouts in a row on this connection
    _restart_why: str | None = None               # why the gateway ended the connection itself
    stopping: bool = False                        # the gateway is shutting down: no more status
    _connect_scope: anyio.CancelScope | None = None   # the current connect attempt's (sign-in ends it)

    @property
    def name(self) -> str:
        return self.spec.name

    # -- state --------------------------------------------------------------------------------

    def _set_state(self, state: str, error: str | None = None) -> None:
        if self.stopping:
            return
        self.state = state
        if error is not None or state == "up":
            self.last_error = error
        if state == "up":
            self._attempt_up = True
            self._last_failed = False
            self._outcome.set()
        try:
            self.on_state(self)
        except Exception:
            log.exception("status callback failed for %s", self.name)

    def _wake(self) -> None:
        self._kick.set()

    def _connection_lost(self) -> None:
        signin = expiry.is_expired(self.name)
        if signin and self._connect_scope is not None:
            self._connect_scope.cancel()
        if not self._closed:
            self._closed = True
            self._session = None
            if signin:
                self._restart_why = expiry.message(self.name)
            if self.state == "up":
                self._set_state("down", self._restart_why if signin else "connection closed (the server exited)")
            self._wake()

    def _restart(self, why: str) -> None:
        """End a connection that looks hung; the supervisor reconnects (with its backoff)."""
        if self._closed:
            return
        if self._raw is not None:
            self._raw.hung = True      # no point closing its stdin and waiting: straight to SIGTERM
        self._restart_why = why
        self._closed = True
        self._session = None
        self._set_state("down", why)
        self._wake()

    def request_refresh(self, section: str) -> None:
        self._refresh.add(section)
        self._wake()

    # -- transport ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        async with self.open_transport(self.spec, self._connection_lost) as (read, write, raw):
            self._raw = raw
            try:
                yield read, write
            finally:
                self._raw = None

    # The parameter is named `message` because the SDK's MessageHandlerFnT protocol names it so.
    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("upstream %s: transport error: %s", self.name, describe_error(message))
        elif isinstance(message, t.ToolListChangedNotification):
            self.request_refresh("tools")
        elif isinstance(message, t.ResourceListChangedNotification):
            self.request_refresh("resources")
        elif isinstance(message, t.PromptListChangedNotification):
            self.request_refresh("prompts")
        elif self.on_event is not None:
            try:
                await self.on_event(self, message)
            except Exception:
                log.exception("upstream %s: handling %s failed", self.name, type(message).__name__)

    # -- supervisor -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the upstream connected until cancelled."""
        failures = 0
        while True:
            await self.starts.acquire(self.name)       # a slot first: the connect timeout starts after
            started = now = time.monotonic()
            while self.spawns and now - self.spawns[0] > 60.0:
                self.spawns.popleft()
            self.spawns.append(now)
            self._closed = False
            self._timeouts = 0
            self._restart_why = None
            self._attempt_up = False
            self._outcome = anyio.Event()
            self._connect_by = started + self.spec.timeouts.connect
            try:
                await self._connect_and_serve()
                error = self._restart_why or "connection closed (the server exited)"
            except ConfigError as e:
                self._failed_for_good(str(e))
                return
            except Exception as e:
                config = next((x for x in leaves(e) if isinstance(x, ConfigError)), None)
                if config is not None:
                    self._failed_for_good(str(config))
                    return
                error = self._restart_why or describe_error(e)
                if self.era == "legacy" and not self._attempt_up and refused_handshake(e):
                    log.info("upstream %s refused the initialize handshake (%s); speaking 2026-07-28 to it",
                             self.name, error)
                    self.era = "auto"
                    self._set_state("connecting")
                    continue
            except BaseExceptionGroup as e:   # cancellation mixed with errors: re-raise cancels
                if any(isinstance(x, anyio.get_cancelled_exc_class()) for x in leaves(e)):
                    raise
                error = describe_error(e)
            if expiry.is_expired(self.name):
                await self._wait_for_login()
                failures = 0
                continue
            if self.state != "up" and self.spec.transport == "stdio":
                error += f" (stderr: {upstream_log_path(self.name)})"
            self._session = None
            failures = 0 if time.monotonic() - started > STABLE_AFTER else failures + 1
            delay = min(BACKOFF_CAP, BACKOFF_FIRST * 2 ** max(0, failures - 1))
            if len(self.spawns) >= MAX_SPAWNS_PER_MINUTE:
                delay = max(delay, 60.0 - (time.monotonic() - self.spawns[0]))
            self.next_attempt = time.monotonic() + delay
            if not self._attempt_up:
                self._last_failed = True
            self._set_state("down", error)
            self._outcome.set()
            log.warning("upstream %s down: %s; restarting in %.1fs", self.name, error, delay)
            await anyio.sleep(delay)
            self.next_attempt = None
            self._set_state("connecting")

    async def _wait_for_login(self) -> None:
        """Down with the login hint until the token file changes (`mcpctl login`), then reconnect."""
        self._session = None
        self.next_attempt = None
        if not self._attempt_up:
            self._last_failed = True
        self._set_state("down", expiry.message(self.name))
        self._outcome.set()
        log.warning("upstream %s down: %s", self.name, expiry.message(self.name))
        await expiry.wait_for_login(self.name)
        log.info("upstream %s: new sign-in found; connecting", self.name)
        self._set_state("connecting")

    def _failed_for_good(self, error: str) -> None:
        self.fatal = True
        self._last_failed = True
        self._set_state("down", error)
        self._outcome.set()
        log.error("upstream %s: %s", self.name, error)

    async def _connect_and_serve(self) -> None:
        spec = self.spec
        with anyio.CancelScope() as scope:
            self._connect_scope = scope
            scope.deadline = anyio.current_time() + spec.timeouts.connect
            async with Client(self._transport(), mode=self.era, message_handler=self._on_message,
                              cache=None, **client_options(self.client_kw)) as client:
                session = client.session
                listing = {}
                for section, *_ in SECTIONS:
                    listing[section] = await self._list(session, section, spec.timeouts.connect)
                scope.deadline = math.inf
                self._connect_scope = None
                self.protocol_version = session.protocol_version
                info = session.server_info
                self.server_info = ({"name": info.name, "version": info.version} if info else None)
                caps = session.server_capabilities
                self.capabilities = caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps else {}
                listing[ABOUT_SECTION] = server_about(info, session.instructions)
                self.tool_count = len(listing["tools"])
                self._session = session
                await self.on_listing(self, listing)
                self._set_state("up")
                log.info("upstream %s up: %d tools, protocol %s", self.name, self.tool_count,
                         self.protocol_version)
                async with anyio.create_task_group() as tg:
                    if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        tg.start_soon(self._listen, client)
                    if self.on_event is not None:
                        tg.start_soon(self._announce_up)
                    await self._serve_until_closed(session)
                    tg.cancel_scope.cancel()
        self._connect_scope = None
        if scope.cancelled_caught and expiry.is_expired(self.name):
            raise expiry.SignInRequired(self.name)
        if scope.cancelled_caught:
            raise TimeoutError(f"did not connect within {spec.timeouts.connect:g}s (timeouts.connect)")

    async def _announce_up(self) -> None:
        assert self.on_event is not None
        try:
            await self.on_event(self, "up")
        except Exception:
            log.exception("upstream %s: setting up the connection failed", self.name)

    async def _serve_until_closed(self, session: ClientSession) -> None:
        while not self._closed:
            await self._kick.wait()
            self._kick = anyio.Event()
            if self._closed:
                return
            sections = self._refresh
            self._refresh = set()
            if "resources" in sections:
                sections.add("resourceTemplates")
            listing: Listing = {}
            try:
                for section, *_ in SECTIONS:
                    if section in sections:
                        listing[section] = await self._list(session, section, self.spec.timeouts.call)
            except (MCPError, UpstreamUnavailable) as e:
                log.warning("upstream %s: re-listing failed: %s", self.name, describe_error(e))
                continue
            if "tools" in listing:
                self.tool_count = len(listing["tools"])
            await self.on_listing(self, listing)
            self._set_state("up")

    async def _listen(self, client: Client) -> None:
        caps = client.session.server_capabilities
        tools = bool(caps and caps.tools and caps.tools.list_changed)
        prompts = bool(caps and caps.prompts and caps.prompts.list_changed)
        resources = bool(caps and caps.resources and caps.resources.list_changed)
        if not (tools or prompts or resources):
            return
        try:
            async with client.listen(tools_list_changed=tools, prompts_list_changed=prompts,
                                     resources_list_changed=resources) as sub:
                async for event in sub:
                    kind = type(event).__name__.lower()
                    self.request_refresh("tools" if "tool" in kind else
                                         "prompts" if "prompt" in kind else "resources")
        except Exception as e:   # a listen stream is best effort; list_changed also arrives via messages
            log.info("upstream %s: listen stream ended: %s", self.name, describe_error(e))

    async def _list(self, session: ClientSession, section: str, timeout: float) -> list[dict[str, Any]]:
        _, method, key, cap = next(s for s in SECTIONS if s[0] == section)
        caps = session.server_capabilities
        if caps is None or getattr(caps, cap, None) is None:
            return []
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        required = _REQUIRED_KEY[section]
        for _ in range(MAX_PAGES):
            try:
                result = await raw_request(session, method, {"cursor": cursor} if cursor else None,
                                           timeout=timeout)
            except MCPError as e:
                if section != "tools" and e.code == -32601:   # capability advertised, method not served
                    return items
                raise
            for item in result.get(key) or []:
                if isinstance(item, dict) and isinstance(item.get(required), str):
                    items.append(item)
                else:
                    log.warning("upstream %s: skipping malformed %s entry", self.name, section)
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return items

    # -- calls ------------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any], *, timeout: float,
                      on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
                      ) -> dict[str, Any]:
        """Relay one request; raise UpstreamUnavailable/UpstreamTimeout, or MCPError from upstream."""
        session = self._session
        if session is None or self.state != "up":
            session = await self._wait_ready(timeout)
        try:
            raw = self._raw
            if raw is not None:
                data: dict[str, Any] = {"method": method, "params": dict(params)}
                stamp(session, data)      # the era's request envelope
                result = await raw.request(data, timeout=timeout, on_progress=on_progress)
            else:
                result = await raw_request(session, method, params, timeout=timeout, on_progress=on_progress)
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                self._timed_out(session, timeout)
                raise UpstreamTimeout(f"upstream server {self.name!r} did not answer within {timeout:g}s "
                                      "(timeouts.call); the request was cancelled") from None
            if e.code == CONNECTION_CLOSED:
                self._connection_lost()
                if expiry.is_expired(self.name):
                    raise UpstreamUnavailable(expiry.message(self.name)) from None
                raise UpstreamUnavailable(
                    f"upstream server {self.name!r} closed the connection during the call (it crashed "
                    "or exited); mcpctl is restarting it, retry shortly") from None
            self._timeouts = 0          # an error reply is an answer
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as e:
            self._connection_lost()
            raise UpstreamUnavailable(f"upstream server {self.name!r} connection failed: "
                                      f"{describe_error(e)}; mcpctl is reconnecting") from None
        if self._timeouts:
            self._timeouts = 0
        return result

    async def notify(self, notification: Any) -> None:
        """Send a notification over the live session, if any (best effort)."""
        session = self._session
        if session is not None and self.state == "up":
            try:
                await session.send_notification(notification)
            except Exception as e:
                log.debug("upstream %s: notification not sent: %s", self.name, e)

    def _timed_out(self, session: ClientSession, timeout: float) -> None:
        if session is not self._session:      # a call of an earlier connection
            return
        self._timeouts += 1
        if self._timeouts >= HUNG_AFTER_TIMEOUTS:
            log.warning("upstream %s: %d calls in a row timed out with no answer between; restarting it "
                        "(it looks hung)", self.name, self._timeouts)
            self._restart(f"{self._timeouts} calls in a row timed out (timeouts.call {timeout:g}s) with no "
                          "answer between: restarted as hung")

    async def _wait_ready(self, timeout: float) -> ClientSession:
        """The session once the current connect attempt comes up; UpstreamUnavailable at once when
        the upstream is down or its last attempt failed, else when the attempt fails or gives up
        (its connect timeout), or after `timeout`, whichever comes first."""
        if self.state == "down" or self._last_failed:
            raise UpstreamUnavailable(self.down_message())
        wait = min(timeout, self._connect_by - time.monotonic())
        with anyio.move_on_after(wait):
            await self._outcome.wait()
        session = self._session
        if session is not None and self.state == "up":
            return session
        if self.state == "down" or self._last_failed:
            raise UpstreamUnavailable(self.down_message())
        if wait < timeout:
            raise UpstreamUnavailable(f"upstream server {self.name!r} did not come up within "
                                      f"{self.spec.timeouts.connect:g}s (timeouts.connect); mcpctl keeps trying")
        raise UpstreamUnavailable(f"upstream server {self.name!r} is still starting; it did not "
                                  f"come up within {timeout:g}s")

    def down_message(self) -> str:
        if expiry.is_expired(self.name):
            return expiry.message(self.name)
        msg = f"upstream server {self.name!r} is down: {self.last_error or 'not connected'}"
        if self.fatal:
            return msg + " (fix the server or project, then restart mcpctl serve)"
        if self.state == "connecting":
            return msg + "; restarting it now"
        if self.next_attempt is not None:
            return msg + f"; restarting in {max(0.0, self.next_attempt - time.monotonic()):.1f}s"
        return msg + "; restarting"

