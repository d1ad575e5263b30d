"""The gateway's writer of the PostgreSQL log: batches off the call path, a local spool when the
database is unreachable, drained when it returns.

`SpoolingWriter` is a `audit.queued.QueuedWriter`, as SQLite's `audit.writer.BackgroundWriter`
(`submit`, `flush`, `close`, `write_now`, `written`, `dropped`). Its thread takes what the event loop handed over
(group commit: whatever queued while the previous batch was written goes into the next one) and
writes it in one transaction (COPY; from the spool, `executemany` skipping uids already there) on a
connection of its own. When that
fails (the database is down or unreachable) the batch goes to the spool (`audit.spool`) and so do
the following ones, without waiting on the database, until a retry every RETRY_S seconds gets
through; then the spool drains, oldest rows first. Each call carries a uid: a batch that reaches
the database twice is one row per call.

Guarantees: a call's row is in PostgreSQL or in the spool file within one batch's time of the
call (a transaction, or a failed connection attempt, at most CONNECT_TIMEOUT_S); a kill -9 loses
only rows not yet handed to either (docs/team-log.md). SIGTERM (`close`) writes what is queued,
then drains the spool for at most `drain_timeout` seconds; what is still spooled then stays on
disk and the next gateway on this host drains it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from typing import Any, Final

from mcpctl.audit.pglog import COPY, INSERT, PgInvocationLog
from mcpctl.audit.queued import QueuedWriter
from mcpctl.audit.records import CallRecord, row
from mcpctl.audit.spool import Row, Spool

log = logging.getLogger("mcpctl.audit.log")

# At most one transaction per MIN_INTERVAL_S: under load, fewer and larger batches cost the
# database (on the gateway's cores, often) less per call; a row waits at most this long more.
MIN_INTERVAL_S: Final = 0.05
RETRY_S: Final = 1.0              # while the database is unreachable: how often to try it again
CONNECT_TIMEOUT_S: Final = 3      # a connection attempt (then the batch is spooled)
STATEMENT_TIMEOUT_MS: Final = 10_000


class SpoolingWriter(QueuedWriter):
    """Batches records into PostgreSQL on one thread; spools them to disk while it is unreachable."""

    def __init__(self, log_: PgInvocationLog, *, spool: Spool | None = None, max_batch: int = 1000,
                 max_queue: int = 200_000, drain_timeout: float = 20.0) -> None:
        super().__init__(max_batch=max_batch, max_queue=max_queue, thread_name="mcpctl-invocation-log-pg")
        self.log = log_
        self.spool = spool if spool is not None else Spool()
        self.drain_timeout = drain_timeout
        self.spooled = 0                # rows that went through the spool
        self.down = False               # the last attempt failed: rows go to the spool
        self._conn: Any = None
        self._next_try = 0.0
        self._last_write = 0.0
        self._io = threading.Lock()     # the connection and the spool: the thread, or write_now after close
        self._pending = self.spool.has_pending()    # rows a previous gateway here left behind
        self._start()

    # -- the event loop's side --------------------------------------------------------------

    def _submit_closed(self, rec: CallRecord) -> None:
        self.write_now(rec)

    def write_now(self, rec: CallRecord) -> None:
        """Write `rec` before returning (to the database, else the spool): after `close`."""
        with self._io:
            self._write([(uuid.uuid4(), rec)])
            if self._closed:
                self.spool.seal()      # no thread drains it now: leave it to the next gateway here

    def _closed_down(self, timeout: float) -> None:
        """Drain the spool (at most `drain_timeout` s) once the queue is written."""
        with self._io:
            self._next_try = 0.0
            self._try_drain(time.monotonic() + self.drain_timeout)
            if self.spool.has_pending():
                log.warning("invocation log: %d byte(s) of rows stay spooled in %s (the database is "
                            "unreachable); the next gateway here writes them", self.spool.pending_bytes(),
                            self.spool.dir)
            self.spool.close()

    # -- the writer thread ------------------------------------------------------------------

    def _idle_timeout(self) -> float | None:
        return RETRY_S if self._pending else None

    def _idle(self) -> None:
        with self._io:
            self._try_drain(time.monotonic() + RETRY_S)

    def _gather_deadline(self) -> float:
        """MIN_INTERVAL_S after the previous write began: one transaction per interval at most."""
        return self._last_write + MIN_INTERVAL_S

    def _commit(self, batch: list[CallRecord]) -> None:
        """Each call gets its uid here, and keeps it in the spool: written twice, it is one row."""
        with self._io:
            self._last_write = time.monotonic()
            self._write([(uuid.uuid4(), rec) for rec in batch])
            if self._pending and not self.down:
                self._try_drain(time.monotonic() + RETRY_S)

    def _write(self, batch: list[Row]) -> None:
        if not batch:
            return
        if not self.down or time.monotonic() >= self._next_try:
            try:
                self._copy(batch)
                self.written += len(batch)
                if self.down:
                    lost = f" ({self.spool.dropped} row(s) were dropped at the spool's cap, {self.spool.cap_bytes} " \
                        f"bytes: MCPCTL_LOG_SPOOL_BYTES)" if self.spool.dropped else ""
                    log.warning("invocation log: the database is back; draining the spool%s", lost)
                self.down = False
                return
            except Exception as e:
                self._failed(e)
        self._to_spool(batch)

    def _to_spool(self, batch: list[Row]) -> None:
        before = self.spool.dropped
        try:
            self.spool.append(batch)
            self.spooled += len(batch)
            self._pending = True
        except OSError as e:
            self.dropped += len(batch)
            log.error("invocation log: %d record(s) lost: the spool %s cannot be written: %s",
                      len(batch), self.spool.dir, e)
        self.dropped += self.spool.dropped - before

    def _failed(self, e: Exception) -> None:
        if not self.down:
            log.warning("invocation log: the database is unreachable (%s: %s); spooling rows to %s",
                        type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "", self.spool.dir)
        self.down = True
        self._next_try = time.monotonic() + RETRY_S
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _try_drain(self, deadline: float) -> None:
        if not self._pending and not self.spool.has_pending():
            return
        if self.down and time.monotonic() < self._next_try:
            return
        try:
            n = self.spool.drain(self._insert_counted, deadline=deadline)
            self.down = False
            if n:
                log.info("invocation log: %d spooled row(s) written", n)
            self._pending = self.spool.has_pending()
        except Exception as e:
            self._failed(e)

    def _insert_counted(self, rows: list[Row]) -> None:
        self._insert(rows)
        self.written += len(rows)

    def _insert(self, rows: list[Row]) -> None:
        conn = self._connection()
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(INSERT, [(uid, *row(r)) for uid, r in rows])

    def _copy(self, rows: list[Row]) -> None:
        """A batch's first attempt: COPY (the cheapest insert for the database). Its uids are new,
        so nothing conflicts; a batch that may have committed before an error is written again
        from the spool by `_insert`, which skips the uids already there."""
        conn = self._connection()
        with conn.transaction(), conn.cursor() as cur, cur.copy(COPY) as copy:
            for uid, r in rows:
                copy.write_row((uid, *row(r)))

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            import psycopg

            self._conn = psycopg.connect(self.log.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                         options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
        return self._conn
