"""Client sessions: who is calling, which session a request belongs to, and list_changed
notifications to every session or to one.

What a session is (the unit of the session gate, and the `session_id` of the invocation log):

- **stdio**: the one client at the other end of the pipe, for the life of the gateway process.
- **HTTP, handshake era** (protocol versions up to 2025-11-25): the protocol session
  (`Mcp-Session-Id`), from `initialize` to the client's DELETE, the session idle timeout
  (`serve --session-idle-timeout`) or the gateway's exit.
- **HTTP, 2026-07-28**: the era has no protocol session, so one client identity is one session:
  the bearer credential (the token, however its scheme is spelt) plus the `clientInfo` name and
  version every request carries. A pooled client that spreads its requests over many TCP
  connections stays one session; two instances of the same client version presenting the same
  token are one session too (they share the gate and the log's session id). Give them different
  tokens (or client versions) to tell them apart.

Notifications: handshake-era sessions get `notifications/*/list_changed` directly; 2026-era
sessions only through their `subscriptions/listen` streams, so each session has its own
subscription bus and a targeted notification reaches that session alone.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as t
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcpctl.auth.bearer import CREDENTIAL_STATE, PROFILE_STATE
from mcpctl.gateway.peers import CallPeer, SessionPeer

if TYPE_CHECKING:
    from mcpctl.cluster.shared import SharedGate
    from mcpctl.gateway.peers import Peer

log = logging.getLogger("mcpctl.gateway")

MAX_TRACKED: Final = 1024           # handshake sessions and 2026 identities kept for notifications
MAX_BEGUN: Final = 65536            # sessions remembered as past the gate
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META: Final = "io.modelcontextprotocol/logLevel"
MCP_SESSION_HEADER: Final = "mcp-session-id"

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_SECTION_EVENTS: Final = (
    ("tools", ToolsListChanged, "send_tool_list_changed", "notifications/tools/list_changed"),
    ("prompts", PromptsListChanged, "send_prompt_list_changed", "notifications/prompts/list_changed"),
    ("resources", ResourcesListChanged, "send_resource_list_changed", "notifications/resources/list_changed"),
)
# The listing sections a client is told of when they change (templates ride on `resources`).
NOTIFIED_SECTIONS: Final = frozenset({"tools", "prompts", "resources", "resourceTemplates"})


@dataclass
class Caller:
    """Who is calling, for the invocation log and the gate, and where progress for this request goes."""

    session_id: str
    client_name: str | None = None
    client_version: str | None = None
    progress: Progress | None = None
    profile: str | None = None       # the credential's view (None: the full view)
    peer: Peer | None = None         # the client, to ask (sampling, elicitation, roots) and to tell (logs)
    log_level: str | None = None     # 2026-07-28: the request's own log opt-in (`_meta` logLevel)
    credential: str | None = None    # HTTP: the token's name ("" for the project's own); stdio: None
    answers: dict[str, Any] | None = None    # a restarted parked call's inputResponses (asks.Asks)


def _progress_to(session: Any, token: str | int, request_id: Any) -> Progress:
    """Progress for one request, on that request's own channel (`report_progress` does not reach
    a 2026-07-28 client over streamable HTTP from the lean path)."""

    async def progress(value: float, total: float | None, message: str | None) -> None:
        await session.send_notification(t.ProgressNotification(params=t.ProgressNotificationParams(
            progress_token=token, progress=value, total=total, message=message)), related_request_id=request_id)

    return progress


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


def _header(ctx: Any, name: str) -> str | None:
    request = getattr(ctx, "request", None)
    try:
        value = request.headers.get(name) if request is not None else None
    except AttributeError:
        return None
    return value if isinstance(value, str) and value else None


def _credential(authorization: str | None) -> str | None:
    """The credential of an Authorization value, as a digest: `Bearer T` and `bearer T` are one
    credential (the scheme is case-insensitive), and the token itself is not kept here."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        authorization = token.strip()
    return hashlib.sha256(authorization.encode("utf-8", "surrogateescape")).hexdigest()


class _SessionBus:
    """One session's `subscriptions/listen` streams (2026 era)."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.handler = ListenHandler(self.bus)
        self.listening = 0


def _request_state(ctx: Any) -> dict[str, Any]:
    """What the HTTP front's bearer check set on this request (profile, credential), or {}."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    return state if isinstance(state, dict) else {}

class Sessions:
    """The gateway's sessions: identity, gate state and notification routes."""

    def __init__(self) -> None:
        # Connection -> identity, keyed on public objects: the `Mcp-Session-Id` of a handshake-era
        # HTTP session, else the `client_params` object the SDK keeps per connection (by id, with
        # a weak reference checking that it is still the same object).
        self._by_header: OrderedDict[str, tuple[str, str | None, str | None]] = OrderedDict()
        self._by_params: dict[int, tuple[weakref.ref[Any], tuple[str, str | None, str | None]]] = {}
        self._identities: OrderedDict[tuple[Any, ...], str] = OrderedDict()   # 2026 HTTP identity -> id
        self._legacy: OrderedDict[str, Any] = OrderedDict()                    # id -> handshake session
        self._buses: OrderedDict[str, _SessionBus] = OrderedDict()             # id -> listen streams
        self._begun: OrderedDict[str, None] = OrderedDict()
        self._notifiers: list[Callable[[str], None]] = []
        self._levels: OrderedDict[str, str] = OrderedDict()    # id -> logging/setLevel of the session
        # handshake sessions, least recent first, with the profile their last request presented
        self._active: OrderedDict[str, str | None] = OrderedDict()
        self.stdio: Caller | None = None     # set by the stdio transport: its one session
        self.shared: SharedGate | None = None    # replicas on one database: who has begun (`cluster.shared`)
        self.stdio_peer: Peer | None = None  # and its client, to ask and tell outside a call
        # `subscriptions/listen` streams asking for resource updates: (the caller, uris) on open and
        # on close (set by the resource relay)
        self.on_listen_resources: Callable[[Caller, list[str], bool], Awaitable[None]] | None = None

    # -- identity ---------------------------------------------------------------------------------

    def identify(self, ctx: ServerRequestContext[Any]) -> tuple[str, str | None, str | None]:
        """(session id, client name, client version) of the request in `ctx`."""
        name = version = None
        cp = ctx.session.client_params
        if cp is not None and cp.client_info is not None:
            name, version = cp.client_info.name, cp.client_info.version
        else:
            meta = (ctx.params or {}).get("_meta") or {}
            info = meta.get(CLIENT_INFO_META) if isinstance(meta, dict) else None
            if isinstance(info, dict):
                name, version = info.get("name"), info.get("version")
        if self.stdio is not None:
            s = self.stdio
            if s.client_name is None and name is not None:
                s.client_name, s.client_version = name, version
            return s.session_id, s.client_name, s.client_version
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        header = None if modern else _header(ctx, MCP_SESSION_HEADER)
        if header is not None:
            known = self._by_header.get(header)
        elif cp is not None and not modern:
            entry = self._by_params.get(id(cp))
            known = entry[1] if entry is not None and entry[0]() is cp else None
        else:
            known = None
        if known is not None:
            return known
        known = (self._identity_id(ctx, name, version) or new_session_id(), name, version)
        if header is not None:
            self._remember(self._by_header, header, known)
        elif cp is not None and not modern:
            key = id(cp)

            def forget(_ref: weakref.ref[Any], key: int = key) -> None:
                self._by_params.pop(key, None)

            self._by_params[key] = (weakref.ref(cp, forget), known)
        if not modern:
            self._remember(self._legacy, known[0], ctx.session)
        return known

    def _identity_id(self, ctx: ServerRequestContext[Any], name: str | None, version: str | None) -> str | None:
        """The session id of a 2026-era HTTP client: its credential, name and version (see the
        module docstring); None for anything else."""
        request = getattr(ctx, "request", None)
        if request is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        try:
            key = (_credential(request.headers.get("authorization")), name, version)
        except AttributeError:
            return None
        sid = self._identities.get(key) or hashlib.sha256(repr(key).encode()).hexdigest()[:12]   # alike on any replica
        self._remember(self._identities, key, sid)
        return sid

    def caller(self, ctx: ServerRequestContext[Any]) -> Caller:
        session_id, client_name, client_version = self.identify(ctx)
        progress: Progress | None = None
        log_level = None
        meta = (ctx.params or {}).get("_meta")
        if isinstance(meta, dict):
            token = meta.get("progressToken")
            if token is not None:
                progress = _progress_to(ctx.session, token, ctx.request_id)
            level = meta.get(LOG_LEVEL_META)
            log_level = level if isinstance(level, str) else None
        profile = self.request_profile(ctx)
        credential = None if self.stdio is not None else _request_state(ctx).get(CREDENTIAL_STATE)
        if self.stdio is None and session_id in self._legacy:
            self._remember(self._active, session_id, profile)
        return Caller(session_id, client_name, client_version, progress, profile, CallPeer(ctx), log_level,
                      credential if isinstance(credential, str) else None)

    def request_profile(self, ctx: ServerRequestContext[Any]) -> str | None:
        """The credential profile of the request in `ctx` (None: the full view): over stdio
        `serve --profile`; over HTTP the profile of the token it presented (the bearer check)."""
        if self.stdio is not None:
            return self.stdio.profile
        profile = _request_state(ctx).get(PROFILE_STATE)
        return profile if isinstance(profile, str) else None

    # -- the client behind a session, outside its requests ----------------------------------------

    def peer_of(self, session_id: str) -> Peer | None:
        """The standalone channel of a session (stdio, or a handshake-era HTTP session)."""
        stdio = self.stdio
        if stdio is not None:
            return self.stdio_peer if stdio.session_id == session_id else None
        session = self._legacy.get(session_id)
        return SessionPeer(session) if session is not None else None

    def profile_of(self, session_id: str) -> tuple[bool, str | None]:
        """(known, the credential profile the session presented last): stdio's `serve --profile`,
        or a handshake-era HTTP session's last request; (False, None) for any other session."""
        if self.stdio is not None:
            return (True, self.stdio.profile) if self.stdio.session_id == session_id else (False, None)
        return (True, self._active[session_id]) if session_id in self._active else (False, None)

    def roots_peer(self, may: Callable[[str, str | None], bool] | None = None) -> Peer | None:
        """Whose roots an upstream gets outside a call: over stdio the one client; over HTTP the
        handshake-era session that made a request most recently among those that declared
        `roots` (2026-07-28 clients cannot be asked). `may(session id, profile)`: whether that
        session may be asked at all (its view includes the upstream)."""
        if self.stdio is not None:
            s = self.stdio
            return self.stdio_peer if may is None or may(s.session_id, s.profile) else None
        for sid, profile in reversed(self._active.items()):
            session = self._legacy.get(sid)
            if session is None or (may is not None and not may(sid, profile)):
                continue
            caps = session.client_capabilities
            if caps is not None and caps.roots is not None:
                return SessionPeer(session)
        return None

    def set_level(self, session_id: str, level: str) -> None:
        self._remember(self._levels, session_id, level)

    def level_of(self, session_id: str) -> str | None:
        return self._levels.get(session_id)

    def levels(self) -> dict[str, str]:
        """Each session's `logging/setLevel` (stdio or handshake-era sessions still known)."""
        if self.stdio is not None:
            return {sid: lv for sid, lv in self._levels.items() if sid == self.stdio.session_id}
        return {sid: lv for sid, lv in self._levels.items() if sid in self._legacy}

    async def publish(self, session_id: str, event: ServerEvent) -> None:
        """An event for one 2026-07-28 session's `subscriptions/listen` streams."""
        sb = self._buses.get(session_id)
        if sb is not None:
            await sb.bus.publish(event)

    @staticmethod
    def _remember(table: OrderedDict[Any, Any], key: Any, value: Any, limit: int = MAX_TRACKED) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > limit:
            table.popitem(last=False)

    def count(self) -> int:
        """Sessions tracked: stdio's one, handshake-era sessions and 2026-07-28 identities (a gauge)."""
        return (self.stdio is not None) + len(self._legacy) + len(self._identities)

    # -- the gate ---------------------------------------------------------------------------------

    def begun(self, session_id: str) -> bool:
        if session_id in self._begun or self.shared is None or not self.shared.begun(session_id):
            return session_id in self._begun
        self._remember(self._begun, session_id, None, MAX_BEGUN)     # begun on another replica
        return True

    def begin(self, session_id: str) -> bool:
        """Mark the session as past the gate; True if it was gated until now."""
        was_gated = not self.begun(session_id)       # on any replica
        self._remember(self._begun, session_id, None, MAX_BEGUN)
        if self.shared is not None and was_gated:
            self.shared.begin(session_id)
        return was_gated

    # -- notifications ----------------------------------------------------------------------------

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """Register a transport-level sender of list_changed notifications (method name): the
        stdio transport writes them itself."""
        self._notifiers.append(notify)
        return lambda: self._notifiers.remove(notify) if notify in self._notifiers else None

    async def listen(self, ctx: ServerRequestContext[Any], params: Any) -> Any:
        """`subscriptions/listen`: the stream joins its session's own bus."""
        caller = self.caller(ctx)
        sid = caller.session_id
        sb = self._buses.get(sid)
        if sb is None:
            sb = _SessionBus()
            self._remember(self._buses, sid, sb)
            if len(self._buses) > MAX_TRACKED:     # pragma: no cover - _remember bounds it
                self._buses.popitem(last=False)
        sb.listening += 1
        uris = list(getattr(getattr(params, "notifications", None), "resource_subscriptions", None) or [])
        watch = self.on_listen_resources if uris else None
        try:
            if watch is not None:
                await watch(caller, uris, True)
            return await sb.handler(ctx, params)
        finally:
            sb.listening -= 1
            if watch is not None:
                with anyio.CancelScope(shield=True):
                    await watch(caller, uris, False)

    async def notify(self, sections: set[str], only: str | None = None) -> None:
        """Tell every session (or the session `only`) that these lists changed."""
        for section, event_type, method, wire in _SECTION_EVENTS:
            if section not in sections and not (section == "resources" and "resourceTemplates" in sections):
                continue
            event = event_type()
            for sid, sb in list(self._buses.items()):
                if only is None or sid == only:
                    await sb.bus.publish(event)
            stdio = self.stdio
            if only is None or (stdio is not None and stdio.session_id == only):
                for notify in list(self._notifiers):
                    try:
                        notify(wire)
                    except Exception:
                        log.exception("sending %s failed", wire)
            for sid, session in list(self._legacy.items()):
                if only is not None and sid != only:
                    continue
                try:
                    with anyio.fail_after(2):
                        await getattr(session, method)()
                except Exception:
                    self._legacy.pop(sid, None)
