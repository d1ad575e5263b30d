"""The resource store on PostgreSQL: `PgStore`, a `ResourceStore` on the tables of
`mcpctl.resources.pg_schema` (it shares no code with the files backend but observed status):

- `locked()` opens one transaction and takes a transaction-level advisory lock: writers on every
  host are serialised exactly as the files backend's flock serialises them on one, and all that
  is written inside commits together or not at all (`apply` of many documents, `delete` of many).
- Every write takes the next `resource_version_seq` value as the object's
  `metadata.resourceVersion`, which `find`/`list` return; `apply`/`edit` compare it (kubectl's rule).
- Observed status stays local (files), as the gateway on each host observes its own upstreams.
- `stamp()`/`tokens_stamp()`: the store's generation, counted by a process-wide LISTEN on
  `mcpctl_store` (`Watcher`), which reconnects each second when its connection drops and counts
  the reconnection as a change (whatever happened meanwhile is re-read).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from mcpctl.db import migrations, pool
from mcpctl.errors import MCPCtlError
from mcpctl.resources.kinds import KINDS
from mcpctl.resources.pg_schema import CHANNEL
from mcpctl.resources.store import StatusFiles, not_found

log = logging.getLogger("mcpctl.db")
_LOCK_KEY: Final = 0x6D63_7374  # "mcst": the store's writer lock


class PgStore:
    """The store in PostgreSQL (see the module docstring)."""

    def __init__(self, url: str, *, status_root: Path | None = None) -> None:
        """The store at `url`, not yet checked: `open` is what callers use."""
        self.url = url
        self.observed = StatusFiles(status_root)
        self._tlock = threading.RLock()
        self._depth = 0
        self._conn: Any = None
        self._owner: int | None = None

    @classmethod
    def open(cls, url: str, *, status_root: Path | None = None) -> PgStore:
        """The store at `url`; raises unless its schema is the one this mcpctl knows."""
        migrations.require("store", url)
        return cls(url, status_root=status_root)

    # -- transactions ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One transaction under the store's advisory lock (re-entrant within a thread)."""
        with self._tlock:
            if self._depth > 0:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            import psycopg

            with pool.connection(self.url) as conn:
                try:
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                        self._conn, self._owner, self._depth = conn, threading.get_ident(), 1
                        try:
                            yield
                        finally:
                            self._conn, self._owner, self._depth = None, None, 0
                except psycopg.OperationalError:
                    raise                   # the connection: `pool.connection` reports it
                except psycopg.Error as e:  # refused by the database (at commit too): rolled back
                    raise MCPCtlError(f"the database refused the change: {pool.first_line(e)}",
                                      hint="nothing was written") from None

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        """The locked transaction's connection in its own thread, else a pooled one."""
        if self._conn is not None and self._owner == threading.get_ident():
            yield self._conn
            return
        with pool.connection(self.url) as conn:
            yield conn

    # -- reading ---------------------------------------------------------------------------------

    @staticmethod
    def _object(body: dict[str, Any], rv: int) -> dict[str, Any]:
        meta = dict(body.get("metadata") or {})
        meta["resourceVersion"] = str(rv)
        return {**body, "metadata": meta}

    def names(self, kind_name: str) -> list[str]:
        KINDS[kind_name]
        with self._cursor() as conn:
            rows = conn.execute("SELECT name FROM resources WHERE kind = %s ORDER BY name", (kind_name,)).fetchall()
        return [str(r[0]) for r in rows]

    def find(self, kind_name: str, name: str) -> dict[str, Any] | None:
        KINDS[kind_name]
        with self._cursor() as conn:
            row = conn.execute("SELECT body, resource_version FROM resources WHERE kind = %s AND name = %s",
                               (kind_name, name)).fetchone()
        return None if row is None else self._object(row[0], int(row[1]))

    def get(self, kind_name: str, name: str) -> dict[str, Any]:
        res = self.find(kind_name, name)
        if res is None:
            raise not_found(kind_name, name, self.names(kind_name))
        return res

    def list(self, kind_name: str) -> list[dict[str, Any]]:
        KINDS[kind_name]
        with self._cursor() as conn:
            rows = conn.execute("SELECT body, resource_version FROM resources WHERE kind = %s ORDER BY name",
                                (kind_name,)).fetchall()
        return [self._object(b, int(rv)) for b, rv in rows]

    # -- writing ---------------------------------------------------------------------------------

    def put(self, res: dict[str, Any]) -> None:
        """Insert or replace; `res["metadata"]["resourceVersion"]` becomes the stored version."""
        from psycopg.types.json import Jsonb

        body = {**res, "metadata": {k: v for k, v in res["metadata"].items() if k != "resourceVersion"}}
        with self.locked(), self._cursor() as conn:
            row = conn.execute(
                "INSERT INTO resources (kind, name, body, resource_version) "
                "VALUES (%s, %s, %s, nextval('resource_version_seq')) "
                "ON CONFLICT (kind, name) DO UPDATE SET body = EXCLUDED.body, "
                "resource_version = EXCLUDED.resource_version, updated_at = now() RETURNING resource_version",
                (res["kind"], res["metadata"]["name"], Jsonb(body))).fetchone()
        res["metadata"]["resourceVersion"] = str(row[0])

    def delete(self, kind_name: str, name: str) -> None:
        with self.locked(), self._cursor() as conn:
            cur = conn.execute("DELETE FROM resources WHERE kind = %s AND name = %s", (kind_name, name))
            if cur.rowcount == 0:
                self.get(kind_name, name)      # raises NotFound with a hint
        self.observed.forget(kind_name, name)

    # -- token hashes ----------------------------------------------------------------------------

    def token_hashes(self) -> dict[str, str]:
        with self._cursor() as conn:
            return {str(n): str(h) for n, h in conn.execute("SELECT name, sha256 FROM token_hashes").fetchall()}

    def token_hash(self, name: str) -> str | None:
        with self._cursor() as conn:
            row = conn.execute("SELECT sha256 FROM token_hashes WHERE name = %s", (name,)).fetchone()
        return None if row is None else str(row[0])

    def put_token_hash(self, name: str, sha256: str) -> None:
        with self.locked(), self._cursor() as conn:
            conn.execute("INSERT INTO token_hashes (name, sha256) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256", (name, sha256))

    def delete_token_hash(self, name: str) -> None:
        with self.locked(), self._cursor() as conn:
            conn.execute("DELETE FROM token_hashes WHERE name = %s", (name,))

    # -- change detection ------------------------------------------------------------------------

    def generation(self) -> object:
        """Changes whenever anything in the store may have: the process's count of notifications
        (`Watcher`), which also counts each reconnection of its LISTEN (changes may have been
        missed meanwhile). Asks the database nothing, so a gateway answering with the database away
        does not wait for it on every request."""
        return watcher(self.url).generation()

    def stamp(self, kind_name: str, name: str) -> object | None:
        return self.generation()

    def tokens_stamp(self) -> object:
        return self.generation()

    # -- observed status (local files, as on the files backend) ----------------------------------

    def status(self, kind_name: str, name: str) -> dict[str, Any]:
        return self.observed.status(kind_name, name)

    def set_status(self, kind_name: str, name: str, status: dict[str, Any]) -> None:
        self.observed.set_status(kind_name, name, status)


class Watcher:
    """A thread LISTENing on `mcpctl_store`: `generation()` counts notifications and reconnections.
    Reconnects each second when its connection drops."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._gen = 0
        self._up = threading.Event()
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcpctl-db-listen", daemon=True)
        self._thread.start()
        self._up.wait(timeout=pool.CONNECT_TIMEOUT)

    def generation(self) -> int:
        return self._gen

    @property
    def listening(self) -> bool:
        return self._up.is_set()

    def wait_changed(self, after: int, timeout: float) -> int:
        """Block until the generation passes `after` (or `timeout`); the generation now."""
        with self._changed:
            self._changed.wait_for(lambda: self._gen != after or self._stop.is_set(), timeout=timeout)
            return self._gen

    def _bump(self) -> None:
        with self._changed:
            self._gen += 1
            self._changed.notify_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn = pool.listen_connection(self.url)
            except Exception as e:
                log.warning("cannot listen for store changes: %s", e)
                self._stop.wait(1.0)
                continue
            try:
                with conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._bump()                 # whatever changed while not listening
                    self._up.set()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0):
                            self._bump()
            except Exception as e:
                log.warning("store change listener lost its connection: %s", e)
            finally:
                self._up.clear()
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=3)


_watchers: dict[str, Watcher] = {}
_wlock = threading.Lock()


def watcher(url: str) -> Watcher:
    """The process's watcher for `url`, started on first use."""
    with _wlock:
        w = _watchers.get(url)
        if w is None:
            w = _watchers[url] = Watcher(url)
        return w


def stop_watchers() -> None:
    with _wlock:
        ws = list(_watchers.values())
        _watchers.clear()
    for w in ws:
        w.stop()


__all__ = ["PgStore", "Watcher", "stop_watchers", "watcher"]
