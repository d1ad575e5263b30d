"""The on-disk catalogue cache: the last listing of each upstream server.

The gateway answers `tools/list` from here while upstreams connect, and `mcpctl tools list`
reads it without starting anything. One JSON file per server under
`paths.catalogue_cache_dir()`, holding wire-format (camelCase) dicts exactly as the upstream
sent them. No `mcp` import: the gateway converts to and from these dicts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Final

from mcpctl import paths
from mcpctl.resources.store import atomic_write

FORMAT_VERSION: Final = 1
_SECTIONS: Final = ("tools", "resources", "resourceTemplates", "prompts")


def cache_path(server: str) -> Path:
    return paths.catalogue_cache_dir() / f"{server}.json"


def read_server_entry(server: str) -> dict[str, Any] | None:
    """The whole cache entry of `server` (sections, `updatedAt`), or None if never listed."""
    try:
        data = json.loads(cache_path(server).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
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


def write_server_entry(server: str, sections: dict[str, list[dict[str, Any]]]) -> bool:
    """Merge `sections` into the cache of `server`; True if anything changed on disk."""
    old = read_server_entry(server) or {}
    new: dict[str, Any] = {"version": FORMAT_VERSION, "server": server}
    changed = not old
    for name in _SECTIONS:
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
    return True


def write_server_tools(server: str, tools: list[dict[str, Any]]) -> bool:
    """Store the tool listing of `server`; True if it differs from what was cached."""
    return write_server_entry(server, {"tools": tools})


def delete_server(server: str) -> None:
    cache_path(server).unlink(missing_ok=True)
