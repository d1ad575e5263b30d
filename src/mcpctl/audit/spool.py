"""The local spool of the PostgreSQL log: rows wait here on disk while the database is unreachable.

Layout: `state_dir()/log-spool/` (0700), append-only JSONL segments (0600) named
`<time_ns>-<pid>.jsonl`, one `{"u": uid, "r": [column values]}` per line. A process appends to
one segment of its own, holding an exclusive `flock` on it; a segment reaches SEGMENT_BYTES and
the next one begins. Draining takes segments oldest first, each one whose lock it can take (its
own closed ones, and those a killed gateway on this host left behind), writes its rows, then
deletes it; a segment written twice (a drain cut short) does no harm: the database skips a uid
it has.

Bounded: the spool never holds more than `cap_bytes` (MCPCTL_LOG_SPOOL_BYTES, default
DEFAULT_CAP_BYTES = 256 MiB, about a million calls), the segment being written included, unless
one write alone is larger. Segments are at most an eighth of the cap (and 4 MiB), so the cap is
kept a segment at a time: before a write that would pass it, the oldest segments are deleted (the
one being written too, once it is the oldest), their rows counted in `dropped` and warned about.
Nothing is dropped while the rows fit under the cap.
Rows are written with `write()` and flushed to the kernel at once (a kill -9 loses none of
them); not fsynced (an OS crash or power loss may lose the last seconds of the spool).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Final

from mcpctl import paths
from mcpctl.audit.records import CallRecord, row

log = logging.getLogger("mcpctl.audit.log")

ENV_CAP: Final = "MCPCTL_LOG_SPOOL_BYTES"
DEFAULT_CAP_BYTES: Final = 256 * 1024 * 1024
SEGMENT_BYTES: Final = 4 * 1024 * 1024

Row = tuple[uuid.UUID, CallRecord]


def spool_dir() -> Path:
    return paths.state_dir() / "log-spool"


def cap_from_env() -> int:
    raw = os.environ.get(ENV_CAP)
    if not raw:
        return DEFAULT_CAP_BYTES
    try:
        value = int(raw)
    except ValueError:
        log.warning("%s=%r is not a number of bytes; using %d", ENV_CAP, raw, DEFAULT_CAP_BYTES)
        return DEFAULT_CAP_BYTES
    return max(value, 4096)


def _encode(rows: Sequence[Row]) -> bytes:
    return "".join(json.dumps({"u": uid.hex, "r": list(row(r))}, separators=(",", ":")) + "\n"
                   for uid, r in rows).encode()


def _decode(line: bytes) -> Row | None:
    try:
        obj = json.loads(line)
        return uuid.UUID(hex=obj["u"]), CallRecord(*obj["r"])
    except (ValueError, KeyError, TypeError):
        return None       # a line cut short by a kill: the rest of the segment is still read


class Spool:
    """The segments of one directory; one instance per process (not thread-safe: the writer's thread)."""

    def __init__(self, directory: Path | None = None, *, cap_bytes: int | None = None) -> None:
        self.dir = directory if directory is not None else spool_dir()
        self.cap_bytes = cap_bytes if cap_bytes is not None else cap_from_env()
        self.dropped = 0              # rows deleted unwritten because the spool was full
        self.spooled = 0              # rows this process appended
        self.segment_bytes = min(SEGMENT_BYTES, max(1024, self.cap_bytes // 8))
        self._file: IO[bytes] | None = None
        self._path: Path | None = None

    # -- appending --------------------------------------------------------------------------

    def append(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        data = _encode(rows)
        self._make_room(len(data))
        f = self._segment()
        f.write(data)
        f.flush()
        self.spooled += len(rows)
        if f.tell() >= self.segment_bytes:
            self.seal()

    def _segment(self) -> IO[bytes]:
        if self._file is None:
            paths.private_dir(self.dir)
            path = self.dir / f"{time.time_ns():020d}-{os.getpid()}.jsonl"
            fd = paths.open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._file = os.fdopen(fd, "ab")
            self._path = path
        return self._file

    def seal(self) -> None:
        """Close the current segment (its lock goes with it), so a drain can take it."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._path = None

    def _segments(self) -> list[Path]:
        try:
            return sorted(self.dir.glob("*.jsonl"))
        except OSError:
            return []

    def pending_bytes(self) -> int:
        total = 0
        for p in self._segments():
            with contextlib.suppress(OSError):
                total += p.stat().st_size
        return total

    def has_pending(self) -> bool:
        return bool(self._segments())

    def _make_room(self, incoming: int) -> None:
        """Delete the oldest segments (the one being written too, once it is the oldest) until
        `incoming` more bytes fit under the cap; count and report their rows."""
        sizes: dict[Path, int] = {}
        for p in self._segments():
            with contextlib.suppress(OSError):
                sizes[p] = p.stat().st_size
        total = sum(sizes.values())
        for p in sizes:
            if total + incoming <= self.cap_bytes:
                return
            if p == self._path:
                self.seal()
            try:
                with p.open("rb") as f:
                    lost = sum(1 for line in f if line.endswith(b"\n"))
                p.unlink()
            except OSError:
                continue
            total -= sizes[p]
            self.dropped += lost
            log.warning("invocation log spool: %d more byte(s) would pass its cap of %d (%s): the oldest %d "
                        "row(s) dropped (%d in all)", incoming, self.cap_bytes, ENV_CAP, lost, self.dropped)

    # -- draining ---------------------------------------------------------------------------

    def drain(self, write: Callable[[list[Row]], None], *, batch: int = 2000,
              deadline: float | None = None) -> int:
        """Write every segment that can be taken (the current one is sealed first), oldest first,
        deleting each once written; return the rows written. An exception from `write` stops the
        drain and propagates (the segment stays for the next one)."""
        self.seal()
        n = 0
        for path in self._segments():
            if deadline is not None and time.monotonic() > deadline:
                break
            n += self._drain_one(path, write, batch)
        return n

    def _drain_one(self, path: Path, write: Callable[[list[Row]], None], batch: int) -> int:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0          # another live process is still appending to it
            n = 0
            with os.fdopen(os.dup(fd), "rb") as f:
                rows: list[Row] = []
                for line in f:
                    row = _decode(line)
                    if row is not None:
                        rows.append(row)
                    if len(rows) >= batch:
                        write(rows)
                        n += len(rows)
                        rows = []
                if rows:
                    write(rows)
                    n += len(rows)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return n
        finally:
            os.close(fd)

    def close(self) -> None:
        self.seal()
