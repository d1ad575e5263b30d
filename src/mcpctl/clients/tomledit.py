"""Surgical edits of TOML files (Codex's `config.toml`): add or remove one `[table]` block.

`tomllib` reads TOML but cannot write it, and a writer that re-serialises the document would drop
the user's comments and layout. mcpctl only ever needs whole tables (`[mcp_servers.NAME]` and its
sub-tables such as `[mcp_servers.NAME.env]`), so this module finds table headers in the text (a
line scanner that knows strings, multi-line strings, comments and multi-line arrays, so a `[` in a
value is never taken for a header), removes a table's blocks (from its header through its last
key line: comments above it, on its header line and after it stay), and appends new blocks at the end of the file. Every edit is checked by parsing the
result with `tomllib` and comparing it with the intended document (`TomlEditError` otherwise).
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class TomlEditError(ValueError):
    """Malformed TOML, or an edit that cannot be made safely."""


@dataclass(frozen=True)
class Table:
    key: tuple[str, ...]
    array: bool          # [[array of tables]]
    start: int           # offset of the header line
    end: int             # offset of the next header line (or the end of the text)


def loads(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TomlEditError(str(e)) from None
    except RecursionError:
        raise TomlEditError("arrays or inline tables nested too deep to read") from None
    except ValueError as e:           # an integer past Python's int_max_str_digits (4300)
        raise TomlEditError(f"a value too long to read ({str(e).split(';')[0]})") from None


# -- scanning -----------------------------------------------------------------------------------


def _parse_key(s: str, i: int) -> tuple[tuple[str, ...], int] | None:
    """A dotted key starting at `s[i]`: (parts, offset after it), or None if malformed."""
    parts: list[str] = []
    while True:
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return None
        c = s[i]
        if c == '"':
            j = i + 1
            while j < len(s) and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                return None
            try:
                parts.append(json.loads(s[i:j + 1]))
            except ValueError:
                return None
            i = j + 1
        elif c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                return None
            parts.append(s[i + 1:j])
            i = j + 1
        else:
            m = _BARE_KEY.match(s, i)
            if not m:
                return None
            parts.append(m.group())
            i = m.end()
        while i < len(s) and s[i] in " \t":
            i += 1
        if i < len(s) and s[i] == ".":
            i += 1
            continue
        return tuple(parts), i


def _header(line: str) -> tuple[tuple[str, ...], bool] | None:
    s = line.lstrip(" \t")
    if not s.startswith("["):
        return None
    array = s.startswith("[[")
    parsed = _parse_key(s, 2 if array else 1)
    if parsed is None:
        return None
    key, i = parsed
    close = "]]" if array else "]"
    if not s.startswith(close, i):
        return None
    rest = s[i + len(close):].strip()
    if rest and not rest.startswith("#"):
        return None
    return key, array


def _scan_line(line: str, in_ml: str | None, depth: int) -> tuple[str | None, int]:
    """Track multi-line strings and bracket depth across one line of TOML."""
    i, n = 0, len(line)
    while i < n:
        if in_ml is not None:
            j = line.find(in_ml, i)
            while j > 0 and in_ml == '"""' and _escaped(line, j):
                j = line.find(in_ml, j + 1)
            if j < 0:
                return in_ml, depth
            i = j + 3
            while i < n and line[i] == in_ml[0]:   # """"" closes with quotes inside
                i += 1
            in_ml = None
            continue
        c = line[i]
        if c == "#":
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            in_ml = line[i:i + 3]
            i += 3
            continue
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
        elif c == "'":
            j = line.find("'", i + 1)
            i = n if j < 0 else j
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return in_ml, depth


def _escaped(line: str, j: int) -> bool:
    k, slashes = j - 1, 0
    while k >= 0 and line[k] == "\\":
        slashes += 1
        k -= 1
    return slashes % 2 == 1


def find_tables(text: str) -> list[Table]:
    """Every `[table]` / `[[array]]` header, with the span up to the next header."""
    found: list[tuple[tuple[str, ...], bool, int]] = []
    in_ml: str | None = None
    depth = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        if in_ml is None and depth == 0:
            h = _header(line)
            if h is not None:
                found.append((h[0], h[1], pos))
                pos += len(line)
                continue
        in_ml, depth = _scan_line(line.rstrip("\r\n"), in_ml, depth)
        pos += len(line)
    tables = []
    for i, (key, array, start) in enumerate(found):
        end = found[i + 1][2] if i + 1 < len(found) else len(text)
        tables.append(Table(key, array, start, end))
    return tables


def _is_comment(line: str) -> bool:
    return line.lstrip(" \t").startswith("#")


def _is_blank_or_comment(line: str) -> bool:
    return not line.strip() or _is_comment(line)


def _block(text: str, table: Table) -> tuple[int, int]:
    """The table's own text: its header line through its last line holding a key or value.
    Comment and blank lines after that (and above its header) are not the table's."""
    end = table.end
    while end > table.start:
        prev_start = text.rfind("\n", 0, end - 1) + 1
        if prev_start <= table.start or not _is_blank_or_comment(text[prev_start:end]):
            break
        end = prev_start
    if end == table.start:                      # header only (to the end of its line)
        nl = text.find("\n", table.start)
        end = len(text) if nl < 0 else nl + 1
    return table.start, end


def _header_comment(text: str, start: int) -> tuple[int, str]:
    """For the header line at `start`: the offset where its trailing `# comment` begins (the
    line's end when there is none) and that comment."""
    nl = text.find("\n", start)
    line_end = len(text) if nl < 0 else nl
    line = text[start:line_end].rstrip("\r")
    body = line.lstrip(" \t")
    array = body.startswith("[[")
    parsed = _parse_key(body, 2 if array else 1)
    if parsed is None:
        return line_end, ""
    close = parsed[1] + (2 if array else 1)
    rest = body[close:]
    hash_at = rest.find("#")
    if hash_at < 0:
        return line_end, ""
    offset = start + (len(line) - len(body)) + close
    return offset, rest[hash_at:].rstrip()


# -- writing values -------------------------------------------------------------------------------


def format_key(part: str) -> str:
    return part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)


def format_value(value: Any) -> str:
    """A TOML value for strings, numbers, booleans, lists and (inline) tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)    # TOML basic strings escape as JSON does
    if isinstance(value, Sequence):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{format_key(k)} = {format_value(v)}" for k, v in value.items()) + " }"
    raise TomlEditError(f"cannot write a {type(value).__name__} as TOML")


def dump_table(key: Sequence[str], values: Mapping[str, Any], newline: str = "\n") -> str:
    lines = ["[" + ".".join(format_key(k) for k in key) + "]"]
    lines += [f"{format_key(k)} = {format_value(v)}" for k, v in values.items()]
    return newline.join(lines) + newline


# -- edits ------------------------------------------------------------------------------------------


def _get(doc: Mapping[str, Any], key: Sequence[str]) -> Any:
    cur: Any = doc
    for k in key:
        if not isinstance(cur, Mapping) or k not in cur:
            return None
        cur = cur[k]
    return cur


def _verify(new_text: str, expected: Any) -> str:
    try:
        got = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as e:
        raise TomlEditError(f"the edit would leave invalid TOML ({e}); nothing was written") from None
    if got != expected:
        raise TomlEditError("the edit would change more than the one table; nothing was written")
    return new_text


def table_text(text: str, key: Sequence[str]) -> str | None:
    """The source text of table `key` and its sub-tables (without the comment on its first
    header line, which `remove_table` leaves in place), or None."""
    spans = _spans(text, tuple(key))
    if not spans:
        return None
    parts = []
    for s, e in spans:
        cut, comment = _header_comment(text, s)
        parts.append(text[s:cut].rstrip(" \t") + text[cut + len(comment):e] if comment else text[s:e])
    return "".join(parts)


def _spans(text: str, key: tuple[str, ...]) -> list[tuple[int, int]]:
    """The blocks of table `key` and its sub-tables; blocks separated only by blank and comment
    lines are one span (those comments are inside the entry)."""
    spans: list[tuple[int, int]] = []
    for t in find_tables(text):
        if t.key[:len(key)] != key:
            continue
        s, e = _block(text, t)
        if spans and all(_is_blank_or_comment(line) for line in text[spans[-1][1]:s].splitlines()):
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans


def remove_table(text: str, key: Sequence[str]) -> str:
    """Remove table `key` with its sub-tables; unchanged text if it is not defined.

    A table defined without a header of its own (inline `name = { ... }`, or dotted keys) cannot
    be cut out line by line: that raises `TomlEditError`.
    """
    key = tuple(key)
    doc = loads(text)
    if _get(doc, key) is None:
        return text
    spans = _spans(text, key)
    if not any(t.key == key for t in find_tables(text)):
        raise TomlEditError(f"{'.'.join(key)} is not written as a [{'.'.join(format_key(k) for k in key)}] "
                            "table of its own (inline or dotted keys)")
    new = text
    for s, e in sorted(spans, reverse=True):
        # comments are not the table's: the one on its header line stays, on a line of its own
        cut, comment = _header_comment(new, s)
        keep = new[s:cut][:len(new[s:cut]) - len(new[s:cut].lstrip(" \t"))] + comment if comment else ""
        if keep:
            keep += "\r\n" if new[s:e].endswith("\r\n") else "\n"
        elif e >= len(new) and new[:s].endswith("\n\n"):
            s -= 1                      # the blank line that separated it from the table before
        elif e >= len(new) and new[:s].endswith("\r\n\r\n"):
            s -= 2
        elif (s == 0 or new[:s].endswith(("\n\n", "\n\r\n"))) and new.startswith(("\n", "\r\n"), e):
            e += 1 if new.startswith("\n", e) else 2    # one blank line between neighbours, not two
        new = new[:s] + keep + new[e:]
    expected = copy.deepcopy(doc)
    parent = _get(expected, key[:-1]) if len(key) > 1 else expected
    parent.pop(key[-1], None)
    if len(key) > 1 and not parent and not any(t.key == key[:-1] for t in find_tables(new)) \
            and _get(loads(new), key[:-1]) is None:
        _drop_empty(expected, key[:-1])
    return _verify(new, expected)


def _drop_empty(doc: dict[str, Any], key: tuple[str, ...]) -> None:
    """An implicit parent table (`mcp_servers` of `[mcp_servers.x]`) disappears with its last child."""
    for n in range(len(key), 0, -1):
        parent = _get(doc, key[:n - 1]) if n > 1 else doc
        if isinstance(parent, dict) and parent.get(key[n - 1]) == {}:
            parent.pop(key[n - 1])
        else:
            return


def append_raw(text: str, raw: str, expected: Any) -> str:
    """Append `raw` (one or more whole tables) at the end, after a blank line."""
    nl = "\r\n" if "\r\n" in text else "\n"
    new = text
    if new and not new.endswith("\n"):
        new += nl
    if new.strip():
        new += nl            # one blank line before the new table (remove_table takes it back)
    if nl == "\r\n" and "\r\n" not in raw:
        raw = raw.replace("\n", nl)
    return _verify(new + raw, expected)


def append_table(text: str, key: Sequence[str], values: Mapping[str, Any]) -> str:
    """Add `[key]` with `values` at the end of the file; `key` must not be defined yet."""
    key = tuple(key)
    doc = loads(text)
    if _get(doc, key) is not None:
        raise TomlEditError(f"{'.'.join(key)} is already defined")
    expected = copy.deepcopy(doc)
    cur = expected
    for k in key[:-1]:
        cur = cur.setdefault(k, {})
    cur[key[-1]] = json.loads(json.dumps(values))
    nl = "\r\n" if "\r\n" in text else "\n"
    return append_raw(text, dump_table(key, values, nl), expected)


def insert_raw_table(text: str, key: Sequence[str], raw: str) -> str:
    """Re-add a table removed earlier (`table_text`), verbatim, at the end of the file."""
    key = tuple(key)
    doc = loads(text)
    if _get(doc, key) is not None:
        raise TomlEditError(f"{'.'.join(key)} is already defined")
    value = _get(loads(raw), key)
    expected = copy.deepcopy(doc)
    cur = expected
    for k in key[:-1]:
        cur = cur.setdefault(k, {})
    cur[key[-1]] = value
    nl = "\r\n" if "\r\n" in raw else "\n"
    return append_raw(text, raw.strip("\r\n") + nl, expected)
