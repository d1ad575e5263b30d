"""Reading a client's own file, and replacing it without losing what its client writes meanwhile.

Clients rewrite their files while they run (Claude Code counts its startups in `~/.claude.json`),
so `connect` and `disconnect` read a `Snapshot` and replace the file only if it still holds the
bytes they read. On Linux the replacement is one atomic exchange (`renameat2(RENAME_EXCHANGE)`):
the file it displaces is exactly the one that was there, so a write the client made after the
read is seen, put back at once, and reported as `FileChanged` (the caller edits the fresh file
again, a bounded number of times). Elsewhere the file is compared just before the rename.

Everything that can go wrong with the file itself (a symlink loop, no permission, a read-only
or immutable file, a directory, bytes that are not UTF-8, JSON or TOML too deep or too long to
read) becomes one `MCPCtlError` naming the file and what to do; nothing is written then.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpctl.clients.base import ClientFormat
from mcpctl.clients.jsonc import JsoncError
from mcpctl.clients.tomledit import TomlEditError
from mcpctl.errors import InvalidResource, MCPCtlError

PAUSE_ENV = "MCPCTL_TEST_PAUSE"     # tests: stop at a named point (pause()) until a line on stdin


class FileChanged(Exception):
    """Another program wrote the file between our read and our write; nothing of ours stayed."""


@dataclass(frozen=True)
class Snapshot:
    path: Path            # as the user (or the client's default) named it
    target: Path          # the file itself: a symlink's target (a dotfile link stays a link)
    data: bytes | None    # None: the file does not exist
    text: str
    doc: Any


def pause(point: str) -> None:
    """A test hook: with MCPCTL_TEST_PAUSE=<point>, say so on stderr and wait for a line on stdin
    (or its close): a test kills the process here, or writes the file, or lets it go on."""
    if os.environ.get(PAUSE_ENV) == point:
        sys.stderr.write(f"paused at {point}\n")
        sys.stderr.flush()
        sys.stdin.readline()


# -- errors -----------------------------------------------------------------------------------------

_HINTS = {
    errno.ELOOP: "it is a symlink loop: point the link at a real file (ls -l {path})",
    errno.EACCES: "make it (and its directory) readable and writable for you (chmod u+rw), or edit it by hand",
    errno.EPERM: "the file is protected (immutable: lsattr {path}; chattr -i clears it), or edit it by hand",
    errno.EROFS: "it is on a read-only file system: edit the client's configuration where it is writable",
    errno.EISDIR: "it is a directory: name the client's file with --file PATH",
    errno.ENOTDIR: "a part of the path is not a directory: name the client's file with --file PATH",
    errno.ENOSPC: "the disk is full: free some space and run the command again",
}


def io_error(path: Path, e: OSError, doing: str) -> MCPCtlError:
    hint = _HINTS.get(e.errno or 0, "fix what is reported and run the command again").format(path=path)
    return MCPCtlError(f"cannot {doing} {path}: {e.strerror or e}", hint=hint + " (the file is unchanged)")


# -- reading ----------------------------------------------------------------------------------------


def real_path(path: Path) -> Path:
    """`path` with every symlink resolved: the one name a file has whatever link reaches it."""
    try:
        return path.resolve()
    except RuntimeError:          # Python < 3.13 reports a symlink loop so
        raise io_error(path, OSError(errno.ELOOP, os.strerror(errno.ELOOP)), "read") from None
    except OSError as e:
        raise io_error(path, e, "read") from None


def read(fmt: ClientFormat, path: Path) -> Snapshot:
    """The file's bytes and document (an absent file reads as empty); a clear error otherwise."""
    target = real_path(path)
    try:
        data: bytes | None = target.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as e:
        raise io_error(path, e, "read") from None
    try:
        text = "" if data is None else data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidResource(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})",
                              hint=f"fix the file (it is not valid for {fmt.title}); it is unchanged") from None
    try:
        doc = fmt.editor.load(text)
    except (JsoncError, TomlEditError) as e:
        raise InvalidResource(f"{path}: {e}", hint=f"fix the file (it is not valid for {fmt.title}); "
                              "mcpctl changed nothing") from None
    return Snapshot(path, target, data, text, doc)


def check_writable(snap: Snapshot) -> None:
    """A file its owner made read-only (no write bit at all) is refused, whoever runs mcpctl."""
    if snap.data is None:
        return
    try:
        mode = snap.target.stat().st_mode
    except OSError as e:
        raise io_error(snap.path, e, "read") from None
    if mode & 0o222 == 0:
        raise MCPCtlError(f"{snap.path} is read-only (mode {mode & 0o7777:04o}); mcpctl does not override that",
                          hint=f"make it writable (chmod u+w {snap.target}) and run the command again, "
                               "or edit the entry by hand (the file is unchanged)")


# -- replacing --------------------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_libc: Any = None
with contextlib.suppress(OSError):
    _libc = ctypes.CDLL(None, use_errno=True)
_renameat2: Any = getattr(_libc, "renameat2", None) if sys.platform.startswith("linux") else None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names atomically; False where the system cannot (the caller falls back)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    if err == errno.ENOENT:
        raise FileChanged                 # removed meanwhile
    raise OSError(err, os.strerror(err), str(b))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _temp(target: Path, data: bytes, mode: int) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".mcpctl.tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _sync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _swap_in(tmp: Path, target: Path, data: bytes, expected: bytes) -> None:
    if _exchange(tmp, target):
        if _read(tmp) == expected:
            return
        _exchange(tmp, target)            # put the other program's file back at once
        if _read(tmp) != data:            # it wrote again meanwhile: its newest file wins
            _exchange(tmp, target)
        raise FileChanged
    if _read(target) != expected:
        raise FileChanged
    os.replace(tmp, target)


def _create(tmp: Path, target: Path) -> None:
    """Give `tmp` the name `target` only if nobody created `target` meanwhile."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise FileChanged from None
    except OSError:                       # a file system without hard links
        if target.exists() or target.is_symlink():
            raise FileChanged from None
        os.replace(tmp, target)


def replace(snap: Snapshot, data: bytes, *, before: Callable[[], None] | None = None) -> None:
    """Put `data` where `snap` was read, atomically, keeping the file's mode; `FileChanged` when
    the file no longer holds `snap.data` (another program wrote it), and then nothing changed.
    `before` runs once the new bytes are on disk, just before they replace the file."""
    target = snap.target
    try:
        mode = target.stat().st_mode & 0o7777 if snap.data is not None else 0o600
        tmp = _temp(target, data, mode)
    except FileNotFoundError:
        if snap.data is not None:
            raise FileChanged from None
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temp(target, data, 0o600)
    try:
        if before is not None:
            before()
        if snap.data is None:
            _create(tmp, target)
        else:
            _swap_in(tmp, target, data, snap.data)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _sync_dir(target.parent)


def _put_back(side: Path, target: Path) -> None:
    """Another program's file goes back to its name, unless it has written a newer one there."""
    try:
        os.link(side, target)
    except FileExistsError:
        pass
    except OSError:                       # a file system without hard links
        if not (target.exists() or target.is_symlink()):
            os.replace(side, target)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(side)


def remove(snap: Snapshot) -> None:
    """Remove the file `snap` read; `FileChanged` (and the file kept) if another program wrote it."""
    if snap.data is None:
        return
    side = snap.target.with_name(f".{snap.target.name}.{os.getpid()}.mcpctl.removed")
    try:
        os.rename(snap.target, side)
    except FileNotFoundError:
        return
    if _read(side) != snap.data:
        _put_back(side, snap.target)
        raise FileChanged
    os.unlink(side)
    _sync_dir(snap.target.parent)
