"""`tools.overrides`: a project's own wording of a tool (its schema, typed view and checks).

Keyed by canonical id (`server/tool`, the id that stays in config, logs and pins), an override
gives a tool a presented `name` (the tool's part of its presented names), a `title`, a
`description`, `annotations`, and per parameter a new `description`, a `default`, or `hide` with a
fixed `value` the gateway fills in on every call. What it does to a definition and to a call is
the presentation pipeline's overrides stage (`presentation.overrides`); here are the resource's
shape and the checks of an override against the tool's real definition (`check_against`), which
`apply` runs when the server's last listing is known. Pure: no store, no cache.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcpctl.errors import did_you_mean
from mcpctl.resources.schema import MapOf, Obj, Scalar

# A presented tool name must survive every client: Claude Code, Claude Desktop and Codex refuse any
# tool name outside [A-Za-z0-9_-]{1,64} (DESIGN §4), and `/` would read as a canonical id.
NAME_RE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ANNOTATION_HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
# Any JSON value: (object, bool) keeps booleans and never turns an integer into a float.
_JSON = Scalar((object, bool), nullable=True, type_name="JSON value")


def check_presented_name(value: str) -> str | None:
    if NAME_RE.match(value):
        return None
    return (f"{value!r} is not a client-safe tool name: use letters, digits, '_' and '-' (at most 64), as "
            "Claude Code, Claude Desktop and Codex accept no other")


def _check_text(value: str) -> str | None:
    return None if value.strip() else "must not be empty (remove the field to keep the upstream's own)"


def _check_param(value: str) -> str | None:
    return None if value.strip() else "a parameter name must not be empty"


PARAMETER: Final = Obj({
    "description": Scalar(str, nullable=True, check=_check_text),
    "hide": Scalar(bool, nullable=True),
    "value": _JSON,
    "default": _JSON,
})

OVERRIDE: Final = Obj({
    "name": Scalar(str, nullable=True, check=check_presented_name),
    "title": Scalar(str, nullable=True, check=_check_text),
    "description": Scalar(str, nullable=True, check=_check_text),
    "annotations": Obj({"title": Scalar(str, nullable=True),
                        **{h: Scalar(bool, nullable=True) for h in ANNOTATION_HINTS}}, omit_if_default=True),
    "parameters": MapOf(PARAMETER, key_check=_check_param, default_empty=False),
})


def overrides_node(key_check: Any) -> MapOf:
    """`tools.overrides`: canonical id (checked by `key_check`) -> override."""
    return MapOf(OVERRIDE, key_check=key_check, default_empty=False)


# -- typed views ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterOverride:
    name: str
    description: str | None = None
    hide: bool = False
    value: Any = None               # hidden: what every call sends (`has_value`: given, even null)
    has_value: bool = False
    default: Any = None             # filled in when a call leaves the parameter out
    has_default: bool = False


@dataclass(frozen=True)
class ToolOverride:
    tool: str                                       # the canonical id
    name: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: tuple[tuple[str, Any], ...] = ()
    parameters: tuple[ParameterOverride, ...] = ()

    @classmethod
    def from_spec(cls, tool: str, s: Mapping[str, Any]) -> ToolOverride:
        params = tuple(ParameterOverride(p, v.get("description"), bool(v.get("hide")), v.get("value"),
                                         "value" in v, v.get("default"), "default" in v)
                       for p, v in (s.get("parameters") or {}).items())
        return cls(tool, s.get("name"), s.get("title"), s.get("description"),
                   tuple((s.get("annotations") or {}).items()), params)

    @functools.cached_property
    def hidden(self) -> dict[str, Any]:
        """Hidden parameter -> the value every call sends (read on every call: computed once)."""
        return {p.name: p.value for p in self.parameters if p.hide}

    @functools.cached_property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.parameters if p.has_default and not p.hide}


def overrides_from(spec: Mapping[str, Any] | None) -> tuple[ToolOverride, ...]:
    return tuple(ToolOverride.from_spec(cid, o or {}) for cid, o in (spec or {}).items())


# -- checks -----------------------------------------------------------------------------------------

Problem = tuple[tuple[str, ...], str, str | None]     # (path under the override, message, hint)


def check_shape(cid: str, o: Mapping[str, Any]) -> list[Problem]:
    """What an override must say whatever the tool is: a hidden parameter has a value, only a
    hidden one does, and a hidden one has no default or description (nobody sees them)."""
    out: list[Problem] = []
    for p, v in (o.get("parameters") or {}).items():
        where = ("parameters", p)
        if v.get("hide") and "value" not in v:
            out.append(((*where, "hide"), f"parameter {p!r} of {cid} is hidden but has no value to send",
                        f"add value: … (mcpctl tools override --hide {p}=VALUE)"))
        if "value" in v and not v.get("hide"):
            out.append(((*where, "value"), f"parameter {p!r} of {cid} has a fixed value but is not hidden",
                        "add hide: true to send it on every call, or write default: … to let the agent set it"))
        if v.get("hide") and ("default" in v or "description" in v):
            extra = "default" if "default" in v else "description"
            out.append(((*where, extra), f"parameter {p!r} of {cid} is hidden, so its {extra} is never seen",
                        f"remove {extra}, or remove hide and value"))
        if not v:
            out.append((where, f"parameter {p!r} of {cid} overrides nothing",
                        "give it a description, a default, or hide: true with a value; or remove it"))
    return out


def check_against(cid: str, o: Mapping[str, Any], wire: Mapping[str, Any],
                  siblings: Mapping[str, str]) -> list[Problem]:
    """An override against the tool's real definition (`wire`, as its server listed it):
    every parameter it names exists, values and defaults have the parameter's JSON type, a hidden
    parameter's value is one of its `enum`; a new name is not another tool's of the same server
    (`siblings`: presented tool name -> canonical id, after the project's other overrides)."""
    out: list[Problem] = []
    schema = wire.get("inputSchema")
    found = schema.get("properties") if isinstance(schema, Mapping) else None
    props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    for p, v in (o.get("parameters") or {}).items():
        if p not in props:
            known = ", ".join(props) or "none"
            out.append((("parameters", p), f"{cid} has no parameter {p!r}",
                        did_you_mean(p, props) or f"its parameters: {known}"))
            continue
        for key in ("value", "default"):
            if key in v and (why := _mismatch(v[key], props[p])) is not None:
                out.append((("parameters", p, key), f"{key} of parameter {p!r} of {cid} {why}", None))
    name = o.get("name")
    other = siblings.get(name) if isinstance(name, str) else None
    if other is not None and other != cid:
        out.append((("name",), f"{cid} cannot be presented as {name!r}: {other} is presented by that name",
                    "choose another name"))
    return out


_JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),)}


def _mismatch(value: Any, prop: Any) -> str | None:
    """Why `value` does not fit the property schema `prop` (its `type` and `enum`), or None."""
    if not isinstance(prop, Mapping):
        return None
    enum = prop.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        return f"is {value!r}, not one of {', '.join(map(repr, enum))}"
    types = prop.get("type")
    names = [types] if isinstance(types, str) else [t for t in types or [] if isinstance(t, str)]
    known = [n for n in names if n in _JSON_TYPES]
    if not known:
        return None
    for n in known:
        if isinstance(value, _JSON_TYPES[n]) and not (isinstance(value, bool) and n in ("integer", "number")):
            return None
    return f"is {value!r}, which is not of type {' or '.join(known)}"


# -- editing (`mcpctl tools override`) ----------------------------------------------------------------


@dataclass
class OverrideEdit:
    """What `tools override` changes in one override; None leaves a field as it is, "" removes it."""

    name: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: dict[str, bool] | None = None
    hide: dict[str, Any] | None = None              # parameter -> fixed value
    defaults: dict[str, Any] | None = None          # parameter -> default
    described: dict[str, str] | None = None         # parameter -> description
    show: tuple[str, ...] = ()                      # parameters to stop overriding at all
    clear: bool = False


def edit_override(spec: dict[str, Any], cid: str, e: OverrideEdit) -> None:
    """Change `spec` (a project's, in place) as `e` says for the tool `cid`."""
    tools = spec["tools"] = dict(spec.get("tools") or {})
    overrides = dict(tools.get("overrides") or {})
    o: dict[str, Any] = {} if e.clear else dict(overrides.get(cid) or {})
    for key, value in (("name", e.name), ("title", e.title), ("description", e.description)):
        if value == "":
            o.pop(key, None)
        elif value is not None:
            o[key] = value
    if e.annotations:
        o["annotations"] = {**(o.get("annotations") or {}), **e.annotations}
    params: dict[str, Any] = {k: dict(v or {}) for k, v in (o.get("parameters") or {}).items()}
    for p in e.show:
        params.pop(p, None)
    for p, value in (e.hide or {}).items():
        params[p] = {"hide": True, "value": value}
    for p, value in (e.defaults or {}).items():
        params[p] = {**{k: v for k, v in params.get(p, {}).items() if k not in ("hide", "value")}, "default": value}
    for p, text in (e.described or {}).items():
        params[p] = {**{k: v for k, v in params.get(p, {}).items() if k not in ("hide", "value")}, "description": text}
    if params:
        o["parameters"] = params
    else:
        o.pop("parameters", None)
    if o:
        overrides[cid] = o
    else:
        overrides.pop(cid, None)
    if overrides:
        tools["overrides"] = overrides
    else:
        tools.pop("overrides", None)


def parse_value(text: str, prop: Any) -> Any:
    """A value given on the command line for a parameter of schema `prop`: the text itself for a
    string parameter, else JSON when it parses as JSON (`10`, `true`, `["a"]`), else the text."""
    import json

    types = prop.get("type") if isinstance(prop, Mapping) else None
    if types == "string" or types == ["string"]:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
