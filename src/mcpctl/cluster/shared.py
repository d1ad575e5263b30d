"""What a request may need from an earlier one, in PostgreSQL, so that any replica answers it.

- `SharedSections`: results cut into sections. A cut result is kept in this replica's memory (the
  `SectionStore` it extends: its byte cap, its expiry, its eviction order) and written to
  `result_sections` before the client gets its `result_id`; a `read_result` this replica cannot
  answer from memory reads the row, for the same owner (session id and credential) only, until it
  expires (`results.keepMinutes`). A replica killed takes nothing with it. The database's rows
  expire by time; the byte cap is each replica's (a result evicted from memory stays readable from
  the database until it expires). One INSERT per cut result, one SELECT per section read elsewhere.
- `SharedGate`: the sessions past the session gate, per project (`gate_begun`). `begin_session`
  writes the row; a replica that has not seen a session begin asks once and remembers the answer
  when it is yes (a session never goes back behind the gate), so only a gated project's sessions
  not yet begun cost a lookup. The row's writer also sends `NOTIFY mcpctl_gate`: `GateListener`
  (a thread with a LISTEN connection of its own) tells the other replicas, which send that
  session's `subscriptions/listen` streams open on them its new tool list's `list_changed`.

Both are called from the call path's synchronous code, so each is one short indexed statement on
a pooled connection; a database error is logged and answered as "not here".
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.db import pool
from mcpctl.presentation.sections import Cut, Owner, SectionError, SectionStore, section_text

log = logging.getLogger("mcpctl.cluster")

GATE_DAYS: Final = 30           # a begun session's row is kept this long
CHANNEL: Final = "mcpctl_gate"  # NOTIFY payload: project, replica id, session id (tab-separated)


@dataclass
class SharedSections(SectionStore):
    """A `SectionStore` whose results are also in PostgreSQL (see the module docstring)."""

    database: str = ""

    def put(self, owner: Owner, text: str, cut: Cut) -> str | None:
        rid = super().put(owner, text, cut)
        if rid is None:
            return None
        try:
            with pool.connection(self.database) as conn:
                conn.execute("DELETE FROM result_sections WHERE expires_at < now()")
                conn.execute("INSERT INTO result_sections (id, session_id, credential, text, kind, bounds, size, "
                             "expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s, now() + make_interval(secs => %s))",
                             (rid, owner[0], owner[1], text, cut.kind, json.dumps(cut.bounds), len(text), self.ttl))
        except Exception as e:
            log.warning("keeping result %s in the database failed (it is kept in this replica only): %s",
                        rid, pool.first_line(e))
        return rid

    def read(self, owner: Owner, result_id: str, section: int) -> tuple[str, int]:
        try:
            return super().read(owner, result_id, section)
        except SectionError as local:
            try:
                with pool.connection(self.database) as conn:
                    row = conn.execute("SELECT text, kind, bounds FROM result_sections WHERE id = %s AND "
                                       "session_id = %s AND credential IS NOT DISTINCT FROM %s AND "
                                       "expires_at > now()", (result_id, owner[0], owner[1])).fetchone()
            except Exception as e:
                log.warning("reading result %s from the database failed: %s", result_id, pool.first_line(e))
                raise local from None
            if row is None:
                raise
            text, kind, bounds = str(row[0]), str(row[1]), json.loads(row[2])
            cut = Cut(kind, tuple((int(a), int(b)) for a, b in bounds))
            n = len(cut.bounds)
            if not 1 <= section <= n:
                raise SectionError(f"result {result_id!r} has sections 1 to {n}; section {section} does not "
                                   "exist") from None
            return section_text(text, cut, section - 1), n


class SharedGate:
    """The sessions of `project` past the gate, in PostgreSQL (see the module docstring)."""

    def __init__(self, database: str, project: str, source: str = "") -> None:
        self.database, self.project, self.source = database, project, source

    def begun(self, session_id: str) -> bool:
        try:
            with pool.connection(self.database) as conn:
                row = conn.execute("SELECT 1 FROM gate_begun WHERE project = %s AND session_id = %s",
                                   (self.project, session_id)).fetchone()
        except Exception as e:
            log.warning("reading the gate's sessions failed: %s", pool.first_line(e))
            return False
        return row is not None

    def begin(self, session_id: str) -> None:
        try:
            with pool.connection(self.database) as conn:
                conn.execute("INSERT INTO gate_begun (project, session_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                             (self.project, session_id))
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.project}\t{self.source}\t{session_id}"))
                conn.execute("DELETE FROM gate_begun WHERE begun_at < now() - make_interval(days => %s)",
                             (GATE_DAYS,))
        except Exception as e:
            log.warning("writing the gate's session failed: %s", pool.first_line(e))


class GateListener:
    """Sessions of `project` begun on other replicas than `source`, heard by LISTEN in a thread of
    its own: `on_begun(session_id)` runs in `loop`. Reconnects each second while the database is
    away (a session begun meanwhile is still found by `SharedGate.begun`; only its notification
    to streams on this replica is lost)."""

    def __init__(self, database: str, project: str, source: str,
                 on_begun: Callable[[str], Coroutine[Any, Any, None]]) -> None:
        self.database, self.project, self.source, self.on_begun = database, project, source, on_begun
        self._stop = threading.Event()
        self.listening = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._thread = threading.Thread(target=self._run, args=(loop,), name="mcpctl-gate-listen", daemon=True)
        self._thread.start()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stop.is_set():
            try:
                with pool.listen_connection(self.database) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    while not self._stop.is_set():
                        for n in conn.notifies(timeout=1.0):
                            self._heard(loop, n.payload)
            except Exception as e:
                log.warning("the gate's listener lost its connection: %s", pool.first_line(e))
            finally:
                self.listening.clear()
            self._stop.wait(1.0)

    def _heard(self, loop: asyncio.AbstractEventLoop, payload: str) -> None:
        project, source, session_id = [*payload.split("\t", 2), "", ""][:3]
        if project == self.project and source != self.source and session_id:
            asyncio.run_coroutine_threadsafe(self.on_begun(session_id), loop)

    def stop(self, wait: float = 0.0) -> None:
        """Stop listening: the thread ends within a second (`wait`: seconds to wait for it)."""
        self._stop.set()
        if self._thread is not None and wait:
            self._thread.join(timeout=wait)
