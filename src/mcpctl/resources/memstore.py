"""The resource store in memory: `MemoryStore`, a `ResourceStore` for in-process tests.

Objects are kept as deep copies (what a caller changes after `put` or `get` is not the store's),
written as the files backend writes them (the `resourceVersion` `apply` gives them is kept as is).
`stamp()` is a counter that every write advances; observed status is kept in memory too.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from typing import Any

from mcpctl.resources.kinds import KINDS
from mcpctl.resources.store import not_found


class MemoryStore:
    """A `ResourceStore` in one process's memory (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._stamps: dict[tuple[str, str], int] = {}
        self._hashes: dict[str, str] = {}
        self._status: dict[tuple[str, str], dict[str, Any]] = {}
        self._generation = 0

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock:
            yield

    def _bump(self) -> int:
        self._generation += 1
        return self._generation

    def names(self, kind_name: str) -> list[str]:
        KINDS[kind_name]
        with self._lock:
            return sorted(n for k, n in self._objects if k == kind_name)

    def find(self, kind_name: str, name: str) -> dict[str, Any] | None:
        KINDS[kind_name]
        with self._lock:
            res = self._objects.get((kind_name, name))
            return None if res is None else copy.deepcopy(res)

    def get(self, kind_name: str, name: str) -> dict[str, Any]:
        res = self.find(kind_name, name)
        if res is None:
            raise not_found(kind_name, name, self.names(kind_name))
        return res

    def list(self, kind_name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for n in self.names(kind_name) if (r := self.find(kind_name, n)) is not None]

    def put(self, res: dict[str, Any]) -> None:
        key = (str(res["kind"]), str(res["metadata"]["name"]))
        KINDS[key[0]]
        with self._lock:
            self._objects[key] = copy.deepcopy(res)
            self._stamps[key] = self._bump()

    def delete(self, kind_name: str, name: str) -> None:
        with self._lock:
            if (kind_name, name) not in self._objects:
                self.get(kind_name, name)       # raises NotFound with a hint
            del self._objects[(kind_name, name)]
            self._stamps.pop((kind_name, name), None)
            self._status.pop((kind_name, name), None)
            self._bump()

    def stamp(self, kind_name: str, name: str) -> object | None:
        with self._lock:
            return self._stamps.get((kind_name, name))

    def token_hashes(self) -> dict[str, str]:
        with self._lock:
            return dict(self._hashes)

    def token_hash(self, name: str) -> str | None:
        with self._lock:
            return self._hashes.get(name)

    def put_token_hash(self, name: str, sha256: str) -> None:
        with self._lock:
            self._hashes[name] = sha256
            self._bump()

    def delete_token_hash(self, name: str) -> None:
        with self._lock:
            self._hashes.pop(name, None)
            self._bump()

    def tokens_stamp(self) -> object:
        return self._generation

    def status(self, kind_name: str, name: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._status.get((kind_name, name), {}))

    def set_status(self, kind_name: str, name: str, status: dict[str, Any]) -> None:
        with self._lock:
            self._status[(kind_name, name)] = {**self._status.get((kind_name, name), {}), **copy.deepcopy(status)}
