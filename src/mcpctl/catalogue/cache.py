"""The catalogue cache: the last listing of each upstream server, as a Protocol and its files backend.

The gateway answers `tools/list` from here while upstreams connect, and `mcpctl tools list`
reads it without starting anything. An entry holds wire-format (camelCase) dicts exactly as the
upstream sent them, and the server's own `about` section (its name, title, description and
instructions from the initialize/discover reply, `[{...}]` or `[]`), which search ranks as a
low-weight field of each of its tools. No `mcp` import: the gateway converts to and from these
dicts.

`CatalogueCache` is the seam; its backends do not inherit from each other: `FilesCache` here (one
JSON file per server under `paths.catalogue_cache_dir()`), `mcpctl.catalogue.pgcache.PgCache`
(the team's database, with this host's files as its working copy) and
`mcpctl.catalogue.memcache.MemoryCache` (tests). A process opens one, in `mcpctl.storage.Storage`
(`storage.cache`), and passes it to who reads or writes listings. The tools' sentence vectors for
semantic search stay on this host whatever the backend (`embeddings_dir()`, one `.npz` per model),
and so do the pins (`catalogue.pins`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Protocol

from mcpctl import paths
from mcpctl.resources.store import atomic_write

FORMAT_VERSION: Final = 1
# Every section of an entry; a gateway starts from all of them, so an unchanged server is unchanged.
SECTIONS: Final = ("tools", "resources", "resourceTemplates", "prompts", "about")
ABOUT_FIELDS: Final = ("name", "title", "description", "instructions")


def embeddings_dir() -> Path:
    """Where the tools' sentence vectors are kept (`semantic.VectorCache`), beside their listings:
    computed where the catalogue is listed, read by every search (this host's, whatever the backend)."""
    return paths.catalogue_cache_dir() / "embeddings"


def valid_entry(data: Any) -> dict[str, Any] | None:
    """`data` if it is an entry of this format (a dict of the current version with a tools list)."""
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION or not isinstance(data.get("tools"), list):
        return None
    return data


def merged(server: str, old: dict[str, Any] | None, sections: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The entry `sections` make of `old` (the sections not given are kept), or None if nothing changed."""
    old = old or {}
    new: dict[str, Any] = {"version": FORMAT_VERSION, "server": server}
    changed = not old
    for name in SECTIONS:
        if name in sections:
            value = list(sections[name])
            if old.get(name) != value:
                changed = True
            new[name] = value
        elif name in old:
            new[name] = old[name]
    new.setdefault("tools", [])
    if not changed:
        return None
    new["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return new


def entry_text(entry: dict[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"


_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s|\n")


def about_text(about: Any) -> str:
    """What search ranks of an `about` section: the server's name, title and description, and the
    first sentence (or line) of its instructions, which says what the server is for; the rest of
    the instructions is usage detail that would match every other request (docs/ranking.md).
    "" if none."""
    entry = about[0] if isinstance(about, list) and about and isinstance(about[0], dict) else {}
    parts = [str(entry[k]).strip() for k in ABOUT_FIELDS if isinstance(entry.get(k), str) and entry[k].strip()]
    if parts and isinstance(entry.get("instructions"), str) and entry["instructions"].strip():
        parts[-1] = _SENTENCE_END.split(parts[-1].lstrip("# "), maxsplit=1)[0].strip()
    return "\n".join(p for p in parts if p)


class CatalogueCache(Protocol):
    """Each server's last listing. A backend implements the four storage methods; the reads and the
    merging write below are the same for every backend (a backend subclasses this Protocol for them)."""

    def read_server_entry(self, server: str) -> dict[str, Any] | None:
        """The whole entry of `server` (sections, `updatedAt`), or None if never listed."""
        ...

    def put_entry(self, server: str, entry: dict[str, Any]) -> None:
        """Keep `entry` as the entry of `server`, as it is (`write_server_entry` merges)."""
        ...

    def delete_server(self, server: str) -> None:
        """Forget `server`'s entry (nothing if there is none)."""
        ...

    def servers(self) -> list[str]:
        """The servers with an entry, sorted."""
        ...

    def write_server_entry(self, server: str, sections: dict[str, list[dict[str, Any]]]) -> bool:
        """Merge `sections` into the entry of `server`; True if anything changed."""
        if "tools" in sections:             # the first listing of a server pins its definitions (`pins`)
            from mcpctl.catalogue.pins import pin_first_listing

            pin_first_listing(server, sections["tools"])
        new = merged(server, self.read_server_entry(server), sections)
        if new is None:
            return False
        self.put_entry(server, new)
        return True

    def write_server_tools(self, server: str, tools: list[dict[str, Any]]) -> bool:
        """Store the tool listing of `server`; True if it differs from what was cached."""
        return self.write_server_entry(server, {"tools": tools})

    def read_server_tools(self, server: str) -> list[dict[str, Any]] | None:
        """Wire-format tool dicts of the last listing of `server`, or None if never listed."""
        entry = self.read_server_entry(server)
        return None if entry is None else list(entry["tools"])

    def read_server_section(self, server: str, section: str) -> list[dict[str, Any]] | None:
        """`resources`, `resourceTemplates` or `prompts` of the last listing, or None."""
        entry = self.read_server_entry(server)
        if entry is None or not isinstance(entry.get(section), list):
            return None
        return list(entry[section])

    def read_server_about(self, server: str) -> str:
        """The name, title, description and instructions `server` gave at its last listing ("" if none)."""
        entry = self.read_server_entry(server)
        return "" if entry is None else about_text(entry.get("about"))

    def read_about(self, servers: Iterable[str]) -> dict[str, str]:
        """server -> `read_server_about(server)` for each of `servers`."""
        return {server: self.read_server_about(server) for server in servers}


class FilesCache(CatalogueCache):
    """The files backend: one JSON file per server in `directory` (default: the
    `paths.catalogue_cache_dir()` in effect at each use), written atomically."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory

    @property
    def directory(self) -> Path:
        return self._directory or paths.catalogue_cache_dir()

    def cache_path(self, server: str) -> Path:
        return self.directory / f"{server}.json"

    def read_server_entry(self, server: str) -> dict[str, Any] | None:
        try:
            return valid_entry(json.loads(self.cache_path(server).read_text(encoding="utf-8")))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None

    def put_entry(self, server: str, entry: dict[str, Any]) -> None:
        atomic_write(self.cache_path(server), entry_text(entry))

    def delete_server(self, server: str) -> None:
        self.cache_path(server).unlink(missing_ok=True)

    def servers(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.json"))


__all__ = ["FORMAT_VERSION", "SECTIONS", "CatalogueCache", "FilesCache", "about_text", "embeddings_dir"]
