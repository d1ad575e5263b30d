"""`QueuedWriter`: the skeleton both log writers share (SQLite's `audit.writer.BackgroundWriter`,
PostgreSQL's `audit.pgwriter.SpoolingWriter`).

The event loop hands records over with `submit`, which never blocks and never raises; one thread
takes what was queued and commits it in batches (group commit: whatever queued while the previous
batch was written goes into the next one). `flush` waits until what was submitted before it is
written; `close` writes what is queued and stops the thread (it does not close the log, which the
caller owns). A subclass says how a batch is committed (`_commit`), how long to gather one
(`_gather_deadline`), what to do while idle (`_idle_timeout`, `_idle`), with a record submitted
after `close` (`_submit_closed`) and after the thread stopped (`_closed_down`).
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time

from mcpctl.audit.records import CallRecord

log = logging.getLogger("mcpctl.audit.log")   # the log module's logger, as before the split

_Item = CallRecord | list[CallRecord] | threading.Event | None


class QueuedWriter:
    """Batches records from any thread into a log on one writer thread (see the module docstring)."""

    def __init__(self, *, max_batch: int, max_queue: int, thread_name: str) -> None:
        self.max_batch = max(1, max_batch)
        self.written = 0                # rows committed
        self.dropped = 0                # rows lost (the queue was full, or the backend's own reasons)
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=max_queue)
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def _start(self) -> None:
        """Start the thread (a subclass calls it at the end of its `__init__`)."""
        self._thread.start()
        atexit.register(self.close)

    # -- the event loop's side --------------------------------------------------------------

    def submit(self, rec: CallRecord) -> None:
        """Queue `rec`; never blocks, never raises."""
        try:
            if self._closed:
                self._submit_closed(rec)
                return
            self._queue.put_nowait(rec)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("invocation log queue full; %d record(s) dropped", self.dropped)
        except Exception:  # pragma: no cover - submit must never raise into the gateway
            self.dropped += 1

    def submit_many(self, recs: list[CallRecord]) -> None:
        """Queue `recs` (a list the caller no longer touches) as one item: one hand-over to the
        thread however many records; never blocks, never raises."""
        if len(recs) <= 1 or self._closed:     # none or one: as `submit` (nothing queued for none)
            for rec in recs:
                self.submit(rec)
            return
        try:
            self._queue.put_nowait(recs)
        except queue.Full:
            self.dropped += len(recs)
            log.warning("invocation log queue full; %d record(s) dropped", self.dropped)
        except Exception:  # pragma: no cover - submit must never raise into the gateway
            self.dropped += len(recs)

    def write_now(self, rec: CallRecord) -> None:
        """Write `rec` before returning (the recorder's path once the gateway is stopping)."""
        raise NotImplementedError

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Block until everything submitted before this call is written; False on timeout."""
        if self._closed or not self._thread.is_alive():
            return False
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued and stop the thread, then `_closed_down`."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.close)
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
        self._closed_down(timeout)

    # -- what a backend says ----------------------------------------------------------------

    def _commit(self, batch: list[CallRecord]) -> None:
        """Write one batch (on the writer thread)."""
        raise NotImplementedError

    def _gather_deadline(self) -> float:
        """When to stop gathering a batch that has begun (a `time.monotonic()` value)."""
        return time.monotonic()

    def _idle_timeout(self) -> float | None:
        """How long the thread waits for a record before `_idle` (None: for ever)."""
        return None

    def _idle(self) -> None:
        """Called on the writer thread when nothing came for `_idle_timeout` seconds."""

    def _submit_closed(self, rec: CallRecord) -> None:
        """A record submitted after `close`: dropped unless the backend writes it."""
        self.dropped += 1

    def _closed_down(self, timeout: float) -> None:
        """After the thread stopped (`close`)."""

    # -- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            try:
                item = self._queue.get(timeout=self._idle_timeout())
            except queue.Empty:
                self._idle()
                continue
            batch, events, stop = self._gather(item)
            if stop:  # what was queued before close()
                self._drain_queue(batch, events)
            self._commit(batch)
            for ev in events:
                ev.set()

    def _gather(self, item: _Item) -> tuple[list[CallRecord], list[threading.Event], bool]:
        """`item` and what else comes until `_gather_deadline()` (or a flush or close asks, or
        max_batch is reached)."""
        batch: list[CallRecord] = []
        events: list[threading.Event] = []
        stop = False
        deadline = self._gather_deadline()
        while True:
            if item is None:
                stop = True
            elif isinstance(item, threading.Event):
                events.append(item)
            elif isinstance(item, list):
                batch.extend(item)
            else:
                batch.append(item)
            if stop or events or len(batch) >= self.max_batch:
                return batch, events, stop
            wait = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                return batch, events, stop

    def _drain_queue(self, batch: list[CallRecord], events: list[threading.Event]) -> None:
        while True:
            try:
                extra = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(extra, CallRecord):
                batch.append(extra)
            elif isinstance(extra, list):
                batch.extend(extra)
            elif isinstance(extra, threading.Event):
                events.append(extra)
