"""`Cluster`: how a gateway's HTTP front joins the other replicas on its database.

`Cluster.join` (at the gateway's start, when a database is configured) checks the `cluster`
schema, reads the hop secret, and puts what must outlive this replica in PostgreSQL: the gate's
begun sessions (`shared.SharedGate`, and `shared.GateListener` to hear of the others'), cut
results (`shared.SharedSections`), and this replica's id in the parked calls' `requestState` (the
gateway's `asks.Asks.tag`); the per-person call limits (`views.limits`) are shared by a sync
(`limits.SharedLimits`). `forwarder(app)` wraps the HTTP front's app (`forward.Forwarder`);
`run(stop)` keeps the heartbeat, the listener and the limits' sync until `stop`.
"""

from __future__ import annotations

import os
from typing import Any, Final, Protocol

import anyio

from mcpctl.cluster.forward import ASGIApp, Forwarder
from mcpctl.cluster.limits import SYNC_S, SharedLimits
from mcpctl.cluster.registry import Registry
from mcpctl.cluster.shared import GateListener, SharedGate, SharedSections
from mcpctl.presentation.budgets import Limits
from mcpctl.presentation.sections import SectionStore

ADVERTISE_ENV: Final = "MCPCTL_ADVERTISE_URL"
SYNC_ENV: Final = "MCPCTL_LIMIT_SYNC_S"     # seconds between the limits' syncs: for tests only
CONNECT_S: Final = 3.0          # a replica that does not accept a connection this fast is gone


class _Sessions(Protocol):
    shared: SharedGate | None

    async def notify(self, sections: set[str], only: str | None = None) -> None: ...


class _Views(Protocol):
    @property
    def limits(self) -> Limits: ...


class _Asks(Protocol):
    tag: str


class _Sections(Protocol):
    store: SectionStore


class _Gateway(Protocol):
    """What joining reads and sets of the gateway (`gateway.front.Gateway`, reached by duck typing)."""

    @property
    def sessions(self) -> _Sessions: ...

    @property
    def asks(self) -> _Asks: ...

    @property
    def sections(self) -> _Sections: ...

    @property
    def views(self) -> _Views: ...


class Cluster:
    """This replica among the others (see the module docstring)."""

    def __init__(self, registry: Registry, gate: GateListener | None = None,
                 limits: SharedLimits | None = None) -> None:
        self.registry = registry
        self.gate = gate
        self.limits = limits
        self.forwarders: list[Forwarder] = []
        self._client: Any = None

    @classmethod
    async def join(cls, database: str, project: str, gw: _Gateway, advertise: str | None = None,
                   host: str = "") -> Cluster:
        """`gw`: the gateway whose sessions' gate, parked calls' tag, cut results and per-person
        limits become the cluster's; `advertise`: the base URL other replicas reach this one at
        (`--advertise-url`, else MCPCTL_ADVERTISE_URL, else the bound address: `registry.default_url`)."""
        sessions, sections = gw.sessions, gw.sections
        from mcpctl.db.migrations import require

        await anyio.to_thread.run_sync(require, "cluster", database)
        registry = Registry(database, advertise or os.environ.get(ADVERTISE_ENV) or None, host)
        await anyio.to_thread.run_sync(registry.load_secret)
        sessions.shared = SharedGate(database, project, registry.id)
        gw.asks.tag = registry.id + "."
        sections.store = SharedSections(sections.store.max_bytes, sections.store.ttl, database=database)

        async def begun_elsewhere(session_id: str) -> None:      # its streams here hear of its tools
            await sessions.notify({"tools"}, only=session_id)

        limits = SharedLimits(database, project, registry.id, gw.views.limits,
                              float(os.environ.get(SYNC_ENV) or SYNC_S))
        return cls(registry, GateListener(database, project, registry.id, begun_elsewhere), limits)

    def forwarder(self, app: ASGIApp) -> Forwarder:
        forwarder = Forwarder(app, self.registry, self.client)
        self.forwarders.append(forwarder)
        return forwarder

    def client(self) -> Any:
        """The HTTP client forwarded requests go out on (opened on first use)."""
        if self._client is None:
            import httpx2

            self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, connect=CONNECT_S, read=None),
                                              limits=httpx2.Limits(max_connections=256, max_keepalive_connections=64))
        return self._client

    def listening(self, host: str, port: int) -> None:
        self.registry.listening(host, port)

    async def run(self, stop: anyio.Event) -> None:
        """Heartbeats (and the gate's listener, and the limits' sync) until `stop`; then leave the
        table and close the forwarding client."""
        if self.gate is not None:
            import asyncio

            self.gate.start(asyncio.get_running_loop())
        try:
            async with anyio.create_task_group() as tg:
                if self.limits is not None:
                    tg.start_soon(self.limits.run, stop)
                await self.registry.run(stop)
        finally:
            if self.gate is not None:
                self.gate.stop()
            if self._client is not None:
                with anyio.CancelScope(shield=True):
                    await self._client.aclose()
