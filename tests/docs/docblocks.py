"""The console blocks of a Markdown document, and the small language that matches their output.

tests/docs/test_docs_console.py runs every ```console block of README.md and docs/*.md in
document order and compares what each command prints with the lines the document shows after it.
This module parses the blocks and does the matching; it runs nothing.

A console block is read like a terminal transcript:

- A line starting with `$ ` is a command. A line ending in `\\` continues on the next line (kept
  as typed: the shell joins them). A trailing `# comment` is dropped, but only where the shell
  would see a comment: a `#` at the start of a word, outside quotes (`'a # b'`, `"#x"` and
  `a#b` stay).
- The lines after a command, up to the next command or the end of the block, are its expected
  output: stdout and stderr together, as a terminal shows them. No lines: the command only has
  to succeed (exit 0). Every command must exit 0.
- A line that is exactly `...` matches any number of lines (none included).
- Before comparing, both sides are normalised line by line: trailing blanks are dropped and each
  named pattern below replaces what legitimately varies from run to run with its `<name>`:

    secret     a token secret, `mcpctl_` + 43 URL-safe characters
    timestamp  2026-12-30T14:23:27Z, 2026-11-30 12:32[:05], 20261130T133835357760Z
    date       2026-12-30 (not a protocol version: `protocol 2025-11-25` stays as it is)
    version    3.11.7, 2.3.0 (of Python, the SDK: what this machine has installed)
    duration   12.7 ms, 0.4 s (a measured time)
    age        24s, 3m, 2h, 5d (a resource's AGE)

  Paths are not patterns: the runner maps its temporary home onto the documents' `/home/me`.
- A block preceded (on the line before its fence) by `<!-- docs-test: skip REASON -->` is not
  run; the reason is required and the runner reports every skipped block.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ELLIPSIS = "..."
SKIP_MARKER = re.compile(r"^<!--\s*docs-test:\s*skip\b\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>[^`]*)$")

# Order matters: a timestamp must be replaced before the date inside it.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("secret", re.compile(r"\bmcpctl_[A-Za-z0-9_-]{43}")),
    ("timestamp", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?"
                             r"|\b\d{8}T\d{6,}Z")),
    ("date", re.compile(r"(?<!protocol )\b\d{4}-\d{2}-\d{2}\b")),
    ("version", re.compile(r"(?<![\d.])\d+\.\d+\.\d+(?![\d.])")),
    ("duration", re.compile(r"\b\d+(?:\.\d+)? ?ms\b|\b\d+\.\d+ ?s\b")),
    ("age", re.compile(r"(?<=\s)\d+[smhd](?=\s|$)")),
)


@dataclass
class Command:
    """One `$ command` of a console block and the output the document shows for it."""

    line: int                      # 1-based line of the `$` in the document
    text: str                      # as typed, continuations included, comment dropped
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    doc: Path
    line: int                      # 1-based line of the opening fence
    commands: list[Command]
    skip: str | None = None        # the reason, when the document marks it not to be run


def strip_comment(command: str) -> str:
    """`command` without a trailing shell comment: a `#` that starts a word outside quotes."""
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(command):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command.rstrip()


def parse(doc: Path, text: str | None = None) -> list[Block]:
    """Every ```console block of `doc`, in document order."""
    lines = (doc.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m["fence"], (m["info"].split() or [""])[0]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence)
                    and not lines[j].strip(fence[0]).strip()), len(lines))
        if lang == "console":
            skip = SKIP_MARKER.match(lines[i - 1]) if i else None
            if skip is not None and not skip["reason"]:
                raise ValueError(f"{doc.name}:{i}: a docs-test skip marker needs a reason")
            blocks.append(Block(doc, i + 1, _commands(lines, i + 1, end), skip["reason"] if skip else None))
        i = end + 1
    return blocks


def _commands(lines: Sequence[str], start: int, end: int) -> list[Command]:
    commands: list[Command] = []
    i = start
    while i < end:
        line = lines[i]
        if line.startswith("$ "):
            first, typed = i, line[2:]
            while typed.endswith("\\") and i + 1 < end:
                i += 1
                typed += "\n" + lines[i]
            commands.append(Command(first + 1, strip_comment(typed)))
        elif commands:
            commands[-1].expected.append(line)
        elif line.strip():
            raise ValueError(f"line {i + 1}: output before the block's first command: {line!r}")
        i += 1
    return commands


def normalise(line: str) -> str:
    line = line.rstrip()
    for name, pattern in PATTERNS:
        line = pattern.sub(f"<{name}>", line)
    return line


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether the normalised output matches the document's lines (`...` = any lines)."""
    want = [ELLIPSIS if e.strip() == ELLIPSIS else normalise(e) for e in expected]
    got = [normalise(a) for a in actual]
    # match[i][j]: want[i:] matches got[j:]
    match = [[False] * (len(got) + 1) for _ in range(len(want) + 1)]
    match[len(want)][len(got)] = True
    for i in range(len(want) - 1, -1, -1):
        for j in range(len(got), -1, -1):
            if want[i] == ELLIPSIS:
                match[i][j] = match[i + 1][j] or (j < len(got) and match[i][j + 1])
            else:
                match[i][j] = j < len(got) and want[i] == got[j] and match[i + 1][j + 1]
    return match[0][0]


def trim_trailing_blanks(lines: Iterable[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def report(doc: str, command: Command, actual: Sequence[str], exit_code: int) -> str:
    """What a reader needs to fix a document: where, which command, and a diff."""
    head = f"{doc}:{command.line}: $ {command.text}"
    if exit_code != 0:
        head += f"\n  exited {exit_code} (every documented command must succeed)"
    if not command.expected:
        return head + "\n  output:\n" + "".join(f"    {a}\n" for a in actual)
    diff = difflib.unified_diff([normalise(e) for e in command.expected], [normalise(a) for a in actual],
                                f"{doc} (line {command.line + 1}, normalised)", "actual output (normalised)",
                                lineterm="", n=2)
    return head + "\n" + "\n".join(f"  {d}" for d in diff) + \
        "\n  actual output, to paste into the document:\n" + "".join(f"    {a}\n" for a in actual)
