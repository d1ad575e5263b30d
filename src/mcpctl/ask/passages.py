"""Cutting a resource's text into passages at natural boundaries (no `mcp` import).

A passage is what `ask` ranks, returns and cites: a few paragraphs of one resource, at most
`MAX_CHARS` characters (about 200 tokens: the MiniLM model reads 256 word pieces, so a passage is
embedded whole). Paragraphs (blank lines) are the first boundary, kept together up to the limit;
a longer paragraph is cut between lines, a longer line between words, a longer word anywhere.
A Markdown heading starts a new passage and is carried (as `heading`) by the passages under it,
so a passage about "Deploys" still says so when its own text does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

MAX_CHARS: Final = 800            # a passage's text at most (characters)
MIN_CHARS: Final = 200            # paragraphs are merged until a passage has at least this much
_BLANK: Final = re.compile(r"\n[ \t]*\n+")
_HEADING: Final = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of one resource."""

    server: str
    uri: str               # the upstream's URI: what the passage cites (the gateway routes it too)
    name: str              # the resource's title or name
    ordinal: int           # its place in the resource, from 0
    text: str
    heading: str = ""      # the Markdown heading it falls under, if any

    @property
    def id(self) -> str:
        return f"{self.server}\x1f{self.uri}\x1f{self.ordinal}"


def _pieces(paragraph: str, limit: int) -> Iterator[str]:
    """A paragraph longer than `limit`: lines, then words, then characters."""
    if len(paragraph) <= limit:
        yield paragraph
        return
    buf = ""
    for line in paragraph.split("\n"):
        for part in _split_line(line, limit):
            if buf and len(buf) + 1 + len(part) > limit:
                yield buf
                buf = ""
            buf = f"{buf}\n{part}" if buf else part
    if buf:
        yield buf


def _split_line(line: str, limit: int) -> Iterator[str]:
    if len(line) <= limit:
        yield line
        return
    buf = ""
    for word in line.split(" "):
        while len(word) > limit:               # no space for a long while: cut anywhere
            if buf:
                yield buf
                buf = ""
            yield word[:limit]
            word = word[limit:]
        if buf and len(buf) + 1 + len(word) > limit:
            yield buf
            buf = ""
        buf = f"{buf} {word}" if buf else word
    if buf:
        yield buf


def cut(text: str, *, limit: int = MAX_CHARS, least: int = MIN_CHARS) -> list[tuple[str, str]]:
    """(heading, passage text) pairs of `text`, in order; blank text has none."""
    out: list[tuple[str, str]] = []
    heading, buf = "", ""

    def flush() -> None:
        nonlocal buf
        if buf.strip():
            out.append((heading, buf.strip()))
        buf = ""

    for para in _BLANK.split(text.replace("\r\n", "\n")):
        para = para.strip()
        if not para:
            continue
        first = para.split("\n", 1)[0]
        m = _HEADING.match(first)
        if m:                                      # a heading starts a new passage
            flush()
            heading = m.group(1)
            if "\n" not in para:                  # a heading alone: carried by what follows
                continue
        for piece in _pieces(para, limit):
            if buf and (len(buf) >= least or len(buf) + 2 + len(piece) > limit):
                flush()
            buf = f"{buf}\n\n{piece}" if buf else piece
    flush()
    return out


def passages_of(server: str, uri: str, name: str, text: str) -> list[Passage]:
    """The passages of one resource's text."""
    return [Passage(server, uri, name, i, body, heading) for i, (heading, body) in enumerate(cut(text))]
