"""Downstream pagination of the four lists (no `mcp` import: the early stdio front uses it too).

By default (`serve --page-size 0`) every list is one page without `nextCursor`, exactly as a
client that never pages expects. With a page size N each list answers N items and an opaque
`nextCursor`. A cursor is honoured whenever a client sends one, whatever the page size (a client
may send one it got earlier). It is the urlsafe base64 of `{"s": section, "o": offset, "v":
catalogue version}`; the offset counts items of that session's list. A cursor minted before the
catalogue changed is honoured at its offset on the new list (the `list_changed` notification
already told the client to list again); an offset past the end is an empty last page. A cursor
that does not decode, or that was minted for another list, is `CursorError` (-32602).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any, Final, TypeVar

SECTIONS: Final = ("tools", "resources", "resourceTemplates", "prompts")
METHOD_SECTION: Final = {"tools/list": "tools", "resources/list": "resources",
                         "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}
_MAX_CURSOR: Final = 512      # characters; ours are well under 100

T = TypeVar("T")


class CursorError(ValueError):
    """A cursor this gateway did not mint for this list (JSON-RPC -32602, Invalid params)."""


def encode(section: str, offset: int, version: int) -> str:
    raw = json.dumps({"s": section, "o": offset, "v": version}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode(cursor: Any, section: str) -> int:
    """The offset `cursor` points at in `section`, or CursorError."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > _MAX_CURSOR:
        raise CursorError(f"invalid cursor for {_method(section)}: not a cursor this server issued")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError):
        raise CursorError(f"invalid cursor for {_method(section)}: not a cursor this server issued") from None
    offset = data.get("o") if isinstance(data, dict) else None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or data.get("s") not in SECTIONS:
        raise CursorError(f"invalid cursor for {_method(section)}: not a cursor this server issued")
    if data["s"] != section:
        raise CursorError(f"invalid cursor for {_method(section)}: it was issued by {_method(data['s'])}")
    return offset


def page(items: Sequence[T], section: str, cursor: Any, size: int, version: int
         ) -> tuple[Sequence[T], str | None]:
    """The page of `items` a request with `cursor` (None: from the start) gets, and its
    `nextCursor` (None on the last page). `size` 0: the rest of the list in one page."""
    start = 0 if cursor is None else decode(cursor, section)
    if start == 0 and size <= 0:
        return items, None
    end = len(items) if size <= 0 else start + size
    return items[start:end], encode(section, end, version) if end < len(items) else None


def _method(section: str) -> str:
    return next(m for m, s in METHOD_SECTION.items() if s == section)
