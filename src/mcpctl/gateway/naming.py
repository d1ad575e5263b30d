"""Presented names: how canonical ids `server/tool` appear to MCP clients (no `mcp` import).

Presentation is a separate, swappable step (`FlatPresentation` here: `<server>__<tool>`), and
names are made portable: only `[A-Za-z0-9_-]`, at most `names.maxLength` characters so the
client's own `mcp__<name>__` prefix still fits in 64, shortened deterministically with a short
hash when too long or when characters had to be mapped. The same inputs always give the same
name, so names are stable across restarts and never collide.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final, Protocol

from mcpctl.resources.kinds import ProjectSpec

SEP: Final = "__"
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LEN: Final = 8


def _short_hash(text: str, n: int = _HASH_LEN) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def portable_name(raw: str, canonical_id: str, max_length: int) -> str:
    """Map `raw` into `^[A-Za-z0-9_-]{1,max_length}$`, deterministically and collision-free.

    A name that needs no mapping and fits is returned as is. Otherwise it is mapped,
    truncated and suffixed with a hash of the canonical id, so two different tools can
    never end up with the same presented name.
    """
    if raw and len(raw) <= max_length and not _BAD_CHARS.search(raw):
        return raw
    mapped = _BAD_CHARS.sub("_", raw) or "x"
    suffix = "_" + _short_hash(canonical_id)
    return mapped[: max(1, max_length - len(suffix))] + suffix


class Presentation(Protocol):
    """Turns canonical ids into presented names (and back, through the catalogue's table)."""

    def tool_name(self, server: str, tool: str) -> str: ...

    def prompt_name(self, server: str, prompt: str) -> str: ...


@dataclass(frozen=True)
class FlatPresentation:
    """`<server>__<tool>`, portable and budgeted (the `flat` presentation mode)."""

    max_length: int = 48

    def tool_name(self, server: str, tool: str) -> str:
        return portable_name(f"{server}{SEP}{tool}", f"{server}/{tool}", self.max_length)

    def prompt_name(self, server: str, prompt: str) -> str:
        return portable_name(f"{server}{SEP}{prompt}", f"prompt:{server}/{prompt}", self.max_length)


def presentation_for(project: ProjectSpec) -> Presentation:
    # Other modes (favourite-index, deferred, spec-style names) come with the favourites issue.
    return FlatPresentation(max_length=project.names.max_length)



def presented_name(canonical_id: str, project: ProjectSpec) -> str:
    """The name the gateway presents for `server/tool` in `project` (before collision handling)."""
    server, _, tool = canonical_id.partition("/")
    return presentation_for(project).tool_name(server, tool)
