"""Large, deterministic payloads, sized by argument: the fault server returns them (`--large-tools`)
and the tests rebuild them to compare what a client reads back."""

from __future__ import annotations

import base64
import json
from typing import Any


def large_text(size: int) -> str:
    """About `size` characters of prose: paragraphs of numbered lines, some non-ASCII."""
    out: list[str] = []
    total, i = 0, 0
    while total < size:
        line = f"line {i}: the quick brown fox — jumps over the lazy dog ({i * 7 % 1000}) ✓\n"
        if i % 9 == 8:
            line += "\n"
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)[:size]


def large_items(size: int) -> list[dict[str, Any]]:
    """A list of records whose compact JSON is about `size` characters."""
    items: list[dict[str, Any]] = []
    total, i = 2, 0
    while total < size:
        item = {"id": i, "name": f"item {i}", "tags": ["a", "b, c", "]}"][: i % 4], "note": "é" * (i % 5)}
        items.append(item)
        total += len(json.dumps(item, ensure_ascii=False)) + 2
        i += 1
    return items


def large_json(size: int) -> str:
    """A JSON array of about `size` characters, with the json module's spaces after separators
    (the whitespace must survive too)."""
    return json.dumps(large_items(size), ensure_ascii=False)


def image_data(size: int) -> str:
    """`size` characters of base64 (not a real PNG: nothing in the path decodes it)."""
    raw = bytes(i % 251 for i in range(size * 3 // 4 + 3))
    return base64.b64encode(raw).decode("ascii")[:size - size % 4]
