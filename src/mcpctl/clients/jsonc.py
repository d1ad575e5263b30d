"""JSON with comments (JSONC), read with positions and edited surgically.

Client configuration files are the user's: VS Code's and Cursor's `mcp.json` may hold `//` and
`/* */` comments and trailing commas, Claude's files are plain JSON that the client itself rewrites.
Re-serialising a whole file would drop comments and reorder or reformat what mcpctl does not own,
so an edit here changes the bytes of one object member and nothing else: `parse` keeps the offsets
of every member, and `set_member` / `remove_member` / `insert_raw_member` splice text at those
offsets in the indentation and line endings the file already uses. Every edit re-parses its result
and checks that exactly the intended change happened (`JsoncError` otherwise, nothing returned).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_BLANKS = re.compile("[ \t\r\n\ufeff]+")
MAX_DEPTH = 200          # objects and arrays nested deeper than this are refused, not recursed into


class JsoncError(ValueError):
    """Malformed JSONC, or an edit that cannot be made safely."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message)
        self.line = line
        self.column = column


@dataclass
class Node:
    """A parsed value: its span `[start, end)` in the text and its plain Python value."""

    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list)   # objects only, in file order
    is_object: bool = False


@dataclass
class Member:
    key: str
    key_start: int
    node: Node
    comma: int | None       # offset of the ',' after the value (None for the last member)


def _position(text: str, i: int) -> tuple[int, int]:
    return text.count("\n", 0, i) + 1, i - text.rfind("\n", 0, i)


class _Parser:
    def __init__(self, text: str) -> None:
        self.t = text
        self.i = 0
        self.depth = 0

    def fail(self, message: str, at: int | None = None) -> JsoncError:
        line, col = _position(self.t, self.i if at is None else at)
        return JsoncError(message, line, col)

    def skip(self) -> None:
        t, n = self.t, len(self.t)
        while self.i < n:
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i = _BLANKS.match(t, self.i).end()   # type: ignore[union-attr]  # matches c
            elif t.startswith("//", self.i):
                j = t.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            elif t.startswith("/*", self.i):
                j = t.find("*/", self.i + 2)
                if j < 0:
                    raise self.fail("unterminated /* comment")
                self.i = j + 2
            else:
                return

    def peek(self) -> str:
        return self.t[self.i] if self.i < len(self.t) else ""

    def value(self) -> Node:
        self.skip()
        c = self.peek()
        if c in "{[" and c:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.fail(f"objects and arrays nested more than {MAX_DEPTH} deep")
            node = self.obj() if c == "{" else self.arr()
            self.depth -= 1
            return node
        if c == '"':
            start = self.i
            return Node(start, self.i_after_string(), self.string_value(start))
        m = _NUMBER.match(self.t, self.i)
        if m and m.end() > self.i:
            try:
                number = json.loads(m.group())
            except ValueError:      # an integer past Python's int_max_str_digits (4300)
                raise self.fail(f"a number of {len(m.group())} characters, too long to read") from None
            self.i = m.end()
            return Node(m.start(), m.end(), number)
        for word, val in _LITERALS.items():
            if self.t.startswith(word, self.i):
                start = self.i
                self.i += len(word)
                return Node(start, self.i, val)
        raise self.fail("expected a value" if c else "unexpected end of file")

    def i_after_string(self) -> int:
        m = _STRING.match(self.t, self.i)
        if m is None:
            raise self.fail("unterminated string")
        self.i = m.end()
        return self.i

    def string_value(self, start: int) -> str:
        try:
            value = json.loads(self.t[start:self.i])
        except ValueError:
            raise self.fail("invalid string", start) from None
        assert isinstance(value, str)
        return value

    def obj(self) -> Node:
        start = self.i
        self.i += 1
        members: list[Member] = []
        value: dict[str, Any] = {}
        while True:
            self.skip()
            if self.peek() == "}":
                self.i += 1
                break
            if self.peek() != '"':
                raise self.fail("expected a quoted key or '}'")
            key_start = self.i
            self.i_after_string()
            key = self.string_value(key_start)
            self.skip()
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.i += 1
            node = self.value()
            self.skip()
            comma: int | None = None
            if self.peek() == ",":
                comma = self.i
                self.i += 1
            elif self.peek() != "}":
                raise self.fail("expected ',' or '}'")
            members.append(Member(key, key_start, node, comma))
            value[key] = node.value
        return Node(start, self.i, value, members, is_object=True)

    def arr(self) -> Node:
        start = self.i
        self.i += 1
        items: list[Any] = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.i += 1
                break
            items.append(self.value().value)
            self.skip()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.fail("expected ',' or ']'")
        return Node(start, self.i, items)


def parse(text: str) -> Node:
    """Parse JSONC text; raises `JsoncError` with the line and column of the problem."""
    p = _Parser(text)
    node = p.value()
    p.skip()
    if p.i != len(text):
        raise p.fail("unexpected text after the end of the document")
    return node


def loads(text: str) -> Any:
    return parse(text).value


# -- locating -------------------------------------------------------------------------------------


def find_object(root: Node, path: Sequence[str]) -> Node | None:
    """The object at `path` (a key per level), or None if a level is missing or not an object."""
    node = root
    for key in path:
        if not node.is_object:
            return None
        member = _member(node, key)
        if member is None:
            return None
        node = member.node
    return node if node.is_object else None


def _member(obj: Node, key: str) -> Member | None:
    found = None
    for m in obj.members:     # the last duplicate wins, as in every JSON reader
        if m.key == key:
            found = m
    return found


def member_text(text: str, path: Sequence[str], key: str) -> tuple[str, str] | None:
    """(the value's source text, the indentation of its member line), or None if absent."""
    obj = find_object(parse(text), path)
    m = _member(obj, key) if obj is not None else None
    if m is None:
        return None
    return text[m.node.start:m.node.end], _line_indent(text, m.key_start)


# -- layout ---------------------------------------------------------------------------------------


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _line_indent(text: str, i: int) -> str:
    """The leading whitespace of the line holding offset `i`."""
    ls = _line_start(text, i)
    j = ls
    while j < len(text) and text[j] in " \t":
        j += 1
    return text[ls:j]


def _own_line(text: str, i: int) -> bool:
    """Whether only whitespace precedes offset `i` on its line."""
    return text[_line_start(text, i):i].strip(" \t") == ""


def _unit(text: str, root: Node) -> str:
    """The file's indentation step, from the first member on a line of its own."""
    queue = [root]
    while queue:
        node = queue.pop(0)
        for m in node.members:
            if _own_line(text, m.key_start):
                outer = _line_indent(text, node.start)
                inner = _line_indent(text, m.key_start)
                if inner.startswith(outer) and len(inner) > len(outer):
                    return inner[len(outer):]
            if m.node.is_object:
                queue.append(m.node)
    return "  "


def _end_of_line_after(text: str, i: int) -> int | None:
    """The offset of the newline ending the line at `i` when only blanks and comments follow `i`
    on that line; None when something else follows."""
    j = i
    while True:
        while j < len(text) and text[j] in " \t":
            j += 1
        if not text.startswith("/*", j):
            break
        k = text.find("*/", j + 2)
        if k < 0 or "\n" in text[j:k]:
            return None
        j = k + 2
    if text.startswith("//", j):
        k = text.find("\n", j)
        j = len(text) if k < 0 else k
    if j < len(text) and text[j] == "\r" and text.startswith("\r\n", j):
        return j
    if j == len(text) or text[j] == "\n":
        return j
    return None


def _comment_after(text: str, i: int) -> int | None:
    """The offset of a comment that follows offset `i` on its line after blanks, or None."""
    while i < len(text) and text[i] in " \t":
        i += 1
    return i if text.startswith(("//", "/*"), i) else None


def dump_value(value: Any, unit: str, indent: str, newline: str = "\n") -> str:
    """`value` as JSON laid out for a member line indented by `indent`."""
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", newline + indent)


# -- edits ------------------------------------------------------------------------------------------


def _verify(new_text: str, expected: Any) -> str:
    try:
        got = loads(new_text)
    except JsoncError as e:
        raise JsoncError(f"the edit would leave invalid JSON ({e}); nothing was written") from None
    if got != expected:
        raise JsoncError("the edit would change more than the one entry; nothing was written")
    return new_text


def _expected(old: Any, path: Sequence[str], key: str, value: Any, *, remove: bool = False) -> Any:
    doc = copy.deepcopy(old)
    cur = doc
    for seg in path:
        cur = cur.setdefault(seg, {})
        if not isinstance(cur, dict):
            raise JsoncError(f"{'.'.join(path)} is not an object")
    if remove:
        cur.pop(key, None)
    else:
        cur[key] = value
    return doc


def new_document(path: Sequence[str], key: str, value: Any) -> str:
    """A fresh file holding only `path` → `key` → `value` (2-space JSON, final newline)."""
    doc: dict[str, Any] = {key: value}
    for seg in reversed(path):
        doc = {seg: doc}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _insert(text: str, root: Node, obj: Node, key: str, value: Any | None, raw: tuple[str, str] | None) -> str:
    """Add member `key` at the end of `obj`: `value` serialised, or `raw` (text, its old indent)."""
    nl = _newline(text)
    unit = _unit(text, root)
    obj_indent = _line_indent(text, obj.start)
    inline = bool(obj.members) and not _own_line(text, obj.members[0].key_start)
    indent = _line_indent(text, obj.members[0].key_start) if obj.members and not inline else obj_indent + unit
    key_json = json.dumps(key, ensure_ascii=False)
    if raw is not None:
        body, old_indent = raw
        if inline:
            body = " ".join(line.strip() for line in body.splitlines())
        elif old_indent != indent:
            body = body.replace("\n" + old_indent, "\n" + indent)
        if nl == "\r\n" and "\r\n" not in body:
            body = body.replace("\n", nl)
    elif inline:
        body = json.dumps(value, ensure_ascii=False)
    else:
        body = dump_value(value, unit, indent, nl)
    kv = f"{key_json}: {body}"
    if obj.members and obj.members[-1].comma is not None:
        kv += ","          # the file ends members with a comma (JSONC): so does the new one
    if not obj.members:
        inner = text[obj.start + 1:obj.end - 1]
        if inner.strip() == "":
            return text[:obj.start + 1] + nl + indent + kv + nl + obj_indent + text[obj.end - 1:]
        close = obj.end - 1                  # only comments inside: the member goes on its own line
        ls = _line_start(text, close)
        if ls > obj.start and text[ls:close].strip(" \t") == "":
            return text[:ls] + indent + kv + nl + text[ls:]
        return text[:close] + nl + indent + kv + nl + obj_indent + text[close:]
    last = obj.members[-1]
    after = last.comma + 1 if last.comma is not None else last.node.end
    comma = "" if last.comma is not None else ","
    if inline:
        return text[:after] + comma + " " + kv + text[after:]
    eol = _end_of_line_after(text, after)
    if eol is None:
        return text[:after] + comma + nl + indent + kv + text[after:]
    return text[:last.node.end] + comma + text[last.node.end:eol] + nl + indent + kv + text[eol:]


def set_member(text: str, path: Sequence[str], key: str, value: Any) -> str:
    """Set `path` → `key` to `value`: replace the member's value in place, or add the member (and
    any missing objects on `path`) at the end of its object."""
    if not text.strip():
        return new_document(path, key, value)
    root = parse(text)
    if not root.is_object:
        raise JsoncError("the top level is not an object")
    expected = _expected(root.value, path, key, value)
    node = root
    for depth, seg in enumerate(path):
        m = _member(node, seg)
        if m is None:
            nested: Any = {key: value}
            for inner in reversed(path[depth + 1:]):
                nested = {inner: nested}
            return _verify(_insert(text, root, node, seg, nested, None), expected)
        if not m.node.is_object:
            raise JsoncError(f"{'.'.join(path[:depth + 1])} is not an object")
        node = m.node
    m = _member(node, key)
    if m is None:
        return _verify(_insert(text, root, node, key, value, None), expected)
    if m.node.value == value:
        return text
    nl = _newline(text)
    if _own_line(text, m.key_start):
        body = dump_value(value, _unit(text, root), _line_indent(text, m.key_start), nl)
    else:
        body = json.dumps(value, ensure_ascii=False)
    return _verify(text[:m.node.start] + body + text[m.node.end:], expected)


def insert_raw_member(text: str, path: Sequence[str], key: str, raw: tuple[str, str]) -> str:
    """Add member `key` whose value is the source text `raw[0]` (as `member_text` returned it, with
    its comments), re-indented from `raw[1]` to where it lands. The objects on `path` must exist
    or are created; an existing member `key` is an error."""
    value = loads(raw[0])
    if not text.strip():
        return new_document(path, key, value)
    root = parse(text)
    if not root.is_object:
        raise JsoncError("the top level is not an object")
    expected = _expected(root.value, path, key, value)
    obj = find_object(root, path)
    if obj is None:
        return set_member(text, path, key, value)
    if _member(obj, key) is not None:
        raise JsoncError(f"{'.'.join([*path, key])} already exists")
    return _verify(_insert(text, root, obj, key, None, raw), expected)


def remove_member(text: str, path: Sequence[str], key: str) -> str:
    """Remove member `key` of the object at `path`: its key, value and comma, and its line(s) when
    nothing else is on them. Comments outside the value stay (above it, before it, after it on its
    last line); the text is returned unchanged when there is no such member."""
    root = parse(text)
    obj = find_object(root, path)
    m = _member(obj, key) if obj is not None else None
    if obj is None or m is None:
        return text
    expected = _expected(root.value, path, key, None, remove=True)
    index = obj.members.index(m)
    own = _own_line(text, m.key_start)
    after = m.comma + 1 if m.comma is not None else m.node.end
    eol = _end_of_line_after(text, after)
    comment = _comment_after(text, after) if eol is not None else None
    start = _line_start(text, m.key_start) if own and comment is None else m.key_start
    if own and eol is not None:
        # the member's lines go; a comment after it on its last line stays, where it was
        end = comment if comment is not None else eol + (2 if text.startswith("\r\n", eol) else 1 if eol < len(text) else 0)
    else:
        end = after
        while end < len(text) and text[end] in " \t" and index < len(obj.members) - 1:
            end += 1
    cuts = [(start, end)]
    if m.comma is None and index > 0:
        prev = obj.members[index - 1]
        if prev.comma is not None:
            # the last member goes: so does the comma before it (and, inline, the blank after it)
            cuts = [(prev.comma, m.node.end)] if not own else [*cuts, (prev.comma, prev.comma + 1)]
    new = text
    for s, e in sorted(cuts, reverse=True):
        new = new[:s] + new[e:]
    if len(obj.members) == 1:
        left = new.find("{", obj.start)
        close = _matching_close(new, left)
        if close is not None and new[left + 1:close].strip() == "":
            new = new[:left + 1] + new[close:]
    return _verify(new, expected)


def _matching_close(text: str, open_at: int) -> int | None:
    try:
        p = _Parser(text)
        p.i = open_at
        node = p.obj()
    except JsoncError:
        return None
    return node.end - 1
