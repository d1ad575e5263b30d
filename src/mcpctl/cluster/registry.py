"""This replica in the `replicas` table, and the other live ones in memory.

A replica's id is fresh at each start (8 hex digits), so a restarted replica never claims the
sessions of its previous life: they are answered 404 and their clients start new ones. The id
prefixes the ids it mints (`Mcp-Session-Id`: `ID.SDKID`; a parked call's `requestState`:
`mcpctl:ID.TOKEN`), so the owner of a request is read from the request itself.

The heartbeat (every `BEAT_S`) refreshes this replica's row, deletes rows staler than `STALE_S`
and reads the live replicas into `peers`. A request naming a replica `peers` does not know
refreshes it at once (at most once a second): a replica started since the last heartbeat is
found without waiting. Every database call runs in a worker thread.
"""

from __future__ import annotations

import logging
import secrets
import socket
from typing import Final

import anyio

from mcpctl.db import pool

log = logging.getLogger("mcpctl.cluster")

BEAT_S: Final = 2.0          # heartbeat period
STALE_S: Final = 10.0        # a replica silent this long is gone
REFRESH_S: Final = 1.0       # a request naming an unknown replica re-reads the table at most this often
WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})


def default_url(host: str, port: int) -> str:
    """Where other replicas reach this one when `--advertise-url` is not given: the bound address,
    or for a wildcard bind this host's own address (a pod's IP in Kubernetes)."""
    if host in WILDCARDS:
        name = socket.gethostname()
        try:
            host = socket.gethostbyname(name)
        except OSError:
            host = name
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


class Registry:
    """This replica's id, secret and address, and the live replicas (id -> base URL)."""

    def __init__(self, database: str, advertise: str | None = None, host: str = "") -> None:
        self.database = database
        self.id = secrets.token_hex(4)
        self.url = advertise.rstrip("/").removesuffix("/mcp") if advertise else None
        self.host = host or socket.gethostname()
        self.secret = b""
        self.peers: dict[str, str] = {}
        self._refreshed = -REFRESH_S
        self._refresh_lock = anyio.Lock()
        self._known = anyio.Event()      # the address is known: heartbeats begin

    # -- the database (each in a worker thread) ----------------------------------------------------

    def load_secret(self) -> None:
        """Read the cluster's hop secret, writing a fresh one if there is none yet."""
        with pool.connection(self.database) as conn:
            conn.execute("INSERT INTO cluster_secret (id, secret) VALUES (1, %s) ON CONFLICT (id) DO NOTHING",
                         (secrets.token_urlsafe(32),))
            row = conn.execute("SELECT secret FROM cluster_secret WHERE id = 1").fetchone()
        if row is None:        # pragma: no cover - written just above
            raise RuntimeError("the cluster's secret could not be read")
        self.secret = str(row[0]).encode()

    def beat(self) -> None:
        """Register or refresh this replica, forget the stale ones, read the live ones."""
        with pool.connection(self.database) as conn:
            conn.execute("INSERT INTO replicas (id, url, host) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                         "SET url = EXCLUDED.url, heartbeat_at = now()", (self.id, self.url, self.host))
            conn.execute("DELETE FROM replicas WHERE heartbeat_at < now() - make_interval(secs => %s)", (STALE_S,))
            rows = conn.execute("SELECT id, url FROM replicas").fetchall()
        self.peers = {str(rid): str(url) for rid, url in rows if rid != self.id}

    def leave(self) -> None:
        with pool.connection(self.database) as conn:
            conn.execute("DELETE FROM replicas WHERE id = %s", (self.id,))

    def _read_peers(self) -> None:
        with pool.connection(self.database) as conn:
            rows = conn.execute("SELECT id, url FROM replicas WHERE heartbeat_at >= now() - "
                                "make_interval(secs => %s)", (STALE_S,)).fetchall()
        self.peers = {str(rid): str(url) for rid, url in rows if rid != self.id}

    # -- serving -------------------------------------------------------------------------------------

    def listening(self, host: str, port: int) -> None:
        """The port is bound: the address to advertise is known (unless given)."""
        if self.url is None:
            self.url = default_url(host, port)
        self._known.set()

    async def run(self, stop: anyio.Event) -> None:
        """Heartbeats until `stop`, then the row is deleted (a replica killed leaves it to go stale)."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_on, stop, tg.cancel_scope)
                await self._known.wait()
                while True:
                    try:
                        await anyio.to_thread.run_sync(self.beat)
                    except Exception as e:       # the database away: peers stay as last read
                        log.warning("replica heartbeat failed: %s", pool.first_line(e))
                    await anyio.sleep(BEAT_S)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await anyio.to_thread.run_sync(self.leave)
                except Exception as e:
                    log.warning("leaving the replicas table failed: %s", pool.first_line(e))

    async def url_of(self, rid: str) -> str | None:
        """The base URL of live replica `rid`, or None (gone, or never known)."""
        url = self.peers.get(rid)
        if url is not None:
            return url
        async with self._refresh_lock:
            if anyio.current_time() - self._refreshed >= REFRESH_S:
                self._refreshed = anyio.current_time()
                try:
                    await anyio.to_thread.run_sync(self._read_peers)
                except Exception as e:
                    log.warning("reading the replicas table failed: %s", pool.first_line(e))
        return self.peers.get(rid)


async def _cancel_on(stop: anyio.Event, scope: anyio.CancelScope) -> None:
    await stop.wait()
    scope.cancel()
