"""The resource store: `ResourceStore`, what commands and the gateway use, and `Store`, its files
backend: one YAML file per object, atomic writes, one lock for writers.

Layout under `paths.resources_dir()`: `servers/<name>.yaml`, `projects/<name>.yaml`.
Observed status (written by the gateway) lives apart, under `paths.status_dir()` (`StatusFiles`),
so a running gateway never rewrites what the user owns.

The backend seam is the Protocol: `Store` here, `mcpctl.resources.pgstore.PgStore` on PostgreSQL
and `mcpctl.resources.memstore.MemoryStore` for tests implement it and inherit from none of each
other. Which one a process uses is decided once, where `mcpctl.storage.Storage` is opened. `root`
and `path_for` are files-backend details: using them on a `ResourceStore` is a type error.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from mcpctl import paths
from mcpctl.errors import NotFound, did_you_mean
from mcpctl.resources.kinds import KINDS, Kind


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Write `data` to `path` through a temp file in the same directory, fsync, replace."""
    paths.private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


class ResourceStore(Protocol):
    """What commands and the gateway use of a store, whatever keeps it.

    `locked()`: writers hold it across read-modify-write (on PostgreSQL one transaction under an
    advisory lock, so everything written inside commits or rolls back together). `stamp()`: a value
    that changes whenever an object may have (None: it does not exist), what a running gateway
    polls; `tokens_stamp()` the same for tokens and their hashes. Token hashes are the SHA-256 of
    each token's secret, never the secret. `status/set_status`: observed status, always local files
    (each gateway host observes its own upstreams)."""

    def locked(self) -> contextlib.AbstractContextManager[None]: ...
    def names(self, kind_name: str) -> list[str]: ...
    def find(self, kind_name: str, name: str) -> dict[str, Any] | None: ...
    def get(self, kind_name: str, name: str) -> dict[str, Any]: ...
    def list(self, kind_name: str) -> list[dict[str, Any]]: ...
    def put(self, res: dict[str, Any]) -> None: ...
    def delete(self, kind_name: str, name: str) -> None: ...
    def stamp(self, kind_name: str, name: str) -> object | None: ...
    def token_hashes(self) -> dict[str, str]: ...
    def token_hash(self, name: str) -> str | None: ...
    def put_token_hash(self, name: str, sha256: str) -> None: ...
    def delete_token_hash(self, name: str) -> None: ...
    def tokens_stamp(self) -> object: ...
    def status(self, kind_name: str, name: str) -> dict[str, Any]: ...
    def set_status(self, kind_name: str, name: str, status: dict[str, Any]) -> None: ...


def not_found(kind_name: str, name: str, names: list[str]) -> NotFound:
    """The error every backend raises for a missing object, with the closest name as a hint."""
    kind = KINDS[kind_name]
    return NotFound(f"{kind.name.lower()} {name!r} not found",
                    hint=did_you_mean(name, names) or f"list them with: mcpctl get {kind.plural}")


class StatusFiles:
    """Observed status, one JSON file per object under `root` (`paths.status_dir()`): kept on each
    host whatever backend keeps the objects, as each gateway host observes its own upstreams."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.status_dir()

    def _path(self, kind_name: str, name: str) -> Path:
        return self.root / KINDS[kind_name].plural / f"{name}.json"

    def status(self, kind_name: str, name: str) -> dict[str, Any]:
        try:
            data: Any = json.loads(self._path(kind_name, name).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def set_status(self, kind_name: str, name: str, status: dict[str, Any]) -> None:
        """Merge `status` into the object's observed status (atomic; last writer wins per key)."""
        merged = {**self.status(kind_name, name), **status}
        atomic_write(self._path(kind_name, name), json.dumps(merged, indent=2, sort_keys=True) + "\n")

    def forget(self, kind_name: str, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(kind_name, name).unlink()


class Store:
    """The files backend of `ResourceStore`. Writers hold `locked()` across read-modify-write."""

    def __init__(self, root: Path | None = None, *, status_root: Path | None = None,
                 lock_file: Path | None = None) -> None:
        self.root = root or paths.resources_dir()
        self.observed = StatusFiles(status_root)
        self.lock_file = lock_file or (self.root / ".lock")
        self._tlock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    # -- locking ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's write lock (re-entrant within a process)."""
        with self._tlock:
            if self._depth == 0:
                paths.private_dir(self.lock_file.parent)
                fd = paths.open_private(self.lock_file, os.O_RDWR | os.O_CREAT)
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None

    # -- reading ----------------------------------------------------------------------------

    def _dir(self, kind: Kind) -> Path:
        return self.root / kind.plural

    def path_for(self, kind_name: str, name: str) -> Path:
        return self._dir(KINDS[kind_name]) / f"{name}.yaml"

    def names(self, kind_name: str) -> list[str]:
        d = self._dir(KINDS[kind_name])
        if not d.is_dir():
            return []
        return sorted(p.stem for p in d.glob("*.yaml") if not p.name.startswith("."))

    def find(self, kind_name: str, name: str) -> dict[str, Any] | None:
        from mcpctl.resources import yamlio

        p = self.path_for(kind_name, name)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return yamlio.load_stored(text, p)

    def get(self, kind_name: str, name: str) -> dict[str, Any]:
        res = self.find(kind_name, name)
        if res is None:
            raise not_found(kind_name, name, self.names(kind_name))
        return res

    def list(self, kind_name: str) -> list[dict[str, Any]]:
        out = []
        for n in self.names(kind_name):
            res = self.find(kind_name, n)
            if res is not None:
                out.append(res)
        return out

    # -- writing ----------------------------------------------------------------------------

    def put(self, res: dict[str, Any]) -> None:
        from mcpctl.resources import yamlio

        with self.locked():
            atomic_write(self.path_for(res["kind"], res["metadata"]["name"]), yamlio.dump_stored(res))

    def delete(self, kind_name: str, name: str) -> None:
        with self.locked():
            p = self.path_for(kind_name, name)
            if not p.exists():
                self.get(kind_name, name)   # raises NotFound with a hint
            p.unlink()
            self.observed.forget(kind_name, name)

    def stamp(self, kind_name: str, name: str) -> object | None:
        """Changes whenever the object may have (None: it does not exist): its file's mtime."""
        try:
            return self.path_for(kind_name, name).stat().st_mtime_ns
        except OSError:
            return None

    # -- token hashes (the SHA-256 of each token's secret; never the secret) ----------------------

    def _hash_path(self, name: str) -> Path:
        return paths.state_dir() / "credentials" / f"{name}.json"

    def token_hashes(self) -> dict[str, str]:
        """Every token's name -> the SHA-256 of its secret."""
        out: dict[str, str] = {}
        for name in self.names("Token"):
            h = self.token_hash(name)
            if h is not None:
                out[name] = h
        return out

    def token_hash(self, name: str) -> str | None:
        try:
            data: Any = json.loads(self._hash_path(name).read_text(encoding="utf-8"))
            return str(data["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put_token_hash(self, name: str, sha256: str) -> None:
        atomic_write(self._hash_path(name), json.dumps({"sha256": sha256}) + "\n", mode=0o600)

    def delete_token_hash(self, name: str) -> None:
        self._hash_path(name).unlink(missing_ok=True)

    def tokens_stamp(self) -> object:
        """Changes whenever a token or its hash may have."""
        def mtime(p: Path) -> int:
            try:
                return os.stat(p).st_mtime_ns
            except OSError:
                return 0

        return mtime(self.root / "tokens"), mtime(self._hash_path("x").parent)

    # -- observed status (owned by the gateway) --------------------------------------------------

    def status(self, kind_name: str, name: str) -> dict[str, Any]:
        return self.observed.status(kind_name, name)

    def set_status(self, kind_name: str, name: str, status: dict[str, Any]) -> None:
        self.observed.set_status(kind_name, name, status)
