"""Results in sections: the content stage after routing (DESIGN §11), without `mcp`.

A tool result whose text is over the project's `results.maxTokens` reaches the client as its
first section plus a note; the rest is kept here, for the session and credential that made the
call only, and read with the built-in `read_result(result_id, section)`.

- **Where it cuts.** Text that is a JSON array or object (the whole block parses) is cut between
  its elements or members, and every section is itself an array or object (valid JSON): joining
  the sections back means dropping each section's closing bracket and the next one's opening
  bracket and putting a comma between them. When one element alone is over the limit, or the text
  is not JSON, it is cut between paragraphs, else lines, else characters, and the sections are
  plain slices: concatenated they are the original text. Either way, reading every section back
  gives exactly the original text.
- **What is counted.** Tokens by the project's estimator (`catalogue.tokens.token_counter`: cl100k
  with the `tokens` extra, else characters / 4). A text of at most `max_tokens` characters and as
  many UTF-8 bytes never pays for counting (a cl100k token is at least one byte), so small results
  cost one length check.
- **What passes untouched.** Images, audio, embedded resources and resource links; and
  `structuredContent`, so a tool with an `outputSchema` still validates in the client (clients
  that hand the model the structured result see it whole; the text blocks are what is cut).
- **Where it is kept.** `SectionStore`: memory, a byte cap and an expiry; an evicted result's
  owner is told it was evicted, and anyone else (another session or credential, an unknown id)
  gets the same "no such result" answer. The cap is shared by credentials, not a first-come pool:
  room is made from the credential holding most (counting the new result as its owner's), its
  oldest result first, so one credential's results evict another's only while that other holds
  more; alone, a credential may use the whole cap.
"""

from __future__ import annotations

import bisect
import json
import re
import secrets
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from mcpctl.resources.settings import DEFAULT_KEEP_MEGABYTES, DEFAULT_KEEP_MINUTES

scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

MAX_REMEMBERED_EVICTIONS: Final = 4096
JSON: Final = "json"
TEXT: Final = "text"

Count = Callable[[str], int]
Owner = tuple[str, str | None]          # (session id, credential digest or profile)

_WS: Final = re.compile(r"[ \t\n\r]*")
_WS_CHARS: Final = frozenset(" \t\n\r")
_DECODER: Final = json.JSONDecoder()
_CLOSE: Final = {"[": "]", "{": "}"}


# -- cutting --------------------------------------------------------------------------------------


def cheap_fits(text: str, max_tokens: int) -> bool:
    """True when `text` surely has at most `max_tokens` tokens under either estimator, without
    counting: at most that many characters and UTF-8 bytes (chars/4 and cl100k both count
    fewer tokens than bytes)."""
    n = len(text)
    return n <= max_tokens and (n * 4 <= max_tokens or text.isascii() or len(text.encode("utf-8")) <= max_tokens)


@dataclass(frozen=True, slots=True)
class Cut:
    """How a text was cut: `kind` (JSON or TEXT) and the section bounds [(start, end)] in it."""

    kind: str
    bounds: tuple[tuple[int, int], ...]


def section_text(text: str, cut: Cut, index: int) -> str:
    """Section `index` (0-based) as the client reads it."""
    start, end = cut.bounds[index]
    if cut.kind == TEXT or len(cut.bounds) == 1:
        return text[start:end]
    # JSON: bounds are slices between the separating commas; add the brackets the slice lacks
    opener = text[_WS.match(text).end()]  # type: ignore[union-attr]
    first, last = index == 0, index == len(cut.bounds) - 1
    return ("" if first else opener) + text[start:end] + ("" if last else _CLOSE[opener])


def cut_text(text: str, max_tokens: int, count: Count) -> Cut:
    """Cut `text` into sections of at most `max_tokens` tokens each (see the module docstring)."""
    bounds = _json_bounds(text, max_tokens, count) if text[:1] in "[{ \t\n\r" else None
    if bounds is not None:
        return Cut(JSON, bounds)
    return Cut(TEXT, _text_bounds(text, max_tokens, count))


def _text_bounds(text: str, max_tokens: int, count: Count) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    start, size, guess = 0, len(text), max(1, max_tokens * 4)
    while start < size:
        window = guess
        while True:
            end = _boundary(text, start, min(size, start + window))
            tokens = count(text[start:end])
            if tokens <= max_tokens or end - start <= 1:
                break
            window = max(1, min(end - start - 1, int((end - start) * max_tokens / tokens * 0.95)))
        out.append((start, end))
        start = end
    return tuple(out)


def _boundary(text: str, start: int, end: int) -> int:
    """Where to end a section that may run from `start` to `end`: after a paragraph break in the
    window's second half, else after its last line break, else at `end` (never inside a CRLF)."""
    if end >= len(text):
        return len(text)
    half = start + (end - start) // 2
    para = text.rfind("\n\n", half, end)
    if para != -1:
        return para + 2
    line = text.rfind("\n", start, end)
    if line != -1:
        return line + 1
    if text[end - 1] == "\r" and text[end] == "\n" and end - 1 > start:
        return end - 1
    return end


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end() if text[pos:pos + 1] in _WS_CHARS else pos  # type: ignore[union-attr]


def _members(text: str) -> tuple[str, list[int]] | None:
    """(the opening bracket, [positions of the top-level separating commas]) when the whole text
    is one JSON array or object with more than one member, else None. Each member is parsed by
    the json module's scanner (C), once."""
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] not in _CLOSE:
        return None
    opener, close = text[i], _CLOSE[text[i]]
    scan = _DECODER.scan_once  # type: ignore[attr-defined]
    commas: list[int] = []
    pos = _skip_ws(text, i + 1)
    try:
        while True:
            if opener == "{":
                if text[pos] != '"':
                    return None
                _key, pos = scanstring(text, pos + 1)
                pos = _skip_ws(text, pos)
                if text[pos] != ":":
                    return None
                pos = _skip_ws(text, pos + 1)
            _value, pos = scan(text, pos)
            pos = _skip_ws(text, pos)
            if text[pos] == close:
                break
            if text[pos] != ",":
                return None
            commas.append(pos)
            pos = _skip_ws(text, pos + 1)
    except (ValueError, IndexError, StopIteration):
        return None
    if not commas or _skip_ws(text, pos + 1) != len(text):
        return None
    return opener, commas


def _json_bounds(text: str, max_tokens: int, count: Count) -> tuple[tuple[int, int], ...] | None:
    """Sections between top-level members, each valid JSON once its brackets are added; None
    when the text is not one array or object or a member alone is over the limit. The quick way
    first (`_guessed_bounds`), else member by member (`_member_bounds`)."""
    return _guessed_bounds(text, max_tokens, count) or _member_bounds(text, max_tokens, count)


MAX_GUESSES: Final = 8     # candidate cuts tried per section before going member by member


def _separator(text: str, i: int) -> str | None:
    """The text between the first two members of the container opening at `i`: its comma, the
    whitespace after it and the next member's first character (`", {"`, `",\n  \""`)."""
    scan = _DECODER.scan_once  # type: ignore[attr-defined]
    try:
        pos = _skip_ws(text, i + 1)
        if text[i] == "{":
            _key, pos = scanstring(text, pos + 1)
            pos = _skip_ws(text, _skip_ws(text, pos) + 1)
        _value, pos = scan(text, pos)
        comma = _skip_ws(text, pos)
    except (ValueError, IndexError, StopIteration):
        return None
    if text[comma:comma + 1] != ",":
        return None
    return text[comma:_skip_ws(text, comma + 1) + 1]


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _guessed_bounds(text: str, max_tokens: int, count: Count) -> tuple[tuple[int, int], ...] | None:
    """Cut at the separator the first two members have (a guess: it may occur inside a member)
    and keep a cut only when the section parses: a section that parses ends at a top-level comma
    (one ending inside a member or a string would leave it open), so every section is valid and
    their members are the whole's. The json module parses the text about once, in C."""
    i = _skip_ws(text, 0)
    opener = text[i:i + 1]
    if opener not in _CLOSE or text.rstrip(" \t\n\r")[-1:] != _CLOSE[opener]:
        return None
    sep = _separator(text, i)
    if sep is None:
        return None
    out: list[tuple[int, int]] = []
    start, budget, size = 0, max(1, 4 * max_tokens - 2), len(text)
    while True:
        head = "" if start == 0 else opener
        if size - start <= budget:
            last = head + text[start:]
            if count(last) <= max_tokens:
                if not _parses(last):
                    return None
                out.append((start, size))
                return tuple(out)
        cut = _guess_cut(text, sep, start, budget, head, _CLOSE[opener], max_tokens, count)
        if cut is None:
            return None
        out.append((start, cut))
        start = cut + 1


def _guess_cut(text: str, sep: str, start: int, budget: int, head: str, close: str, max_tokens: int,
               count: Count) -> int | None:
    """The last top-level comma after `start` whose section is within the limit, or None."""
    c = text.rfind(sep, start + 1, start + budget + len(sep))
    for _ in range(MAX_GUESSES):
        if c <= start:
            return None
        section = head + text[start:c] + close
        tokens = count(section)
        if tokens > max_tokens:
            limit = start + int((c - start) * max_tokens / tokens * 0.95)
            c = text.rfind(sep, start + 1, limit + len(sep))
            continue
        if _parses(section):
            return c
        c = text.rfind(sep, start + 1, c)
    return None


def _member_bounds(text: str, max_tokens: int, count: Count) -> tuple[tuple[int, int], ...] | None:
    """Sections between top-level members, each a valid JSON array or object once its brackets
    are added (`section_text`); None when the text is not one or a member alone is too big.

    Members are packed by characters (the estimate's 4 a token, then the ratio each section
    actually counted), and each section is counted once: one pass of the counter in all."""
    found = _members(text)
    if found is None:
        return None
    opener, commas = found
    # piece k runs from after the previous comma (or the start) to before the next comma (or the end)
    starts, ends = [0, *(c + 1 for c in commas)], [*commas, len(text)]
    last_piece, budget = len(starts) - 1, max(1, 4 * max_tokens - 2)
    out: list[tuple[int, int]] = []
    first = 0
    while first <= last_piece:
        last = max(first, bisect.bisect_right(ends, starts[first] + budget, first) - 1)
        while True:
            section = ("" if first == 0 else opener) + text[starts[first]:ends[last]] + \
                ("" if last == last_piece else _CLOSE[opener])
            tokens = count(section)
            if tokens <= max_tokens:
                break
            if last == first:
                return None                 # one member alone is over the limit
            budget = max(1, int((ends[last] - starts[first]) * max_tokens / tokens * 0.95))
            last = max(first, min(last - 1, bisect.bisect_right(ends, starts[first] + budget, first) - 1))
        out.append((starts[first], ends[last]))
        first = last + 1
    return tuple(out)


# -- the store ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Stored:
    owner: Owner
    text: str
    cut: Cut
    size: int                       # bytes it holds in memory
    expires: float


class SectionError(LookupError):
    """A `read_result` that cannot be answered; the message is shown to the model."""


@dataclass
class SectionStore:
    """Cut results in memory: at most `max_bytes`, each for `ttl` seconds; room is made from the
    credential holding most, its oldest result first (see the module docstring)."""

    max_bytes: int = DEFAULT_KEEP_MEGABYTES * 1024 * 1024
    ttl: float = DEFAULT_KEEP_MINUTES * 60.0
    clock: Callable[[], float] = time.monotonic
    _items: OrderedDict[str, Stored] = field(default_factory=OrderedDict)
    _evicted: OrderedDict[str, tuple[Owner, str]] = field(default_factory=OrderedDict)
    _bytes: int = 0
    _held: dict[str | None, int] = field(default_factory=dict)          # credential -> bytes kept
    _owned: dict[str | None, OrderedDict[str, None]] = field(default_factory=dict)   # ... its ids, oldest first

    @property
    def used(self) -> int:
        return self._bytes

    def held(self, credential: str | None) -> int:
        """Bytes kept for one credential."""
        return self._held.get(credential, 0)

    def put(self, owner: Owner, text: str, cut: Cut) -> str | None:
        """Keep `text` for `owner`; its result id, or None when it alone is over the byte cap."""
        size = sys.getsizeof(text)
        if size > self.max_bytes:
            return None
        self._expire()
        credential = owner[1]
        while self._items and self._bytes + size > self.max_bytes:
            victim = max(self._owned, key=lambda c: self._held[c] + (size if c == credential else 0))
            why = "evicted to make room for newer results" if victim == credential else \
                "evicted to make room for the results of a credential holding less"
            self._drop(next(iter(self._owned[victim])), why)
        rid = "r" + secrets.token_hex(8)
        self._items[rid] = Stored(owner, text, cut, size, self.clock() + self.ttl)
        self._bytes += size
        self._held[credential] = self._held.get(credential, 0) + size
        self._owned.setdefault(credential, OrderedDict())[rid] = None
        return rid

    def read(self, owner: Owner, result_id: str, section: int) -> tuple[str, int]:
        """(text of 1-based `section`, number of sections) of `owner`'s result `result_id`."""
        self._expire()
        item = self._items.get(result_id)
        if item is None or item.owner != owner:
            gone = self._evicted.get(result_id)
            if gone is not None and gone[0] == owner:
                raise SectionError(f"result {result_id!r} is no longer kept: it was {gone[1]} (results are kept "
                                   f"for {self.ttl / 60:g} minutes and {self.max_bytes / 2**20:g} MB in all); "
                                   "call the tool again, asking for less if it can")
            raise SectionError(f"no result {result_id!r} in this session: use the result_id the cut result's "
                               "note gave, from this session")
        n = len(item.cut.bounds)
        if not 1 <= section <= n:
            raise SectionError(f"result {result_id!r} has sections 1 to {n}; section {section} does not exist")
        return section_text(item.text, item.cut, section - 1), n

    def _expire(self) -> None:
        now = self.clock()
        while self._items:
            rid, item = next(iter(self._items.items()))
            if item.expires > now:
                break
            self._drop(rid, "expired")

    def _drop(self, rid: str, why: str) -> None:
        item = self._items.pop(rid)
        self._bytes -= item.size
        credential = item.owner[1]
        self._held[credential] -= item.size
        owned = self._owned[credential]
        del owned[rid]
        if not owned:
            del self._owned[credential]
            del self._held[credential]
        self._evicted[rid] = (item.owner, why)
        while len(self._evicted) > MAX_REMEMBERED_EVICTIONS:
            self._evicted.popitem(last=False)


# -- the stage ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the stage did to a result: its size in characters and how many sections it was
    cut into (0: not cut)."""

    chars: int
    sections: int


def result_chars(result: dict[str, Any]) -> int:
    """The size of a result's content, in characters of its text and binary data."""
    content = result.get("content")
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, dict):
            value = block.get("text") if block.get("type") == "text" else block.get("data")
            if isinstance(value, str):
                total += len(value)
    return total


class Sections:
    """The content stage of one gateway: cuts results over `max_tokens` (0: never) and keeps
    the rest in `store`. `counter()` gives the token count function (loaded on first need)."""

    def __init__(self, max_tokens: int, store: SectionStore, counter: Callable[[], Count]) -> None:
        self.max_tokens = max_tokens
        self.store = store
        self._counter = counter

    def apply(self, owner: Owner, result: dict[str, Any]) -> Outcome:
        """Cut `result`'s text blocks over the limit, in place."""
        content = result.get("content")
        if not self.max_tokens or not isinstance(content, list):
            return Outcome(result_chars(result), 0)
        chars, notes, sections = 0, [], 0
        for block in content:
            if not isinstance(block, dict):
                continue
            text = block.get("text") if block.get("type") == "text" else block.get("data")
            if not isinstance(text, str):
                continue
            chars += len(text)
            if block.get("type") != "text" or cheap_fits(text, self.max_tokens):
                continue
            count = self._counter()
            if len(text) <= 8 * self.max_tokens and count(text) <= self.max_tokens:
                continue
            cut = cut_text(text, self.max_tokens, count)
            if len(cut.bounds) == 1:
                continue
            block["text"] = section_text(text, cut, 0)
            rid = self.store.put(owner, text, cut)
            notes.append(self._note(text, cut, rid, count))
            sections += len(cut.bounds)
        content.extend({"type": "text", "text": note} for note in notes)
        return Outcome(chars, sections)

    def _note(self, text: str, cut: Cut, rid: str | None, count: Count) -> str:
        n = len(cut.bounds)
        shown = cut.bounds[0][1] - cut.bounds[0][0]
        head = (f"[mcpctl] This text was {len(text):,} characters, over this project's limit of "
                f"{self.max_tokens:,} tokens per result (results.maxTokens): it was cut into {n} sections and "
                f"only section 1 ({shown:,} characters) is shown above; {len(text) - shown:,} characters were cut.")
        if rid is None:
            return head + (f" The rest is too large to keep ({self.store.max_bytes / 2**20:g} MB at most): call "
                           "the tool again, asking for less if it can.")
        how = (f" Read the others with read_result(result_id=\"{rid}\", section=2) up to section={n}.")
        if cut.kind == JSON:
            how += (" Each section is valid JSON, a part of the same "
                    f"{'array' if text.lstrip()[0] == '[' else 'object'}, in order.")
        else:
            how += " Concatenated in order, the sections are the original text."
        return head + how


__all__ = ["Cut", "Outcome", "SectionError", "SectionStore", "Sections", "cheap_fits", "cut_text",
           "section_text"]
