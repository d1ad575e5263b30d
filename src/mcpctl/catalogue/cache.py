"""The on-disk catalogue cache: the last listing of each upstream server.

The gateway answers `tools/list` from here while upstreams connect, and `mcpctl tools list`
reads it without starting anything. One JSON file per server under
`paths.catalogue_cache_dir()`, holding wire-format (camelCase) dicts exactly as the upstream
sent them, and the server's own `about` section (its name, title, description and instructions from
the initialize/discover reply, `[{...}]` or `[]`), which search ranks as a low-weight field of
each of its tools. No `mcp` import: the gateway converts to and from these dicts. The tools'
sentence vectors for semantic search live beside them (`embeddings_dir()`, one `.npz` per model).

With a database URL in effect (docs/team.md), each entry written is also shared in the database,
and a server with no file here starts from the database's entry (`mcpctl.db.catalogue`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from mcpctl import paths
from mcpctl.resources.store import atomic_write

FORMAT_VERSION: Final = 1
# Every section of an entry; a gateway starts from all of them, so an unchanged server is unchanged.
SECTIONS: Final = ("tools", "resources", "resourceTemplates", "prompts", "about")
ABOUT_FIELDS: Final = ("name", "title", "description", "instructions")


def cache_path(server: str) -> Path:
    return paths.catalogue_cache_dir() / f"{server}.json"


def embeddings_dir() -> Path:
    """Where the tools' sentence vectors are kept (`semantic.VectorCache`), beside their listings:
    computed where the catalogue is listed, read by every search."""
    return paths.catalogue_cache_dir() / "embeddings"


def _shared(server: str) -> dict[str, Any] | None:
    """The database's entry (kept as this host's file), when a database URL is in effect."""
    from mcpctl.db.config import database_url

    if database_url() is None:
        return None
    from mcpctl.db import catalogue as shared

    data = shared.read(server)
    if data is not None and data.get("version") == FORMAT_VERSION:
        atomic_write(cache_path(server), json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    return data


def read_server_entry(server: str) -> dict[str, Any] | None:
    """The whole cache entry of `server` (sections, `updatedAt`), or None if never listed."""
    try:
        data = json.loads(cache_path(server).read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = _shared(server)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        return None
    if not isinstance(data.get("tools"), list):
        return None
    return data


def read_server_tools(server: str) -> list[dict[str, Any]] | None:
    """Wire-format tool dicts of the last listing of `server`, or None if never listed."""
    entry = read_server_entry(server)
    return None if entry is None else list(entry["tools"])


def read_server_section(server: str, section: str) -> list[dict[str, Any]] | None:
    """`resources`, `resourceTemplates` or `prompts` of the last listing, or None."""
    entry = read_server_entry(server)
    if entry is None or not isinstance(entry.get(section), list):
        return None
    return list(entry[section])


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


def read_server_about(server: str) -> str:
    """The name, title, description and instructions `server` gave at its last listing ("" if none)."""
    entry = read_server_entry(server)
    return "" if entry is None else about_text(entry.get("about"))


def read_about(servers: Iterable[str]) -> dict[str, str]:
    """server -> `read_server_about(server)` for each of `servers`."""
    return {server: read_server_about(server) for server in servers}


def write_server_entry(server: str, sections: dict[str, list[dict[str, Any]]]) -> bool:
    """Merge `sections` into the cache of `server`; True if anything changed on disk."""
    if "tools" in sections:             # the first listing of a server pins its definitions (`pins`)
        from mcpctl.catalogue.pins import pin_first_listing

        pin_first_listing(server, sections["tools"])
    old = read_server_entry(server) or {}
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
        return False
    new["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    atomic_write(cache_path(server), json.dumps(new, ensure_ascii=False, separators=(",", ":")) + "\n")
    _share(server, new)
    return True


def _share(server: str, entry: dict[str, Any] | None) -> None:
    from mcpctl.db.config import database_url

    if database_url() is None:
        return
    from mcpctl.db import catalogue as shared

    if entry is None:
        shared.delete(server)
    else:
        shared.write(server, entry)


def write_server_tools(server: str, tools: list[dict[str, Any]]) -> bool:
    """Store the tool listing of `server`; True if it differs from what was cached."""
    return write_server_entry(server, {"tools": tools})


def delete_server(server: str) -> None:
    cache_path(server).unlink(missing_ok=True)
    _share(server, None)
