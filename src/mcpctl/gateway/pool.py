"""The project's upstreams: one supervised client each, and their first contact.

First contact: a server never listed has nothing to show, and many clients list once, so the
first `tools/list` (and `initialize`, whose capabilities follow the upstreams') waits for it, for
its connect timeout and at most `FIRST_CONTACT_CAP`. A cached server never delays a list, nor does
one that failed on an earlier start (`failed_before`). `Pool.first_contact()` is the one place
that wait is computed; a call for a name no view knows yet waits for the same servers
(`wait_for_unlisted`). At most `start_limit()` upstreams start at once, none once stopping (`starts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Any, Final

import anyio
import anyio.abc

from mcpctl.upstream.ceiling import Ceiling
from mcpctl.upstream.starts import Starts, start_limit
from mcpctl.upstream.supervisor import Upstream

FIRST_CONTACT_CAP: Final = 15.0


class Pool:
    """Upstreams by server name, those that cannot start (and why), and the first-contact wait."""

    def __init__(self, first_contact_cap: float = FIRST_CONTACT_CAP, failed_before: Collection[str] = ()) -> None:
        self.upstreams: dict[str, Upstream] = {}
        self.unavailable: dict[str, str] = {}       # server -> why it cannot start at all
        self.ceilings: dict[str, Ceiling] = {}      # server -> its maxConcurrency (`upstream.ceiling`)
        self.cap = first_contact_cap
        self.starts = Starts(start_limit())           # each supervisor's attempts wait for a slot
        self.failed_before = frozenset(failed_before)     # never listed, down on an earlier start
        self._pending: set[str] = set()             # never-listed servers worth waiting for, not settled yet
        self._first_contact = 0.0                   # how long the first lists wait for them (s)
        self._settled = anyio.Event()
        self._started = time.monotonic()

    def get(self, server: str) -> Upstream | None:
        return self.upstreams.get(server)

    def add(self, up: Upstream) -> None:
        """Supervise `up`, within its server's maxConcurrency if it has one."""
        self.upstreams[up.name] = up
        up.starts = self.starts
        if up.spec.max_concurrency is not None:
            self.ceilings[up.name] = Ceiling(up.name, up.spec.max_concurrency, up.spec.timeouts.call)

    def why(self, server: str) -> str:
        """Why `server` has no upstream."""
        return self.unavailable.get(server, "not configured")

    def expect(self, never_listed: Iterable[str]) -> None:
        """These servers were never listed: the first lists wait for them (unless they failed before)."""
        self._pending = {n for n in never_listed if n not in self.failed_before}
        self._first_contact = min(self.cap, max(
            (self.upstreams[n].spec.timeouts.connect for n in self._pending), default=0.0))
        if not self._pending:
            self._settled.set()

    def start(self, tg: anyio.abc.TaskGroup, status: Callable[[str, dict[str, Any]], None]) -> None:
        """Start every upstream's supervisor in `tg` (they connect in parallel)."""
        self._started = time.monotonic()
        for name, why in self.unavailable.items():
            status(name, {"state": "down", "lastError": why, "tools": 0})
        for up in self.upstreams.values():
            status(up.name, {"state": "connecting", "lastError": None})
            tg.start_soon(self._supervise, up)

    def stopping(self) -> None:
        """Shutting down: each server keeps its last known status."""
        self.starts.close()
        for up in self.upstreams.values():
            up.stopping = True

    async def _supervise(self, up: Upstream) -> None:
        try:
            await up.run()
        finally:
            self.settle(up.name)

    def settle(self, name: str) -> None:
        """`name` listed or went down: the first lists no longer wait for it; its start's slot is free."""
        self.starts.release(name)
        self._pending.discard(name)
        if not self._pending:
            self._settled.set()

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    def contacted(self) -> bool:
        """The first lists no longer wait: settled, or the first-contact deadline has passed."""
        return self._settled.is_set() or time.monotonic() - self._started >= self._first_contact

    async def first_contact(self) -> None:
        """Wait, until the first-contact deadline since start, for the servers never listed."""
        if not self._settled.is_set():
            await self._wait(self._first_contact - (time.monotonic() - self._started))

    async def wait_for_unlisted(self) -> None:
        """A call for a tool not listed yet: wait for the servers never listed (bounded by their
        connect timeout), as the call itself would."""
        await self._wait(max((self.upstreams[n].spec.timeouts.connect for n in self._pending if n in self.upstreams),
                             default=0.0))

    async def _wait(self, deadline: float) -> None:
        if not self._settled.is_set() and deadline > 0:
            with anyio.move_on_after(deadline):
                await self._settled.wait()

    async def roots_changed(self, notification: Any) -> None:
        """Tell every connected upstream (their next roots/list asks again)."""
        for up in self.upstreams.values():
            if up.state == "up":
                await up.notify(notification)
