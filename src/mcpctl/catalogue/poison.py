"""Tool descriptions that carry what tool poisoning uses: flagged, never blocked.

A tool's description goes into the model's context verbatim, so an upstream (or whoever changed
it) can address the model there. This module knows the marks such descriptions share and says
which a description carries (`scan`); `doctor` and `surface` report the flags, nothing refuses a
tool because of them. Each `Flag` names the tool and the offending text, with every invisible
character written as a visible escape (`shown`); callers still pass it through the terminal
helpers (`terminal.visible`, the CLI's `safe`).

The marks:

- invisible: characters that show nothing but reach the model: zero-width characters (U+200B-
  U+200D, U+2060-U+2064, U+FEFF, U+180E), the bidirectional controls `terminal` already escapes
  (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069) and Unicode tag characters (U+E0000-U+E007F,
  which spell ASCII no screen shows: the flag decodes them);
- instruction: sentences aimed at the model rather than at describing the tool: to ignore other
  or previous instructions, to read credentials, keys, `~/.ssh`, `.env` or other dotfiles, to
  conceal what it does or not tell the user, to call a tool first "before using any tool";
- markup: `<IMPORTANT>`-style tags that frame hidden instructions (important, system,
  instructions, secret, hidden, admin, critical);
- length: descriptions over MAX_DESCRIPTION characters. Of 1,190 real descriptions (LiveMCPBench,
  MetaTool, ToolLens) the longest is 3,866 characters and the 99th percentile 2,532; 4,000
  characters is about 1,000 tokens, `doctor`'s budget for one tool's whole definition. Longer
  than any of them is room to hide instructions in, or a listing pasted in by mistake.

Parameter descriptions reach the model as verbatim as the tool's own (they are part of the input
schema it reads), so `scan_definition` scans them too: each parameter's `description` (and `title`),
nested object properties and array items included, up to MAX_DEPTH levels and MAX_PARAMETERS
texts per tool; a flag there says which parameter (`parameter 'path': ...`).

No I/O and no `mcp` here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from mcpctl.terminal import visible

MAX_DESCRIPTION: Final = 4_000
MAX_DEPTH: Final = 4                # nested schema levels whose parameter descriptions are scanned
MAX_PARAMETERS: Final = 500         # parameter texts scanned per tool (a schema is the upstream's to size)
EXCERPT: Final = 40                 # characters of context either side of an offending match

INVISIBLE: Final = "invisible"
INSTRUCTION: Final = "instruction"
MARKUP: Final = "markup"
LENGTH: Final = "length"

_TAGS: Final = "\U000e0000-\U000e007f"
_ZERO_WIDTH: Final = "\u180e\u200b-\u200d\u2060-\u2064\ufeff"
_BIDI: Final = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_INVISIBLE_RE: Final = re.compile(f"[{_ZERO_WIDTH}{_BIDI}{_TAGS}]+")
_ESCAPE_RE: Final = re.compile(f"[{_ZERO_WIDTH}{_BIDI}{_TAGS}]")

_GAP: Final = r"[^.!?\n]{0,80}?"          # within one sentence
_SECRET: Final = (r"(?:~/\.\w|\.ssh\b|id_rsa|id_ed25519|\.env\b|\.aws/|\.netrc|/etc/passwd|/etc/shadow|"
                  r"mcp\.json|credentials?\b|api[ _-]?keys?\b|private[ _-]keys?\b|secret[ _-]keys?\b|"
                  r"access[ _-]tokens?\b|passwords?\b|secrets\b)")
INSTRUCTIONS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (why, re.compile(rx, re.IGNORECASE)) for why, rx in (
        ("tells the model to ignore other instructions",
         r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
         r"(?:previous|prior|other|above|earlier|preceding|system|original)\s+"
         r"(?:instructions?|prompts?|rules|directions|guidelines|tools?)"),
        ("tells the model to read credentials or files outside the task",
         rf"\b(?:read|open|cat|load|access|send|include|pass|upload|attach|copy|exfiltrate|fetch|get)\b{_GAP}{_SECRET}"),
        ("tells the model to conceal what it does from the user",
         r"\b(?:do\s+not|don't|never|must\s+not|should\s+not)\s+(?:tell|inform|mention|reveal|notify|show|"
         r"alert|disclose)\b[^.!?\n]{0,30}?\buser\b"
         r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user\b"
         r"|\b(?:hide|conceal|keep)\b[^.!?\n]{0,30}?\bfrom\s+the\s+user\b"
         r"|\bthe\s+user\s+(?:must|should)\s+not\s+(?:know|see|be\s+told)\b"),
        ("tells the model to call a tool first",
         r"\bbefore\s+(?:using|calling|invoking|running)\s+(?:any|every|other|another)\b(?:\s+other)?\s+tools?\b"
         r"|\b(?:always|must)\s+(?:first\s+)?(?:call|use|invoke|run)\b[^.!?\n]{0,60}?\bbefore\s+"
         r"(?:any|every|other|another)\s+(?:other\s+)?tools?\b"),
    ))
_MARKUP_RE: Final = re.compile(r"</?\s*(?:important|system|instructions?|secret|hidden|admin|critical)\b[^>]{0,40}>",
                               re.IGNORECASE)


@dataclass(frozen=True)
class Flag:
    tool: str          # the tool's id (server/name)
    kind: str          # invisible | instruction | markup | length
    why: str           # what the mark is, in words
    text: str          # the offending text, invisible characters escaped (`shown`)


def shown(text: str) -> str:
    """`text` with invisible characters and terminal controls as visible escapes."""
    return visible(_ESCAPE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                                  else f"\\U{ord(m.group()):08x}", text))


def _excerpt(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - EXCERPT), min(len(text), end + EXCERPT)
    return ("…" if lo else "") + shown(" ".join(text[lo:hi].split())) + ("…" if hi < len(text) else "")


def _hidden_ascii(run: str) -> str:
    """What a run of tag characters spells (U+E0020-U+E007E shadow printable ASCII)."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def _invisible(tool: str, text: str) -> list[Flag]:
    out: list[Flag] = []
    for m in _INVISIBLE_RE.finditer(text):
        hidden = _hidden_ascii(m.group())
        why = f"{len(m.group())} invisible or bidirectional character(s)"
        if hidden:
            why += f" spelling {visible(hidden)!r}"
        out.append(Flag(tool, INVISIBLE, why, _excerpt(text, m.start(), m.end())))
    return out


def scan(tool: str, description: str | None) -> list[Flag]:
    """Every mark `description` carries, in the order of the module's list (none: clean)."""
    text = description or ""
    out = _invisible(tool, text)
    for why, rx in INSTRUCTIONS:
        m = rx.search(text)
        if m:
            out.append(Flag(tool, INSTRUCTION, why, _excerpt(text, m.start(), m.end())))
    m = _MARKUP_RE.search(text)
    if m:
        out.append(Flag(tool, MARKUP, "hidden-instruction markup", _excerpt(text, m.start(), m.end())))
    if len(text) > MAX_DESCRIPTION:
        out.append(Flag(tool, LENGTH, f"{len(text):,} characters, over {MAX_DESCRIPTION:,}",
                        shown(" ".join(text[:2 * EXCERPT].split())) + "…"))
    return out


def scan_all(tools: Iterable[tuple[str, str | None]]) -> list[Flag]:
    """The flags of every (tool id, description), tool by tool."""
    return [f for tool, description in tools for f in scan(tool, description)]


def parameter_texts(schema: Any, depth: int = 0, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(parameter path, text) of every parameter description and title in an input schema."""
    if depth >= MAX_DEPTH or not isinstance(schema, Mapping):
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            path = f"{prefix}{name}"
            if isinstance(sub, Mapping):
                for key in ("title", "description"):
                    text = sub.get(key)
                    if isinstance(text, str) and text:
                        yield path, text
                yield from parameter_texts(sub, depth + 1, path + ".")
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from parameter_texts(items, depth + 1, prefix[:-1] + "[]." if prefix else "[].")


def scan_definition(tool: str, wire: Mapping[str, Any]) -> list[Flag]:
    """The flags of a whole tool definition: its description, then its parameters' texts."""
    description = wire.get("description")
    out = scan(tool, description if isinstance(description, str) else None)
    for n, (param, text) in enumerate(parameter_texts(wire.get("inputSchema"))):
        if n >= MAX_PARAMETERS:
            break
        out.extend(replace(f, why=f"parameter {shown(param)!r}: {f.why}") for f in scan(tool, text))
    return out


def scan_definitions(tools: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Flag]:
    """The flags of every (tool id, wire definition), tool by tool."""
    return [f for tool, wire in tools for f in scan_definition(tool, wire)]


__all__ = ["INSTRUCTION", "INVISIBLE", "LENGTH", "MARKUP", "MAX_DESCRIPTION", "Flag", "parameter_texts", "scan",
           "scan_all", "scan_definition", "scan_definitions", "shown"]
