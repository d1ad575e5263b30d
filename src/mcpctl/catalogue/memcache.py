"""`MemoryCache`: the catalogue cache in this process's memory, for in-process tests
(`mcpctl.storage.Storage.in_memory`)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from mcpctl.catalogue.cache import CatalogueCache, valid_entry


class MemoryCache(CatalogueCache):
    """Entries in a dict (copies in and out, as a file or a row would give)."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def read_server_entry(self, server: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(server)
        return valid_entry(copy.deepcopy(entry)) if entry is not None else None

    def put_entry(self, server: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._entries[server] = copy.deepcopy(entry)

    def delete_server(self, server: str) -> None:
        with self._lock:
            self._entries.pop(server, None)

    def servers(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)


__all__ = ["MemoryCache"]
