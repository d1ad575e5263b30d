"""What a flag is and how its text is shown: the tool, the kind of mark, why, and the offending text
with every invisible character written as a visible escape (callers still pass it through the
terminal helpers); and the words the CLI says flags in (`MARK`, `describe`, `lines`, `headline`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from mcpctl.terminal import visible

MARK: Final = "⚠"                  # beside a flagged tool wherever the CLI lists it
EXCERPT: Final = 40                 # characters of context either side of an offending match

INVISIBLE: Final = "invisible"
INSTRUCTION: Final = "instruction"
MARKUP: Final = "markup"
LENGTH: Final = "length"
OBFUSCATION: Final = "obfuscation"

_TAGS: Final = "\U000e0000-\U000e007f"
_VARIATION: Final = "\U000e0100-\U000e01ef"          # variation selectors 17-256: bytes hidden after an emoji
_ZERO_WIDTH: Final = "\u180e\u200b-\u200d\u2060-\u2064\ufeff"
_BIDI: Final = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS: Final = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"   # C0 but tab and line breaks, DEL, C1 (ANSI escapes)
HIDING: Final = f"{_ZERO_WIDTH}{_BIDI}{_TAGS}{_VARIATION}{_CONTROLS}"
_ESCAPE_RE: Final = re.compile(f"[{_ZERO_WIDTH}{_BIDI}{_TAGS}{_VARIATION}]")


@dataclass(frozen=True)
class Flag:
    tool: str          # the tool's id (server/name)
    kind: str          # invisible | instruction | markup | obfuscation | length
    why: str           # what the mark is, in words (where in the definition, when not the description)
    text: str          # the offending text, invisible characters escaped (`shown`)


def shown(text: str) -> str:
    """`text` with invisible characters and terminal controls as visible escapes."""
    return visible(_ESCAPE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                                  else f"\\U{ord(m.group()):08x}", text))


def excerpt(text: str, start: int, end: int) -> str:
    """The match and EXCERPT characters either side, on one line, shown."""
    lo, hi = max(0, start - EXCERPT), min(len(text), end + EXCERPT)
    return ("…" if lo else "") + shown(" ".join(text[lo:hi].split())) + ("…" if hi < len(text) else "")


def describe(flag: Flag) -> str:
    """One flag as a line: what the mark is, and the offending text (escaped)."""
    return f"{flag.why}: {flag.text!r}"


def lines(found: Mapping[str, list[Flag]]) -> list[str]:
    """`  ⚠ server/tool: why: 'text'`, one line per flag, tool by tool."""
    return [f"  {MARK} {tool}: {describe(f)}" for tool, flags in found.items() for f in flags]


def headline(count: int, one: str, many: str) -> str:
    """`1 tool description carries …`, `2 tool descriptions carry …`."""
    return f"{count} {one if count == 1 else many} carr{'ies' if count == 1 else 'y'} what tool poisoning uses"
