"""The gateway's writer of the PostgreSQL log: batches off the call path, a local spool when the
database is unreachable, drained when it returns.

`SpoolingWriter` has the interface of `audit.writer.BackgroundWriter` (`submit`, `flush`,
`close`, `write_now`, `written`, `dropped`). Its thread takes what the event loop handed over
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

import atexit
import contextlib
import logging
import queue
import threading
import time
import uuid
from typing import Any, Final

from mcpctl.audit.pglog import COPY, INSERT, PgInvocationLog
from mcpctl.audit.records import CallRecord
from mcpctl.audit.spool import Row, Spool

log = logging.getLogger("mcpctl.audit.log")

# At most one transaction per MIN_INTERVAL_S: under load, fewer and larger batches cost the
# database (on the gateway's cores, often) less per call; a row waits at most this long more.
MIN_INTERVAL_S: Final = 0.05
RETRY_S: Final = 1.0              # while the database is unreachable: how often to try it again
CONNECT_TIMEOUT_S: Final = 3      # a connection attempt (then the batch is spooled)
STATEMENT_TIMEOUT_MS: Final = 10_000


class SpoolingWriter:
    """Batches records into PostgreSQL on one thread; spools them to disk while it is unreachable."""

    def __init__(self, log_: PgInvocationLog, *, spool: Spool | None = None, max_batch: int = 1000,
                 max_queue: int = 200_000, drain_timeout: float = 20.0) -> None:
        self.log = log_
        self.spool = spool if spool is not None else Spool()
        self.max_batch = max(1, max_batch)
        self.drain_timeout = drain_timeout
        self.written = 0                # rows committed to the database (straight or from the spool)
        self.dropped = 0                # rows lost: the queue was full, or the spool over its cap
        self.spooled = 0                # rows that went through the spool
        self.down = False               # the last attempt failed: rows go to the spool
        self._conn: Any = None
        self._next_try = 0.0
        self._last_write = 0.0
        self._queue: queue.Queue[Row | threading.Event | None] = queue.Queue(maxsize=max_queue)
        self._closed = False
        self._close_lock = threading.Lock()
        self._io = threading.Lock()     # the connection and the spool: the thread, or write_now after close
        self._pending = self.spool.has_pending()    # rows a previous gateway here left behind
        self._thread = threading.Thread(target=self._run, name="mcpctl-invocation-log-pg", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- the event loop's side --------------------------------------------------------------

    def submit(self, rec: CallRecord) -> None:
        """Queue `rec`; never blocks, never raises."""
        try:
            if self._closed:
                self.write_now(rec)
                return
            self._queue.put_nowait((uuid.uuid4(), rec))
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("invocation log queue full; %d record(s) dropped", self.dropped)
        except Exception:  # pragma: no cover - submit must never raise into the gateway
            self.dropped += 1

    def write_now(self, rec: CallRecord) -> None:
        """Write `rec` before returning (to the database, else the spool): after `close`."""
        with self._io:
            self._write([(uuid.uuid4(), rec)])
            if self._closed:
                self.spool.seal()      # no thread drains it now: leave it to the next gateway here

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Block until everything submitted before is in the database or the spool; False on timeout."""
        if self._closed or not self._thread.is_alive():
            return False
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def drain_spool(self, timeout: float = 10.0) -> bool:
        """Try the database now and write the spool into it; True when nothing is left spooled."""
        with self._io:
            self._next_try = 0.0
            self._try_drain(time.monotonic() + timeout)
            return not self.spool.has_pending()

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, drain the spool (at most `drain_timeout` s), stop the thread."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.close)
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
        with self._io:
            self._next_try = 0.0
            self._try_drain(time.monotonic() + self.drain_timeout)
            if self.spool.has_pending():
                log.warning("invocation log: %d byte(s) of rows stay spooled in %s (the database is "
                            "unreachable); the next gateway here writes them", self.spool.pending_bytes(),
                            self.spool.dir)
            self.spool.close()

    # -- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            try:
                item = self._queue.get(timeout=RETRY_S if self._pending else None)
            except queue.Empty:
                with self._io:
                    self._try_drain(time.monotonic() + RETRY_S)
                continue
            batch, events, stop = self._gather(item)
            with self._io:
                self._last_write = time.monotonic()
                self._write(batch)
                if self._pending and not self.down:
                    self._try_drain(time.monotonic() + RETRY_S)
            for ev in events:
                ev.set()

    def _gather(self, item: Row | threading.Event | None) -> tuple[list[Row], list[threading.Event], bool]:
        """`item` and what else comes until MIN_INTERVAL_S after the previous write began (or a
        flush or close asks, or max_batch is reached): one transaction per interval at most."""
        batch: list[Row] = []
        events: list[threading.Event] = []
        stop = False
        not_before = self._last_write + MIN_INTERVAL_S
        while True:
            if item is None:
                stop = True
            elif isinstance(item, threading.Event):
                events.append(item)
            else:
                batch.append(item)
            if stop or events or len(batch) >= self.max_batch:
                return batch, events, stop
            wait = not_before - time.monotonic()
            try:
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                return batch, events, stop

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
        from dataclasses import astuple

        conn = self._connection()
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(INSERT, [(uid, *astuple(r)) for uid, r in rows])

    def _copy(self, rows: list[Row]) -> None:
        """A batch's first attempt: COPY (the cheapest insert for the database). Its uids are new,
        so nothing conflicts; a batch that may have committed before an error is written again
        from the spool by `_insert`, which skips the uids already there."""
        from dataclasses import astuple

        conn = self._connection()
        with conn.transaction(), conn.cursor() as cur, cur.copy(COPY) as copy:
            for uid, r in rows:
                copy.write_row((uid, *astuple(r)))

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            import psycopg

            self._conn = psycopg.connect(self.log.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                         options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
        return self._conn
