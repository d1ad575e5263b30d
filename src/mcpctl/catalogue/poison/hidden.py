"""Text written so that a reader, or a filter, does not see what the model reads: invisible
characters and terminal escapes, look-alike letters, base64, paths spelled out in words, padding
that pushes a sentence out of view.

`normalised` undoes what can be undone (invisible characters dropped, NFKC, Cyrillic and Greek
look-alikes read as the Latin letters they imitate, "dot ssh" / "tilde slash" read as `.ssh` / `~/`,
padding collapsed) so the instruction patterns can run again on what the model reads; the other
functions say what was hidden. No I/O here.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator
from typing import Final

from mcpctl.catalogue.poison.flags import HIDING

_INVISIBLE_RE: Final = re.compile(f"[{HIDING}]+")
LOOKALIKES: Final = "look-alike letters read as Latin"
_TAG_ASCII: Final = range(0xE0020, 0xE007F)

# Cyrillic and Greek letters drawn like Latin ones (Unicode TR #39 confusables, the common ones).
_LOOKALIKES: Final = str.maketrans(
    "аеорсухіјѕԁһӏԛԝвкмнтАВЕКМНОРСТХІЈЅαοερτυνιχκΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlqwbkmhtABEKMHOPCTXIJSaoeptuvixkABEZHIKMNOPTYX")
_LATIN: Final = re.compile(r"[A-Za-z]")
_LOOKALIKE_RE: Final = re.compile("[" + "".join(chr(c) for c in _LOOKALIKES) + "]")
_WORD: Final = re.compile(r"\w{3,}")
_STYLED: Final = re.compile(r"[\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff]")   # fullwidth, math letters

_SPELLED: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple((re.compile(rx, re.IGNORECASE), to) for rx, to in (
    (r"\btilde\b\s*", "~"),
    (r"\s*\bslash\b\s*", "/"),
    (r"\bdot[\s-]+(?=[a-z])", "."),
    (r"\s*\b(?:underscore)\b\s*", "_"),
    (r"\bid[\s-]+rsa\b", "id_rsa"),
))
_SPELLED_HINT: Final = re.compile(r"\b(?:tilde|slash|dot|underscore|id[\s-]+rsa)\b", re.IGNORECASE)
_SPELLED_WORDS: Final = frozenset({"tilde", "slash", "dot", "underscore", "rsa"})

_BLANKS: Final = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]{40,}(?=\S)")
_BLANK_LINES: Final = re.compile(r"\n(?:[ \t]*+\n){7,}[ \t]*+(?=\S)")
_BASE64: Final = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{20,}={0,2}(?![A-Za-z0-9+/=_-])")


def invisible_runs(text: str) -> Iterator[re.Match[str]]:
    return _INVISIBLE_RE.finditer(text)


def hidden_ascii(run: str) -> str:
    """What a run of tag characters spells (U+E0020-U+E007E shadow printable ASCII)."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if ord(c) in _TAG_ASCII)


def mixed_script(text: str) -> str | None:
    """The first word mixing Latin letters (two or more) with Cyrillic or Greek look-alikes of them
    ("іgnore" with a Cyrillic і; not "10μm", whose μ imitates no Latin letter), if any."""
    if not _LOOKALIKE_RE.search(text):
        return None
    for m in _WORD.finditer(text):
        word = m.group()
        if _LOOKALIKE_RE.search(word) and len(_LATIN.findall(word)) >= 2:
            return word
    return None


def styled_letters(text: str) -> bool:
    """Whether `text` has fullwidth or mathematical letters (drawn like ASCII, not matched as it)."""
    return bool(_STYLED.search(text))


def has_hiding(text: str) -> bool:
    """Whether `text` has invisible characters or controls (a fast answer for plain printable ASCII)."""
    if text.isascii() and text.isprintable():
        return False
    return bool(_INVISIBLE_RE.search(text))


def padded(text: str) -> re.Match[str] | None:
    """The first run of padding (40 blanks, or 8 line breaks) followed by more text, if any."""
    if len(text) < 40:
        return None
    m = None
    if "  " in text or "\t" in text or not text.isascii():
        m = _BLANKS.search(text)
    if m is None and text.count("\n") >= 8:
        m = _BLANK_LINES.search(text)
    return m


def normalised(text: str, held: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """`text` as the model reads it, and what was undone to get there (empty: nothing changed).
    `held`: the words of `text` when known (`text.words`), to skip what cannot apply."""
    undone: list[str] = []
    out = text
    if has_hiding(out):
        out = _INVISIBLE_RE.sub("", out)
        undone.append("invisible characters dropped")
    if not out.isascii():
        plain = unicodedata.normalize("NFKC", out).translate(_LOOKALIKES)
        if plain != out:
            out = plain
            undone.append(LOOKALIKES)
    if (undone or not held.isdisjoint(_SPELLED_WORDS)) and _SPELLED_HINT.search(out):
        spelled = out
        for rx, to in _SPELLED:
            spelled = rx.sub(to, spelled)
        if spelled != out:
            out = spelled
            undone.append("spelled-out symbols read as symbols")
    if padded(out):
        out = _BLANK_LINES.sub("\n", _BLANKS.sub(" ", out))
        undone.append("padding collapsed")
    return out, undone


def _readable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(c.isalpha() for c in text)
    printable = sum(c.isprintable() for c in text)
    if printable < 0.95 * len(text) or letters < 0.6 * len(text) or text.count(" ") < 2:
        return None
    return text


def base64_text(text: str) -> tuple[re.Match[str], str] | None:
    """The first base64 run in `text` that decodes to readable words, and the words."""
    if len(text) < 20:
        return None
    for m in _BASE64.finditer(text):
        run = m.group()
        if not (re.search(r"[a-z]", run) and re.search(r"[A-Z]", run)):
            continue
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(run + "=" * (-len(run) % 4))
            except (binascii.Error, ValueError):
                continue
            words = _readable(raw)
            if words:
                return m, words
    return None
