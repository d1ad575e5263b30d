"""Text mcpctl did not write (an upstream's tool names and descriptions, a server's errors, a
client's name), made safe to show on a terminal: the one place that knows which characters must
never reach one raw. The CLI's `safe` (which also escapes rich markup) and the gateway's stderr
log use it; JSON output uses `json_escaped`.

Unsafe: C0 and C1 controls (ESC starts a terminal command, NUL and CR hide what follows), DEL,
and the bidirectional controls that make text read otherwise than it is stored ("Trojan Source":
U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C).
"""

from __future__ import annotations

import re
from typing import Final

_BIDI: Final = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
UNSAFE: Final = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_IN_JSON: Final = re.compile(f"[\x7f-\x9f{_BIDI}]")     # json.dumps escapes C0 itself


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """`text` with every unsafe character as a visible escape (`\\x1b`, `\\u202e`)."""
    return UNSAFE.sub(_escape, text)


def json_escaped(text: str) -> str:
    """JSON text with DEL, C1 and bidi controls as `\\u` escapes: the same value to a parser."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
