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

import contextlib
import hashlib
import logging
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp.server import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger("mcpctl.gateway")

MAX_TRACKED: Final = 1024           # handshake sessions and 2026 identities kept for notifications
MAX_BEGUN: Final = 65536            # sessions remembered as past the gate
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"
PROFILE_STATE: Final = "mcpctl.profile"     # request scope state: the presented token's profile

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_SECTION_EVENTS: Final = (
    ("tools", ToolsListChanged, "send_tool_list_changed", "notifications/tools/list_changed"),
    ("prompts", PromptsListChanged, "send_prompt_list_changed", "notifications/prompts/list_changed"),
    ("resources", ResourcesListChanged, "send_resource_list_changed", "notifications/resources/list_changed"),
)


@dataclass
class Caller:
    """Who is calling, for the invocation log and the gate, and where progress for this request goes."""

    session_id: str
    client_name: str | None = None
    client_version: str | None = None
    progress: Progress | None = None
    profile: str | None = None       # the credential's view (None: the full view)


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


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


class Sessions:
    """The gateway's sessions: identity, gate state and notification routes."""

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[Any, tuple[str, str | None, str | None]] = \
            weakref.WeakKeyDictionary()
        self._identities: OrderedDict[tuple[Any, ...], str] = OrderedDict()   # 2026 HTTP identity -> id
        self._legacy: OrderedDict[str, Any] = OrderedDict()                    # id -> handshake session
        self._buses: OrderedDict[str, _SessionBus] = OrderedDict()             # id -> listen streams
        self._begun: OrderedDict[str, None] = OrderedDict()
        self._notifiers: list[Callable[[str], None]] = []
        self.stdio: Caller | None = None     # set by the stdio transport: its one session

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
        conn = ctx.session._connection
        try:
            known = self._clients.get(conn)
        except TypeError:
            known = None
        if known is not None:
            return known
        known = (self._identity_id(ctx, name, version) or new_session_id(), name, version)
        with contextlib.suppress(TypeError):
            self._clients[conn] = known
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
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
        sid = self._identities.get(key) or new_session_id()
        self._remember(self._identities, key, sid)
        return sid

    def caller(self, ctx: ServerRequestContext[Any]) -> Caller:
        session_id, client_name, client_version = self.identify(ctx)
        progress: Progress | None = None
        meta = (ctx.params or {}).get("_meta")
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            progress = ctx.session.report_progress
        if self.stdio is not None:
            profile = self.stdio.profile
        else:     # HTTP: the profile of the token this request presented (set by the bearer check)
            scope = getattr(getattr(ctx, "request", None), "scope", None)
            state = scope.get("state") if isinstance(scope, dict) else None
            profile = state.get(PROFILE_STATE) if isinstance(state, dict) else None
        return Caller(session_id, client_name, client_version, progress, profile)

    @staticmethod
    def _remember(table: OrderedDict[Any, Any], key: Any, value: Any, limit: int = MAX_TRACKED) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > limit:
            table.popitem(last=False)

    # -- the gate ---------------------------------------------------------------------------------

    def begun(self, session_id: str) -> bool:
        return session_id in self._begun

    def begin(self, session_id: str) -> bool:
        """Mark the session as past the gate; True if it was gated until now."""
        was_gated = session_id not in self._begun
        self._remember(self._begun, session_id, None, MAX_BEGUN)
        return was_gated

    # -- notifications ----------------------------------------------------------------------------

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """Register a transport-level sender of list_changed notifications (method name): the
        stdio transport writes them itself."""
        self._notifiers.append(notify)
        return lambda: self._notifiers.remove(notify) if notify in self._notifiers else None

    async def listen(self, ctx: ServerRequestContext[Any], params: Any) -> Any:
        """`subscriptions/listen`: the stream joins its session's own bus."""
        sid = self.identify(ctx)[0]
        sb = self._buses.get(sid)
        if sb is None:
            sb = _SessionBus()
            self._remember(self._buses, sid, sb)
            if len(self._buses) > MAX_TRACKED:     # pragma: no cover - _remember bounds it
                self._buses.popitem(last=False)
        sb.listening += 1
        try:
            return await sb.handler(ctx, params)
        finally:
            sb.listening -= 1

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
