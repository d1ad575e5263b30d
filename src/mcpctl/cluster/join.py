"""`Cluster`: how a gateway's HTTP front joins the other replicas on its database.

`Cluster.join` (at the gateway's start, when a database is configured) checks the `cluster`
schema, reads the hop secret, and puts what must outlive this replica in PostgreSQL: the gate's
begun sessions (`shared.SharedGate`), cut results (`shared.SharedSections`), and this replica's
id in the parked calls' `requestState` (the gateway's `asks.Asks.tag`). `forwarder(app)` wraps the
HTTP front's app (`forward.Forwarder`); `run(stop)` keeps the heartbeat until `stop`.
"""

from __future__ import annotations

import os
from typing import Any, Final, Protocol

import anyio

from mcpctl.cluster.forward import ASGIApp, Forwarder
from mcpctl.cluster.registry import Registry
from mcpctl.cluster.shared import SharedGate, SharedSections
from mcpctl.presentation.sections import SectionStore

ADVERTISE_ENV: Final = "MCPCTL_ADVERTISE_URL"
CONNECT_S: Final = 3.0          # a replica that does not accept a connection this fast is gone


class _Sessions(Protocol):
    shared: SharedGate | None


class _Asks(Protocol):
    tag: str


class _Sections(Protocol):
    store: SectionStore


class Cluster:
    """This replica among the others (see the module docstring)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.forwarders: list[Forwarder] = []
        self._client: Any = None

    @classmethod
    async def join(cls, database: str, project: str, sessions: _Sessions, asks: _Asks, sections: _Sections,
                   advertise: str | None = None, host: str = "") -> Cluster:
        """`advertise`: the base URL other replicas reach this one at (`--advertise-url`, else
        MCPCTL_ADVERTISE_URL, else the bound address: `registry.default_url`)."""
        from mcpctl.db.migrations import require

        await anyio.to_thread.run_sync(require, "cluster", database)
        registry = Registry(database, advertise or os.environ.get(ADVERTISE_ENV) or None, host)
        await anyio.to_thread.run_sync(registry.load_secret)
        sessions.shared = SharedGate(database, project)
        asks.tag = registry.id + "."
        sections.store = SharedSections(sections.store.max_bytes, sections.store.ttl, database=database)
        return cls(registry)

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
        """Heartbeats until `stop`; then leave the table and close the forwarding client."""
        try:
            await self.registry.run(stop)
        finally:
            if self._client is not None:
                with anyio.CancelScope(shield=True):
                    await self._client.aclose()
