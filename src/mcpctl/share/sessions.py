"""Many stdio sessions on one Gateway: `gateway.sessions.Sessions` with one stdio client per
connection of the shared daemon, instead of one per process.

The gateway's stdio parts ask `sessions.stdio` (and `stdio_peer`) for "the" stdio client: here
that is the client of the connection whose task asks (a context variable, set when the
connection's hot path binds its caller, and inherited by every task the connection's SDK server
and hot path start), and None outside any connection (an upstream's reader), where each session
is reached by its id: `peer_of`, `profile_of`, `levels` cover every open connection, and a
list_changed notification goes to every connection or to the one it names.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, cast

from mcpctl.gateway.sessions import Caller, Sessions

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcpctl.gateway.peers import Peer

_current: ContextVar[Caller | None] = ContextVar("mcpctl_shared_session", default=None)
_only: ContextVar[str | None] = ContextVar("mcpctl_shared_notify_only", default=None)


class SharedSessions(Sessions):
    """The sessions of the shared daemon: one stdio client per connection (see the module docstring)."""

    _conns: dict[str, Caller]
    _peers: dict[str, Peer]

    @classmethod
    def adopt(cls, sessions: Sessions) -> SharedSessions:
        """Turn the Gateway's `sessions` (which its parts already hold) into shared ones, before any
        session is bound."""
        sessions.__class__ = cls
        shared = cast(SharedSessions, sessions)
        shared._conns, shared._peers = {}, {}
        return shared

    @property
    def stdio(self) -> Caller | None:
        return _current.get()

    @stdio.setter
    def stdio(self, caller: Caller | None) -> None:
        if caller is not None:      # the connection's hot path binds its one caller
            _current.set(caller)
            self._conns[caller.session_id] = caller

    @property
    def stdio_peer(self) -> Peer | None:
        caller = _current.get()
        return self._peers.get(caller.session_id) if caller is not None else None

    @stdio_peer.setter
    def stdio_peer(self, peer: Peer | None) -> None:
        caller = _current.get()
        if caller is not None and peer is not None:
            self._peers[caller.session_id] = peer

    def peer_of(self, session_id: str) -> Peer | None:
        return self._peers.get(session_id)

    def profile_of(self, session_id: str) -> tuple[bool, str | None]:
        caller = self._conns.get(session_id)
        return (True, caller.profile) if caller is not None else (False, None)

    def roots_peer(self, may: Callable[[str, str | None], bool] | None = None) -> Peer | None:
        """The most recent connection's client that declared `roots` and may be asked."""
        for sid, caller in reversed(self._conns.items()):
            peer = self._peers.get(sid)
            caps = peer.capabilities if peer is not None else None
            if caps is not None and "roots" in caps and (may is None or may(sid, caller.profile)):
                return peer
        return None

    def levels(self) -> dict[str, str]:
        return {sid: lv for sid, lv in self._levels.items() if sid in self._conns}

    def count(self) -> int:
        return len(self._conns)

    def add_notifier(self, notify: Callable[[str], None]) -> Callable[[], None]:
        """The connection's writer of list_changed notifications; removing it forgets the session."""
        caller = _current.get()
        sid = caller.session_id if caller is not None else None

        def to_session(wire: str) -> None:
            only = _only.get()
            if only is None or only == sid:
                notify(wire)

        remove = super().add_notifier(to_session)

        def unregister() -> None:
            remove()
            if sid is not None:
                self._conns.pop(sid, None)
                self._peers.pop(sid, None)

        return unregister

    async def notify(self, sections: set[str], only: str | None = None) -> None:
        token = _only.set(only)
        bound = _current.set(self._conns.get(only) if only is not None else _current.get())
        try:
            await super().notify(sections, only)
        finally:
            _current.reset(bound)
            _only.reset(token)
