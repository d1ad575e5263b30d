"""Every text of a tool's schemas the model reads, and where it is: each schema node of
`inputSchema` and `outputSchema` (its description, title, default, enum and examples values, const,
type, format, `$comment`; the names of its properties), walked through properties, items,
`additionalProperties`, `anyOf`/`oneOf`/`allOf`, `$defs` and the rest, to MAX_DEPTH levels,
MAX_PARAMETERS texts and MAX_PARAMETERS names per schema. A schema nested deeper than MAX_DEPTH is
itself reported (`too_deep`): what lies below is not read. No I/O here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

MAX_DEPTH: Final = 32               # nested schema levels read (real schemas: at most 5 of 1,246)
MAX_PARAMETERS: Final = 500         # texts (and names) read per schema (a schema is the upstream's to size)
MAX_NODES: Final = 20 * MAX_PARAMETERS

# Keys whose string (or list of strings) value the model reads; prose ones are read as sentences,
# the others as a name when they are one identifier (most enum values and defaults: `name_words`).
_TEXT_KEYS: Final = frozenset({"description", "title", "default", "enum", "examples", "const", "$comment", "type",
                               "format"})
_PROSE: Final = frozenset({"description", "title", "$comment"})
_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_IDENTIFIER: Final = re.compile(r"[\w.:/+@#-]{1,200}", re.ASCII)
# Keys under which a schema holds more schemas: one schema, a list of them, or a map of named ones,
# and how the path of what is under them is written.
_ONE: Final = {"items": "[]", "additionalProperties": ".*", "not": "", "if": "", "then": "", "else": "",
               "contains": "[]", "propertyNames": "", "unevaluatedProperties": ".*", "unevaluatedItems": "[]"}
_LIST: Final = {"anyOf": "", "oneOf": "", "allOf": "", "prefixItems": "[]"}
_MAP: Final = {"$defs": "$defs.", "definitions": "definitions.", "patternProperties": ".", "dependentSchemas": "."}


@dataclass
class Texts:
    """What the walk found, as (path, key, text): `texts` to read as sentences, `names` to read as the
    words of an identifier (property names, key "name"; one-identifier values); whether it went too deep."""
    prefix: str = "parameter"
    texts: list[tuple[str, str, str]] = field(default_factory=list)
    names: list[tuple[str, str, str]] = field(default_factory=list)
    too_deep: bool = False
    nodes: int = 0

    def label(self, path: str, key: str) -> str:
        """Where a text is, in words: "parameter 'opts.mode'", "parameter 'to' default", "parameter name 'x'"."""
        if key == "name":
            return f"{self.prefix} name {path!r}"
        where = f"{self.prefix} {path!r}" if path else (
            "input schema" if self.prefix == "parameter" else f"{self.prefix} schema")
        return where if key in ("description", "title") else f"{where} {key}"


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _join(path: str, suffix: str) -> str:
    if suffix.startswith((".", "[")):
        return f"{path}{suffix}" if path else suffix.lstrip(".")
    return f"{path}.{suffix}" if path and suffix else path or suffix


def _text(out: Texts, path: str, key: str, value: Any) -> None:
    for v in value if isinstance(value, list) else (value,):
        if not isinstance(v, str) or not v or (key == "type" and v in _TYPES):
            continue
        if key not in _PROSE and _IDENTIFIER.fullmatch(v):
            if len(out.names) < MAX_PARAMETERS:
                out.names.append((path, key, v))
        elif len(out.texts) < MAX_PARAMETERS:
            out.texts.append((path, key, v))


def _nested(out: Texts, key: str, value: Any, path: str, depth: int) -> None:
    if key in _ONE:
        if _is_map(value):
            walk(value, out.prefix, out, depth, _join(path, _ONE[key]))
    elif key in _LIST:
        if isinstance(value, list):
            for sub in value:
                walk(sub, out.prefix, out, depth, _join(path, _LIST[key]))
    elif key in _MAP and _is_map(value):
        for name, sub in value.items():
            walk(sub, out.prefix, out, depth, _join(path, _MAP[key] + str(name)))


def walk(schema: Any, prefix: str = "parameter", out: Texts | None = None, depth: int = 0, path: str = "") -> Texts:
    """The texts and property names of `schema`, each with where it is (`Texts.label`)."""
    out = out if out is not None else Texts(prefix)
    if not _is_map(schema) or out.nodes >= MAX_NODES:
        return out
    if depth > MAX_DEPTH:
        out.too_deep = True
        return out
    out.nodes += 1
    for key, value in schema.items():
        if key in _TEXT_KEYS:
            _text(out, path, key, value)
        elif key == "properties":
            if _is_map(value):
                for name, sub in value.items():
                    sub_path = _join(path, "." + str(name))
                    if len(out.names) < MAX_PARAMETERS:
                        out.names.append((sub_path, "name", str(name)))
                    walk(sub, prefix, out, depth + 1, sub_path)
        else:
            _nested(out, key, value, path, depth + 1)
    return out
