"""Tool definitions pinned by digest, per server, the first time the server is listed.

A server that describes a tool one way when it is added and another way later (a "rug pull")
changes what the model reads without anyone re-reading it. The first listing of a server pins
every tool's definition (name, title, description, inputSchema, outputSchema, annotations) by
the SHA-256 of its canonical JSON; later listings are compared with the pins (`changes`), and
only `approve` moves a pin. Pins are state, not spec: one 0600 file per server under the state
dir (`pins/SERVER.json`), written through `paths`' private helpers; `delete server` removes it,
`get -o yaml | apply -f -` never sees it.

No `mcp` here; the callers pass listings as the cache holds them (wire dicts).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcpctl import paths
from mcpctl.resources.store import atomic_write

PINNED_FIELDS: Final = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
FORMAT_VERSION: Final = 1
CHANGED: Final = "changed"
NEW: Final = "new"
REMOVED: Final = "removed"


@dataclass(frozen=True)
class Change:
    server: str
    tool: str
    kind: str                              # changed | new | removed
    before: dict[str, Any] | None          # the pinned definition (None: new)
    after: dict[str, Any] | None           # the listed definition (None: removed)

    @property
    def id(self) -> str:
        return f"{self.server}/{self.tool}"

    def diff(self) -> str:
        """The change as a unified diff of the definitions' indented JSON."""
        def lines(d: dict[str, Any] | None) -> list[str]:
            return [] if d is None else json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

        return "\n".join(difflib.unified_diff(lines(self.before), lines(self.after), f"pinned/{self.id}",
                                              f"listed/{self.id}", lineterm=""))


def definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned fields of a listed tool (those it has)."""
    return {k: tool[k] for k in PINNED_FIELDS if k in tool}


def digest(tool: Mapping[str, Any]) -> str:
    text = json.dumps(definition(tool), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def pins_path(server: str) -> Path:
    return paths.state_dir() / "pins" / f"{server}.json"


def read_pins(server: str) -> dict[str, dict[str, Any]] | None:
    """tool name -> {"digest", "definition"} as pinned, or None if `server` was never pinned."""
    try:
        data = json.loads(pins_path(server).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tools = data.get("tools") if isinstance(data, dict) else None
    return dict(tools) if isinstance(tools, dict) else None


def _write(server: str, pins: Mapping[str, dict[str, Any]]) -> None:
    path = pins_path(server)
    paths.private_dir(path.parent)
    atomic_write(path, json.dumps({"version": FORMAT_VERSION, "server": server, "tools": dict(pins)},
                                  ensure_ascii=False, sort_keys=True, indent=1) + "\n", mode=0o600)


def _pin(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {"digest": digest(tool), "definition": definition(tool)}


def pin_first_listing(server: str, tools: Iterable[Mapping[str, Any]]) -> bool:
    """Pin every tool of `server` if it was never pinned; True if this listing was the first."""
    if read_pins(server) is not None:
        return False
    _write(server, {str(t.get("name")): _pin(t) for t in tools})
    return True


def changes(server: str, tools: Iterable[Mapping[str, Any]]) -> list[Change]:
    """How `server`'s listing differs from its pins, in listing order then removed tools (none
    when it was never pinned: its first listing is the pin)."""
    pins = read_pins(server)
    if pins is None:
        return []
    out: list[Change] = []
    seen: set[str] = set()
    for t in tools:
        name = str(t.get("name"))
        seen.add(name)
        pin = pins.get(name)
        if pin is None:
            out.append(Change(server, name, NEW, None, definition(t)))
        elif pin.get("digest") != digest(t):
            out.append(Change(server, name, CHANGED, pin.get("definition"), definition(t)))
    out += [Change(server, n, REMOVED, p.get("definition"), None) for n, p in pins.items() if n not in seen]
    return out


def approve(server: str, tools: Iterable[Mapping[str, Any]], names: Iterable[str] | None = None) -> list[Change]:
    """Accept the changes of `server` (those of the tools in `names`; None: all): their pins
    become the listed definitions, a removed tool's pin goes. Returns what was approved."""
    listed = {str(t.get("name")): t for t in tools}
    todo = changes(server, listed.values())
    wanted = None if names is None else set(names)
    done = [c for c in todo if wanted is None or c.tool in wanted]
    if not done:
        return []
    pins = read_pins(server) or {}
    for c in done:
        if c.kind == REMOVED:
            pins.pop(c.tool, None)
        else:
            pins[c.tool] = _pin(listed[c.tool])
    _write(server, pins)
    return done


def held(listings: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, str]:
    """canonical id -> changed | new, for each listed tool of a pinned server whose definition
    differs from its pin: what a project with `pinning: hold` withholds until approved."""
    return {c.id: c.kind for server, tools in listings.items() for c in changes(server, tools) if c.kind != REMOVED}


def pins_stamp(servers: Iterable[str]) -> tuple[tuple[int, int] | None, ...]:
    """What changes when a pin file of `servers` is written (its mtime and size; None: no file):
    a running gateway under `pinning: hold` compares this each second to see an approval."""
    out: list[tuple[int, int] | None] = []
    for server in servers:
        try:
            st = pins_path(server).stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


def delete_pins(server: str) -> None:
    pins_path(server).unlink(missing_ok=True)


__all__ = ["CHANGED", "NEW", "PINNED_FIELDS", "REMOVED", "Change", "approve", "changes", "definition",
           "delete_pins", "digest", "held", "pin_first_listing", "pins_path", "pins_stamp", "read_pins"]
