"""An example MCP server: small, deterministic text utilities.

    python -m mcpctl.examples.textkit

word_count (structured output), slugify, regex_search, diff_text, hash_text and echo. All are
read-only and touch nothing outside the request.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

from mcp.server import Server, ServerRequestContext
from pydantic import BaseModel, Field

from mcpctl.examples._base import Args, ToolBox, ToolFailure, arg_parser, make_server, parse_args, serve_stdio

MAX_TEXT = 1_000_000
_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]+(?=\s|$)|[^.!?]+$")


class TextArgs(Args):
    text: str = Field(max_length=MAX_TEXT, description="The text to analyse.")


class WordCount(BaseModel):
    words: int
    characters: int = Field(description="All characters, including whitespace.")
    characters_no_spaces: int
    lines: int
    sentences: int
    paragraphs: int = Field(description="Blocks of text separated by blank lines.")


class SlugArgs(Args):
    text: str = Field(max_length=10_000, description="The text to turn into a URL slug, e.g. a title.")
    separator: Literal["-", "_", "."] = Field(default="-", description="The character between words.")
    max_length: int = Field(default=80, ge=1, le=500, description="Cut the slug at a word boundary to this length.")


class RegexArgs(Args):
    pattern: str = Field(min_length=1, max_length=1000, description="A Python regular expression.")
    text: str = Field(max_length=MAX_TEXT, description="The text to search.")
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    multiline: bool = Field(default=False, description="Make ^ and $ match at every line.")
    max_matches: int = Field(default=100, ge=1, le=10_000, description="Stop after this many matches.")


class DiffArgs(Args):
    before: str = Field(max_length=MAX_TEXT, description="The original text.")
    after: str = Field(max_length=MAX_TEXT, description="The changed text.")
    context_lines: int = Field(default=3, ge=0, le=50, description="Unchanged lines shown around each change.")
    before_name: str = Field(default="before", max_length=200, description="Label of the original in the header.")
    after_name: str = Field(default="after", max_length=200, description="Label of the changed text in the header.")


class HashArgs(Args):
    text: str = Field(max_length=MAX_TEXT, description="The text to hash (encoded as UTF-8).")
    algorithm: Literal["md5", "sha1", "sha256", "sha512", "blake2b"] = Field(
        default="sha256", description="The hash function.")


class EchoArgs(Args):
    text: str = Field(max_length=MAX_TEXT, description="The text to send back unchanged.")


def slugify(text: str, separator: str = "-", max_length: int = 80) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}{separator}{word}" if slug else word
        if len(candidate) > max_length:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:max_length]
    return slug


def build() -> Server[Any]:
    box = ToolBox()

    @box.tool("word_count", title="Word count", args=TextArgs, output=WordCount, read_only=True,
              description="Count the words, characters, lines, sentences and paragraphs of a text.")
    async def word_count(ctx: ServerRequestContext[Any], a: TextArgs) -> dict[str, Any]:
        text = a.text
        return WordCount(
            words=len(text.split()),
            characters=len(text),
            characters_no_spaces=sum(1 for c in text if not c.isspace()),
            lines=len(text.splitlines()),
            sentences=sum(1 for s in _SENTENCE_RE.findall(text) if s.strip()),
            paragraphs=sum(1 for p in re.split(r"\n\s*\n", text) if p.strip()),
        ).model_dump()

    @box.tool("slugify", title="Slugify", args=SlugArgs, read_only=True,
              description="Turn a title or phrase into a lowercase ASCII URL slug, e.g. 'Hello, World!' → "
              "'hello-world'.")
    async def slugify_tool(ctx: ServerRequestContext[Any], a: SlugArgs) -> str:
        slug = slugify(a.text, a.separator, a.max_length)
        if not slug:
            raise ToolFailure("the text has no letters or digits to make a slug from")
        return slug

    @box.tool("regex_search", title="Regex search", args=RegexArgs, read_only=True,
              description="Find every match of a regular expression in a text; returns each match with its "
              "position, line number and capture groups.")
    async def regex_search(ctx: ServerRequestContext[Any], a: RegexArgs) -> dict[str, Any]:
        flags = (re.IGNORECASE if a.ignore_case else 0) | (re.MULTILINE if a.multiline else 0)
        try:
            rx = re.compile(a.pattern, flags)
        except re.error as e:
            raise ToolFailure(f"invalid regular expression {a.pattern!r}: {e}") from None
        matches: list[dict[str, Any]] = []
        truncated = False
        for m in rx.finditer(a.text):
            if len(matches) == a.max_matches:
                truncated = True
                break
            matches.append({
                "match": m.group(0), "start": m.start(), "end": m.end(),
                "line": a.text.count("\n", 0, m.start()) + 1,
                "groups": list(m.groups()), "named": m.groupdict(),
            })
        return {"count": len(matches), "truncated": truncated, "matches": matches}

    @box.tool("diff_text", title="Diff texts", args=DiffArgs, read_only=True,
              description="Compare two texts line by line and return a unified diff (empty when they are equal).")
    async def diff_text(ctx: ServerRequestContext[Any], a: DiffArgs) -> str:
        lines = difflib.unified_diff(
            a.before.splitlines(keepends=True), a.after.splitlines(keepends=True),
            fromfile=a.before_name, tofile=a.after_name, n=a.context_lines,
        )
        out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return out or "The texts are identical."

    @box.tool("hash_text", title="Hash text", args=HashArgs, read_only=True,
              description="Compute a checksum of a text (md5, sha1, sha256, sha512 or blake2b) as hex digits.")
    async def hash_text(ctx: ServerRequestContext[Any], a: HashArgs) -> str:
        return hashlib.new(a.algorithm, a.text.encode("utf-8")).hexdigest()

    @box.tool("echo", title="Echo", args=EchoArgs, read_only=True,
              description="Return the given text unchanged; useful to test a connection.")
    async def echo(ctx: ServerRequestContext[Any], a: EchoArgs) -> str:
        return a.text

    return make_server("mcpctl-textkit", box,
                       instructions="Deterministic text utilities: counting, slugs, regex search, diffs, hashes.")


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser("python -m mcpctl.examples.textkit", "An MCP server of text utilities (stdio).")
    ns = parse_args(parser, argv)
    serve_stdio(build(), ns.log_level)


if __name__ == "__main__":
    main()
