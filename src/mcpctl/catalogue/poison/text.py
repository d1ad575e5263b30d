"""The marks one text carries (`scan`), and those a name carries (`scan_name`): the patterns of
`marks`, run on the text as written and again on it as the model reads it (`hidden.normalised`),
plus what `hidden` finds hidden. No I/O here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from mcpctl.catalogue.poison import hidden
from mcpctl.catalogue.poison.flags import (
    EXCERPT,
    INSTRUCTION,
    INVISIBLE,
    LENGTH,
    MARKUP,
    OBFUSCATION,
    Flag,
    excerpt,
    shown,
)
from mcpctl.catalogue.poison.marks import COMMENT, INSTRUCTIONS, NAMES_SECRETS, READ_SECRETS, candidates
from mcpctl.catalogue.poison.marks import MARKUP as MARKUP_RE
from mcpctl.terminal import visible

MAX_DESCRIPTION: Final = 4_000

_NAME_SECRETS: Final = re.compile(
    r"\b(?:id rsa|rsa|ed25519|passwd|netrc|pgpass|npmrc|gnupg|mnemonic|seed phrase|env file|dot env|mcp json|"
    r"mcp config|credentials file)\b"
    r"|\bssh\b.*\b(?:key|keys|id|folder|dir|directory|private|file|config)\b"
    r"|\b(?:key|keys|private|id)\b.*\bssh\b|\baws\b.*\b(?:credentials|secret)\b"
    r"|\bprivate key\b.*\b(?:home|ssh|dot|wallet|user)\b"
    r"|\b(?:and|also|always|silently|secretly) (?:bcc|cc|forward|upload|exfiltrate)\b")


def _invisible(tool: str, text: str) -> list[Flag]:
    out: list[Flag] = []
    for m in hidden.invisible_runs(text):
        spelled = hidden.hidden_ascii(m.group())
        why = f"{len(m.group())} invisible, bidirectional or control character(s)"
        if spelled:
            why += f" spelling {visible(spelled)!r}"
        out.append(Flag(tool, INVISIBLE, why, excerpt(text, m.start(), m.end())))
    return out


def _markup(tool: str, text: str) -> list[Flag]:
    out: list[Flag] = []
    if not ("<" in text or "[" in text or "#" in text):
        return out
    m = MARKUP_RE.search(text)
    if m:
        out.append(Flag(tool, MARKUP, "hidden-instruction markup", excerpt(text, m.start(), m.end())))
    m = COMMENT.search(text)
    if m:
        out.append(Flag(tool, MARKUP, "a Markdown or HTML comment (hidden when rendered)",
                        excerpt(text, m.start(), m.end() + EXCERPT)))
    return out


_TOKEN: Final = re.compile(r"[a-z0-9]+|[~$&]")


def words(text: str) -> frozenset[str]:
    """The lowercase ASCII words of `text`, for the patterns' gate (`marks.Rule.words`)."""
    return frozenset(_TOKEN.findall(text.lower()))


_LONG: Final = 300                                  # longer texts are gated sentence by sentence
_BREAK: Final = re.compile(r"[.!?](?=\s)|\n")


def _sentences(text: str) -> list[tuple[int, int, set[int]]]:
    """(start, end, the patterns it may match) of each sentence of `text` (most patterns stay within one)."""
    out = []
    start = 0
    for m in _BREAK.finditer(text):
        if m.end() - start > 2:
            out.append((start, m.end(), candidates(words(text[start:m.end()]))))
        start = m.end()
    if len(text) > start:
        out.append((start, len(text), candidates(words(text[start:]))))
    return out


def instructions(text: str, held: frozenset[str] | None = None, gate: bool = True,
                 ) -> Iterator[tuple[str, re.Match[str]]]:
    """(why, match) of every instruction pattern `text` matches; `held`: its `words` when known;
    `gate=False` runs each pattern on the whole text regardless of its words."""
    held = words(text) if held is None else held
    sentences = None
    for i in sorted(candidates(held)) if gate else range(len(INSTRUCTIONS)):
        rule = INSTRUCTIONS[i]
        if not gate or rule.whole or len(text) <= _LONG:
            m = rule.rx.search(text)
        else:
            sentences = _sentences(text) if sentences is None else sentences
            m = next((m for start, end, may in sentences if i in may and (m := rule.rx.search(text, start, end))),
                     None)
        if m:
            yield rule.why, m


def _read_past_hiding(tool: str, text: str, held: frozenset[str], found: set[str]) -> list[Flag]:
    """Instructions that match only once what hides them is undone."""
    plain, undone = hidden.normalised(text, held)
    if not undone or (undone == [hidden.LOOKALIKES] and words(plain) == held):   # only punctuation changed
        return []
    out: list[Flag] = []
    for why, m in instructions(plain):
        if why in found or (why == NAMES_SECRETS and READ_SECRETS in found):
            continue
        found.add(why)
        out.append(Flag(tool, OBFUSCATION, f"{why}, once read past hiding ({'; '.join(undone)})",
                        excerpt(plain, m.start(), m.end())))
    return out


def _obfuscation(tool: str, text: str, held: frozenset[str], found: set[str]) -> list[Flag]:
    out = _read_past_hiding(tool, text, held, found)
    word = None if text.isascii() else hidden.mixed_script(text)
    if word:
        out.append(Flag(tool, OBFUSCATION, "a word mixing Latin with Cyrillic or Greek look-alike letters",
                        shown(word)))
    if not text.isascii() and hidden.styled_letters(text):
        out.append(Flag(tool, OBFUSCATION, "fullwidth or mathematical letters (drawn like ASCII, read past filters)",
                        shown(" ".join(text[:2 * EXCERPT].split()))))
    decoded = hidden.base64_text(text)
    if decoded:
        m, words = decoded
        out.append(Flag(tool, OBFUSCATION, f"base64 that decodes to text: {shown(words[:2 * EXCERPT])!r}",
                        excerpt(text, m.start(), m.end())))
    pad = hidden.padded(text)
    if pad:
        out.append(Flag(tool, OBFUSCATION, f"{len(pad.group()):,} blank characters push what follows out of view",
                        excerpt(text, pad.end(), pad.end())))
    return out


def scan(tool: str, description: str | None) -> list[Flag]:
    """Every mark `description` carries (none: clean), invisible characters first."""
    text = description or ""
    out = _invisible(tool, text) if hidden.has_hiding(text) else []
    held = words(text)
    found: set[str] = set()
    for why, m in instructions(text, held):
        if why == NAMES_SECRETS and READ_SECRETS in found:
            continue                    # said already: "tells the model to read credentials" names them
        out.append(Flag(tool, INSTRUCTION, why, excerpt(text, m.start(), m.end())))
        found.add(why)
    out += _markup(tool, text)
    out += _obfuscation(tool, text, held, found)
    if len(text) > MAX_DESCRIPTION:
        out.append(Flag(tool, LENGTH, f"{len(text):,} characters, over {MAX_DESCRIPTION:,}",
                        shown(" ".join(text[:2 * EXCERPT].split())) + "…"))
    return out


_NAME_SECRET_WORDS: Final = frozenset({"rsa", "ed25519", "passwd", "netrc", "pgpass", "npmrc", "gnupg", "mnemonic",
                                       "seed", "env", "mcp", "credentials", "ssh", "aws", "private", "bcc", "cc",
                                       "forward", "upload", "exfiltrate"})
_NAME_PART: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def name_words(name: str) -> str:
    """An identifier as the words it is made of: `contentFromReading_ssh-id` -> "content from reading ssh id"."""
    if name.isalpha() and name.islower():
        return name
    return " ".join(_NAME_PART.findall(name)).lower()


def scan_name(tool: str, name: str) -> list[Flag]:
    """The marks a name carries (a tool's, a parameter's, or a value written as one identifier),
    read as the words it is made of."""
    out = _invisible(tool, name) if hidden.has_hiding(name) else []
    phrase = name_words(name)
    if not _NAME_SECRET_WORDS.isdisjoint(phrase.split()) and _NAME_SECRETS.search(phrase):
        out.append(Flag(tool, INSTRUCTION, "its words ask for secret files or keys, or to send copies", shown(name)))
    if phrase.count(" ") >= 2:
        for why, _ in instructions(phrase):
            out.append(Flag(tool, INSTRUCTION, f"its words read as an instruction: {why}", shown(name)))
    return out
