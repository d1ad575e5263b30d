"""The HTTP front's guard: what anyone who can connect, token or not, may hold of it.

uvicorn's h11 protocol (0.54) bounds neither how long a connection may take to send a request
head or body nor how many connections are open. `GuardedH11Protocol` (mixed into it by
`guarded_protocol`) does, with one `Guard` per front: each request head must be complete within
the header timeout and its body within the body timeout, connections are capped
(`connection_budget`, within the open-file limit), those that have not yet shown the token are
capped lower (`unauthenticated_cap`), the oldest closed first unless its authorised request
already waits unread (`buffered_head`), and those that have are counted in their credential's
share (`resources.shares.Share`). Refusals are counted and logged one line per burst (`Refusals`,
`CountLogRecords`). `http.serve_http` wires it into uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from mcpctl.auth.bearer import CHECKED_CREDENTIAL_STATE, SHARE_REFUSED_STATE
from mcpctl.resources.http_limits import HttpLimits as HttpLimits  # (read from here too)
from mcpctl.resources.http_limits import connection_budget as connection_budget
from mcpctl.resources.http_limits import deepen_listen_queues as deepen_listen_queues
from mcpctl.resources.http_limits import unauthenticated_cap
from mcpctl.resources.shares import Share
from mcpctl.wire import HeadWithBody

if TYPE_CHECKING:
    from mcpctl.resources.tokens import Credential

log = logging.getLogger("mcpctl.gateway.http")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PEEK_BYTES: Final = 16 * 1024  # how much of a connection's unread bytes eviction looks at (h11's head limit is 64 KiB)
BURST_QUIET: Final = 2.0       # a burst of refusals ends after this many quiet seconds ...
BURST_LONGEST: Final = 60.0    # ... and a sustained one is summarised at least this often


class Authenticator(Protocol):
    """Who a request head's `Authorization` names (`http.BearerAuth`)."""

    def credential(self, headers: Iterable[tuple[bytes, bytes]]) -> Credential | None: ...

    def authorised(self, headers: Iterable[tuple[bytes, bytes]]) -> bool: ...


class Refusals:
    """Counts connections closed or refused and logs one summary line per burst of them."""

    def __init__(self, limits: HttpLimits, max_connections: int) -> None:
        self.reasons = {
            "unauthenticated": f"unauthenticated beyond {unauthenticated_cap(max_connections)} (oldest closed)",
            "full": f"refused at {max_connections} connections",
            "head": f"no complete request head within {limits.header_timeout:g} s",
            "invalid": "invalid HTTP",
            "fds": "accept() out of file descriptors",
            "sessions": f"new sessions refused at {limits.max_sessions} (503)",
            "body": f"no complete request body within {limits.body_timeout:g} s",
            "share": f"requests over a credential's {limits.max_connections_per_credential} busy connections (429)",
            "pool": "requests over the tokens' three quarters of the connections (429)",
            "over-floor": "connections of the token holding most closed for a new one at the cap",
            "session-evicted": "sessions of the token holding most ended for a new one at --max-sessions",
            "share-idle": "idle connections closed for a new request of their credential",
            "idle": f"idle connections closed for a new one at {max_connections}",
            "session-share": f"new sessions over a credential's {limits.max_sessions_per_credential} (429)",
            "session-pool": "new sessions over the tokens' three quarters of the sessions (429)",
            "dropped": "requests ended mid-body (by the client, or at the body timeout)",
        }
        self.counts: Counter[str] = Counter()
        self.started = self.last = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def note(self, reason: str) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        now = loop.time()
        if not self.counts:
            self.started = now
        self.counts[reason] += 1
        self.last = now
        if self._timer is None:
            self._timer = loop.call_at(now + BURST_QUIET, self._check)

    def _check(self) -> None:
        assert self._loop is not None
        self._timer = None
        now = self._loop.time()
        if now - self.last >= BURST_QUIET or now - self.started >= BURST_LONGEST:
            self.flush()
        else:
            self._timer = self._loop.call_at(min(self.last + BURST_QUIET, self.started + BURST_LONGEST),
                                             self._check)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.counts:
            return
        total = sum(self.counts.values())
        parts = ", ".join(f"{n} {self.reasons.get(r, r)}" for r, n in self.counts.most_common())
        seconds = (self._loop.time() if self._loop else self.last) - self.started
        log.warning("HTTP front: %d refused or closed in %.1f s: %s", total, seconds, parts)
        self.counts.clear()


class CountLogRecords(logging.Filter):
    """Turns a library's per-refusal log line into a count for the burst summary."""

    def __init__(self, refusals: Refusals, prefixes: dict[str, str]) -> None:
        super().__init__()
        self.refusals, self.prefixes = refusals, prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.msg if isinstance(record.msg, str) else ""
        for prefix, reason in self.prefixes.items():
            if msg.startswith(prefix):
                try:
                    self.refusals.note(reason)
                except RuntimeError:    # pragma: no cover - not on the event loop: keep the line
                    return True
                return False
        return True


# -- the connection guard --------------------------------------------------------------------------


class Guard:
    """State shared by the connections of one HTTP front."""

    def __init__(self, auth: Authenticator, limits: HttpLimits, max_connections: int, refusals: Refusals) -> None:
        self.auth = auth
        self.header_timeout = limits.header_timeout
        self.body_timeout = limits.body_timeout
        self.max_connections = max_connections
        self.max_unauthenticated = unauthenticated_cap(max_connections)
        self.refusals = refusals
        self.open = 0
        self.unauthenticated: OrderedDict[GuardedH11Protocol, None] = OrderedDict()   # oldest first
        self.shares: Share[GuardedH11Protocol] = Share(limits.max_connections_per_credential, "busy connections",
                                                       "--max-connections-per-credential", max_connections,
                                                       "--max-connections")

    def make_room(self) -> bool:
        """At the cap: close the oldest connection that has not shown the token, else the oldest
        idle one of the credential holding most, else (the reserve used up: many tokens) the oldest
        connection of the token holding most, when it holds more than its floor; False if there is
        none. (The new connection's token is not known yet: a flooder's own is what it closes.)"""
        if self.evict_oldest():
            return True
        for conn in self.shares.largest():
            if not conn.busy():
                self.refusals.note("idle")
                conn.drop()
                return True
        for conn in self.shares.over_floor(None):
            self.refusals.note("over-floor")
            conn.drop()
            return True
        return False

    def admit(self, conn: GuardedH11Protocol, credential: str) -> str | None:
        """Count `conn`, whose new request showed `credential`, in that credential's share; over it
        (or over the tokens' pool), close the credential's oldest idle connection, or (all busy) say
        why this request is refused."""
        if conn.credential is not None and conn.credential != credential:
            self.shares.discard(conn.credential, conn)
            conn.credential = None
        held = self.shares.of(credential)
        if conn not in held:
            refused = self.shares.refusal(credential)
            if refused is not None:
                idle = next((c for c in held if not c.busy()), None)
                if idle is None:
                    self.refusals.note("share" if self.shares.count(credential) >= self.shares.limit else "pool")
                    return refused
                self.refusals.note("share-idle")
                idle.drop()
        conn.credential = credential
        self.shares.add(credential, conn)
        return None

    def evict_oldest(self) -> bool:
        """Close the oldest connection that has not shown the token; False if there is none.

        One whose complete request head with a valid token already waits in its socket, unread, is
        spared (and no longer counted as unauthenticated): a burst of new connections can outrun
        the loop's reading them, and that one's turn had simply not come (a soak's flood closed
        such connections about once a minute)."""
        while self.unauthenticated:
            oldest = next(iter(self.unauthenticated))
            if oldest.holds_authorised_head():
                oldest.authenticated = True
                del self.unauthenticated[oldest]
                continue
            self.refusals.note("unauthenticated")
            oldest.drop()
            return True
        return False


def buffered_head(fd: int) -> list[tuple[bytes, bytes]] | None:
    """The header fields (names lowercased) of a complete request head waiting unread in socket
    `fd`, peeked, not consumed; None when nothing or only part of a head is there."""
    try:
        with socket.socket(fileno=os.dup(fd)) as s:
            data = s.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return None
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    fields = []
    for line in data[:end].split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            fields.append((name.strip().lower(), value.strip()))
    return fields


def guarded_protocol(guard: Guard) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(GuardedH11Protocol, H11Protocol):
        pass

    Protocol.guard = guard
    return Protocol


class GuardedH11Protocol:
    """Mixed into uvicorn's `H11Protocol` (see `guarded_protocol`): what uvicorn 0.54 leaves open.

    uvicorn arms its keep-alive timer only after a response, and any byte cancels it, so a
    connection that never completes a request head (or never sends anything) is held forever,
    and `limit_concurrency` only answers 503 once a whole head has arrived. Here:
    - a request head must be complete `header_timeout` seconds after the connection opens, or
      after the first byte that follows a response (the keep-alive timer covers the idle time
      before that byte); more bytes do not buy time;
    - at most `max_connections` connections are open; of them, at most a quarter that have not
      yet shown the token: a new connection closes the oldest of those (an authorised client
      sends its request at once, so the newest connection is the one to keep), sparing one whose
      authorised request head already waits unread in its socket (`Guard.evict_oldest`);
    - a request's body must be complete `body_timeout` seconds after its head;
    - each connection counts in the share of the token its last request showed (`Guard.admit`);
    - a connection whose request is being served (a GET stream, a long call) has no deadline.
    """

    guard: ClassVar[Guard]
    # attributes of H11Protocol
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    headers: list[tuple[bytes, bytes]]
    timeout_keep_alive_task: asyncio.TimerHandle | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._counted = False
        self._seen: Any = None              # the request (cycle) last attributed
        self.authenticated = False
        self.credential: str | None = None  # whose share it counts in (the last request's token)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(HeadWithBody(transport, self.loop))  # type: ignore[misc]  # (wire.py)
        g = self.guard
        if g.open >= g.max_connections and not g.make_room():
            g.refusals.note("full")
            self.transport.close()
            return
        g.open += 1
        self._counted = True
        g.unauthenticated[self] = None
        while len(g.unauthenticated) > g.max_unauthenticated:
            g.evict_oldest()
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._check()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._check()

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)  # type: ignore[misc]

    def drop(self) -> None:
        self._forget()
        self.transport.close()

    def holds_authorised_head(self) -> bool:
        """Its whole request head, with a valid token, is buffered but not yet read (`buffered_head`)."""
        sock = self.transport.get_extra_info("socket")
        fields = buffered_head(sock.fileno()) if sock is not None else None
        return fields is not None and self.guard.auth.authorised(fields)

    def _forget(self) -> None:
        self._cancel_head_timer()
        self._cancel_body_timer()
        if self._counted:
            self._counted = False
            self.guard.open -= 1
        self.guard.unauthenticated.pop(self, None)
        if self.credential is not None:
            self.guard.shares.discard(self.credential, self)
            self.credential = None

    def busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _check(self) -> None:
        if self.transport.is_closing() or not self._counted:
            return
        cycle = self.cycle
        if cycle is not None and cycle is not self._seen:
            self._seen = cycle
            self._attribute(cycle)
        if self.busy():
            self._cancel_head_timer()
            if cycle.more_body:
                if self._body_timer is None:
                    self._body_timer = self.loop.call_later(self.guard.body_timeout, self._body_timed_out)
            else:
                self._cancel_body_timer()
        else:
            self._cancel_body_timer()
            if self.timeout_keep_alive_task is None:
                self._arm_head_timer()

    def _attribute(self, cycle: Any) -> None:
        """A request head has just been read (its ASGI task created, not yet run): count the
        connection in the share of the token it shows; over the share, the request's scope says so
        and the bearer check answers 429. The credential goes to the scope too (read once)."""
        cred = self.guard.auth.credential(self.headers)
        if cred is None:
            return
        state = cycle.scope.setdefault("state", {})
        state[CHECKED_CREDENTIAL_STATE] = cred
        if not self.authenticated:
            self.authenticated = True
            self.guard.unauthenticated.pop(self, None)
        refused = self.guard.admit(self, cred.name or "")
        if refused is not None:
            state[SHARE_REFUSED_STATE] = refused

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_timed_out(self) -> None:
        self._body_timer = None
        cycle = self.cycle
        if self.transport.is_closing() or cycle is None or not cycle.more_body:
            return
        self.guard.refusals.note("body")
        self.drop()

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.guard.header_timeout, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.busy():
            return
        self.guard.refusals.note("head")
        self.drop()
