"""The gateway's writer of the SQLite invocation log: a thread that commits what the event loop
hands it (the skeleton: `audit.queued.QueuedWriter`; which writer a gateway uses:
`mcpctl.storage.Storage.writer`).

`BackgroundWriter.submit` never blocks the loop; batches are group-committed, WAL checkpoints run
on a helper thread (docs/internals.md, "Guarantees: the invocation log and manifests"). They are
SQLite's alone: the PostgreSQL log has none.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import Final

from mcpctl.audit.log import BUSY_TIMEOUT_S, CallRecord, InvocationLog
from mcpctl.audit.queued import QueuedWriter

log = logging.getLogger("mcpctl.audit.log")   # the log module's logger, as before the split

# The BackgroundWriter's transactions between two WAL checkpoints, which it runs on a helper
# thread (SQLite's own default runs one inside a commit every ~1000 WAL pages, and its fsync
# holds back every record queued behind that commit).
CHECKPOINT_EVERY: Final = 256
# A checkpoint that runs while another thread writes may never empty the WAL, so under sustained
# writes the WAL grows; past WAL_SIZE_CAP bytes the writer checkpoints once itself, which lets its
# next commit start the WAL over, and the file is then cut back to WAL_SIZE_LIMIT bytes.
WAL_SIZE_CAP: Final = 16 * 1024 * 1024
WAL_SIZE_LIMIT: Final = 4 * 1024 * 1024


class BackgroundWriter(QueuedWriter):
    """Batches records from any thread into SQLite's `record_many` on one writer thread.

    `submit` never blocks and never raises: the gateway's event loop must not wait on disk.
    If the queue is full (the disk is stuck) records are dropped and counted in `dropped`.
    `close` flushes and stops the thread; it does not close the log, which the caller owns.

    Durability: by default (`flush_interval=0`) a batch is written as soon as the writer is free:
    whatever was queued while the previous transaction ran goes into the next one (group commit),
    so under any load a submitted record is committed within about one transaction's time. A
    committed row survives the process being killed (WAL; `synchronous=NORMAL` only gives up the
    last transactions on power loss or an OS crash). A positive `flush_interval` waits that long
    for more records before writing, trading that window for fewer, larger transactions.
    WAL checkpoints (they fsync) run on a helper thread every CHECKPOINT_EVERY transactions,
    not inside the writer's commits; only a WAL grown past WAL_SIZE_CAP (sustained writes starve
    the helper's checkpoints) makes the writer checkpoint once itself.
    """

    def __init__(self, log: InvocationLog, *, flush_interval: float = 0.0, max_batch: int = 512,
                 max_queue: int = 100_000) -> None:
        super().__init__(max_batch=max_batch, max_queue=max_queue, thread_name="mcpctl-invocation-log")
        self.log = log
        self.flush_interval = flush_interval
        self.checkpoints = 0
        self._since_checkpoint = 0
        self._checkpoint_requested = False
        self._checkpoint_wake = threading.Event()
        self._check_wal = False         # the writer looks at the WAL's size after the next batch
        self._checkpointing = threading.Lock()    # one checkpoint at a time (helper or writer)
        self._stopping = False
        log.set_autocheckpoint(0, wal_size_limit=WAL_SIZE_LIMIT)
        self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="mcpctl-log-checkpoint",
                                              daemon=True)
        self._start()
        self._checkpointer.start()

    def write_now(self, rec: CallRecord) -> None:
        """Write `rec` before returning (the recorder's path once the gateway is stopping)."""
        self.log.record(rec)

    def _gather_deadline(self) -> float:
        return time.monotonic() + self.flush_interval

    def _closed_down(self, timeout: float) -> None:
        self._stopping = True
        self._checkpoint_wake.set()
        self._checkpointer.join(min(timeout, 10.0))

    def _commit(self, batch: list[CallRecord]) -> None:
        self._write(batch)
        if self._check_wal:
            self._check_wal = False
            self._cap_wal()

    def _write(self, batch: list[CallRecord]) -> None:
        for start in range(0, len(batch), self.max_batch):
            chunk = batch[start:start + self.max_batch]
            for attempt in range(3):
                try:
                    self.log.record_many(chunk)
                    self.written += len(chunk)
                    self._since_checkpoint += 1
                    if self._since_checkpoint >= CHECKPOINT_EVERY:
                        self._since_checkpoint = 0
                        self._checkpoint_requested = True
                        self._checkpoint_wake.set()
                        self._check_wal = True
                    break
                except Exception as e:
                    if attempt == 2:
                        self.dropped += len(chunk)
                        log.error("invocation log: %d record(s) lost: %s: %s",
                                  len(chunk), type(e).__name__, e)
                    else:
                        time.sleep(0.1 * (attempt + 1))

    def _cap_wal(self) -> None:
        wal = self.log.path.with_name(self.log.path.name + "-wal")
        try:
            if wal.stat().st_size <= WAL_SIZE_CAP:
                return
            with self._checkpointing:   # after the helper's: a checkpoint running already would make this one a no-op
                self.log.checkpoint()
            self.checkpoints += 1
        except (OSError, sqlite3.Error) as e:
            log.debug("invocation log checkpoint: %s", e)

    def _checkpoint_loop(self) -> None:
        """Run a PASSIVE checkpoint (it never blocks writers) each time the writer asks, on a
        connection of its own; a request pending at close is still served."""
        db: sqlite3.Connection | None = None
        try:
            while True:
                self._checkpoint_wake.wait()
                self._checkpoint_wake.clear()
                if self._checkpoint_requested:
                    self._checkpoint_requested = False
                    try:
                        if db is None:
                            db = sqlite3.connect(self.log.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                                 check_same_thread=False)
                        with self._checkpointing:
                            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                        self.checkpoints += 1
                    except sqlite3.Error as e:   # busy or gone: the next request tries again
                        log.debug("invocation log checkpoint: %s", e)
                if self._stopping:
                    return
        finally:
            if db is not None:
                db.close()
