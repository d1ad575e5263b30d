"""A small declarative schema: strict validation with did-you-mean, and defaults.

Resources are plain dicts on disk and on the wire; this module checks them field by field
and fills in defaults so that two manifests meaning the same thing compare equal. Errors
carry the dotted path of the field so the loader can point at the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpctl.errors import did_you_mean

Check = Callable[[Any], str | None]   # returns an error message or None

SECRET_REF_RE = re.compile(r"\$\{(env|file):([^}]+)\}")
PROFILE_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def check_profile_name(value: str) -> str | None:
    return None if PROFILE_NAME_RE.match(value) else \
        f"{value!r} is not a valid profile name: use lowercase letters, digits and '-'"


def check_reference(value: str) -> str | None:
    if SECRET_REF_RE.fullmatch(value.strip()):
        return None
    return ("must be a reference, ${env:NAME} or ${file:PATH}, not a literal secret "
            "(the store is plain text)")


class FieldError(Exception):
    """A value at `path` (a tuple of keys and indexes) is wrong."""

    def __init__(self, path: tuple[str | int, ...], message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.hint = hint


class FieldErrors(FieldError):
    """Several wrong values: every one a walk of the document found (the first is its own path,
    message and hint, so a caller that reads one error reads the first)."""

    def __init__(self, errors: list[FieldError]) -> None:
        first = errors[0]
        super().__init__(first.path, first.message, first.hint)
        self.errors = errors


def every(e: FieldError) -> list[FieldError]:
    """The errors `e` stands for (itself, or each of several)."""
    return list(e.errors) if isinstance(e, FieldErrors) else [e]


def _raise_all(errors: list[FieldError]) -> None:
    if errors:
        raise errors[0] if len(errors) == 1 else FieldErrors(errors)


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


@dataclass(frozen=True)
class Scalar:
    type: type | tuple[type, ...]
    default: Any = None
    required: bool = False
    enum: tuple[Any, ...] | None = None
    check: Check | None = None
    nullable: bool = False
    type_name: str = ""


@dataclass(frozen=True)
class ListOf:
    item: Scalar
    default_empty: bool = True
    required: bool = False


@dataclass(frozen=True)
class MapOf:
    """A map with free-form string keys (env, headers, labels) or named objects (profiles)."""

    value: Scalar | Obj
    key_check: Check | None = None
    default_empty: bool = True
    required: bool = False


@dataclass(frozen=True)
class Obj:
    fields: Mapping[str, Any] = field(default_factory=dict)
    required: bool = False
    omit_if_default: bool = False


Node = Scalar | ListOf | MapOf | Obj


def _type_name(s: Scalar) -> str:
    if s.type_name:
        return s.type_name
    types = s.type if isinstance(s.type, tuple) else (s.type,)
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _scalar(node: Scalar, value: Any, path: tuple[str | int, ...]) -> Any:
    if value is None:
        if node.nullable:
            return None
        raise FieldError(path, f"{dotted(path)} must be a {_type_name(node)}, not null")
    ok = isinstance(value, node.type) and not (isinstance(value, bool) and bool not in _types(node))
    if float in _types(node) and isinstance(value, int) and not isinstance(value, bool):
        ok = True
        value = float(value)
    if not ok:
        got = type(value).__name__
        if isinstance(value, str) and bool in _types(node):
            raise FieldError(path, f"{dotted(path)} must be a boolean, got the string {value!r}",
                             hint="write true or false (YAML 1.2 reads yes/no/on/off as strings)")
        raise FieldError(path, f"{dotted(path)} must be a {_type_name(node)}, got {got} {value!r}")
    if node.enum is not None and value not in node.enum:
        hint = did_you_mean(str(value), [str(e) for e in node.enum])
        raise FieldError(path, f"{dotted(path)}: {value!r} is not one of: {', '.join(map(str, node.enum))}", hint)
    if node.check is not None:
        msg = node.check(value)
        if msg:
            raise FieldError(path, f"{dotted(path)}: {msg}")
    return value


def _types(node: Scalar) -> tuple[type, ...]:
    return node.type if isinstance(node.type, tuple) else (node.type,)


def _default(node: Node) -> Any:
    if isinstance(node, Scalar):
        return node.default
    if isinstance(node, ListOf):
        return [] if node.default_empty else None
    if isinstance(node, MapOf):
        return {} if node.default_empty else None
    if node.omit_if_default:          # an optional section (a server's auth): absent stays absent
        return None
    return normalize(node, {}, ())


def default_at(node: Obj, *path: str) -> Any:
    """The default a document gets at `path` under `node` when it leaves the field out (the one
    statement of a default: typed views take theirs from here)."""
    child: Node = node
    for name in path:
        assert isinstance(child, Obj), path
        child = child.fields[name]
    return _default(child)


def normalize(node: Node, value: Any, path: tuple[str | int, ...]) -> Any:
    """Validate `value` against `node` and return it with defaults filled in."""
    if isinstance(node, Scalar):
        return _scalar(node, value, path)
    if isinstance(node, ListOf):
        return _list(node, value, path)
    if isinstance(node, MapOf):
        return _map(node, value, path)
    return _obj(node, value, path)


def _list(node: ListOf, value: Any, path: tuple[str | int, ...]) -> Any:
    if value is None:
        return _default(node)
    if not isinstance(value, list):
        raise FieldError(path, f"{dotted(path)} must be a list, got {type(value).__name__}")
    out, errors = [], []
    for i, v in enumerate(value):
        try:
            out.append(_scalar(node.item, v, (*path, i)))
        except FieldError as e:
            errors += every(e)
    _raise_all(errors)
    return out


def _map(node: MapOf, value: Any, path: tuple[str | int, ...]) -> Any:
    if value is None:
        return _default(node)
    if not isinstance(value, Mapping):
        raise FieldError(path, f"{dotted(path)} must be a map, got {type(value).__name__}")
    entries: dict[str, Any] = {}
    errors: list[FieldError] = []
    for k, v in value.items():
        try:
            entries[k] = _entry(node, k, v, path)
        except FieldError as e:
            errors += every(e)
    _raise_all(errors)
    return entries


def _entry(node: MapOf, k: Any, v: Any, path: tuple[str | int, ...]) -> Any:
    if not isinstance(k, str):
        raise FieldError((*path, str(k)), f"{dotted(path)}: key {k!r} must be a string")
    if node.key_check is not None:
        msg = node.key_check(k)
        if msg:
            raise FieldError((*path, k), f"{dotted((*path, k))}: {msg}")
    return normalize(node.value, v, (*path, k))


def _obj(node: Obj, value: Any, path: tuple[str | int, ...]) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise FieldError(path, f"{dotted(path) or 'document'} must be a map, got {type(value).__name__}")
    where = dotted(path) or "the document"
    errors = [FieldError((*path, str(k)), f"unknown field {dotted((*path, str(k)))!r} in {where}",
                         did_you_mean(str(k), node.fields) or f"known fields: {', '.join(node.fields)}")
              for k in value if k not in node.fields]
    out: dict[str, Any] = {}
    for name, child in node.fields.items():
        try:
            if name in value:
                out[name] = normalize(child, value[name], (*path, name))
            elif getattr(child, "required", False):
                raise FieldError((*path, name), f"{dotted((*path, name))} is required")
            elif (d := _default(child)) is not None:
                out[name] = d
        except FieldError as e:
            errors += every(e)
    _raise_all(errors)        # every wrong field, not only the first (callers order them: validate)
    return out


# -- checks shared by the kinds ---------------------------------------------------------------

NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def check_name(value: str) -> str | None:
    if NAME_RE.match(value):
        return None
    return (f"{value!r} is not a valid name: use lowercase letters, digits and '-', "
            "start and end with a letter or digit, at most 63 characters")


def check_positive(value: float) -> str | None:
    return None if value > 0 else f"must be greater than 0, got {value}"


def check_min(minimum: int) -> Check:
    def check(value: int) -> str | None:
        return None if value >= minimum else f"must be at least {minimum}, got {value}"
    return check


def check_range(lo: int, hi: int) -> Check:
    def check(value: int) -> str | None:
        return None if lo <= value <= hi else f"must be between {lo} and {hi}, got {value}"
    return check


def check_tool_id(value: str) -> str | None:
    """A canonical tool id `server/tool`; globs (*, ?, [..]) allowed."""
    if "/" not in value:
        return (f"{value!r} is not a tool id: write it as server/tool "
                f"(for example github/create_issue, or github/delete_* for a glob)")
    server, tool = value.split("/", 1)
    if not server or not tool:
        return f"{value!r} is not a tool id: both the server and the tool part are needed (server/tool)"
    # An upstream may name a tool with inner spaces ("get pods"); whitespace around either part
    # is a typo, and a server name never holds any.
    if any(c.isspace() for c in server) or tool != tool.strip():
        return f"{value!r} is not a tool id: it has whitespace around the server or the tool name"
    return None
