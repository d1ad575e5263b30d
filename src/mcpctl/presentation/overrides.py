"""The overrides stage: a project's own wording of a tool, forward and backwards (no `mcp`).

Forward, `reworded` gives a catalogue tool the definition its `tools.overrides` entry says (name,
title, description, annotations merged over the server's, parameters described, defaulted or
hidden); the catalogue applies it once per rebuild, so every stage after it (names, lists,
search, favourites, deferred, the gate, profiles' read-only split) sees the same tool. Backwards,
`upstream_arguments` turns a call's arguments into the server's: a hidden parameter is refused
from the agent and filled with its fixed value, a left-out defaulted one is filled in. The
canonical id, and the server's own definition (`CatalogueTool.own`: pins, poisoning flags), stay.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mcpctl.catalogue.tool import CatalogueTool
from mcpctl.presentation.filters import Refusal
from mcpctl.resources.overrides import ToolOverride


def reworded(tool: CatalogueTool, override: ToolOverride | None) -> CatalogueTool:
    """`tool` as `override` presents it (itself when there is none)."""
    if override is None:
        return tool
    return CatalogueTool(tool.canonical_id, tool.server, tool.name, definition(tool.wire, override), tool.wire,
                         override)


def definition(wire: Mapping[str, Any], o: ToolOverride) -> dict[str, Any]:
    """The presented definition of a tool the server listed as `wire`."""
    out = dict(wire)
    if o.name:
        out["name"] = o.name
    if o.title:
        out["title"] = o.title
    if o.description:
        out["description"] = o.description
    if o.annotations:
        own = wire.get("annotations")
        out["annotations"] = {**(own if isinstance(own, Mapping) else {}), **dict(o.annotations)}
    if o.parameters and isinstance(wire.get("inputSchema"), Mapping):
        out["inputSchema"] = _schema(wire["inputSchema"], o)
    return out


def _schema(schema: Mapping[str, Any], o: ToolOverride) -> dict[str, Any]:
    """A new schema sharing what it does not change with the server's (neither is ever mutated)."""
    out = dict(schema)
    if not isinstance(out.get("properties"), Mapping):
        return out
    props = out["properties"] = dict(out["properties"])
    required = out.get("required")
    drop: set[str] = set()
    for p in o.parameters:
        if p.name not in props:           # refused at apply; a server that dropped it since: nothing to do
            continue
        if p.hide:
            del props[p.name]
            drop.add(p.name)
            continue
        prop = props[p.name] = dict(props[p.name]) if isinstance(props[p.name], Mapping) else {}
        if p.description:
            prop["description"] = p.description
        if p.has_default:
            prop["default"] = p.default
            drop.add(p.name)              # the gateway fills it in: no longer required of the agent
    if isinstance(required, list) and drop & set(required):
        kept = [r for r in required if r not in drop]
        if kept:
            out["required"] = kept
        else:
            del out["required"]
    return out


def upstream_arguments(tool: CatalogueTool, args: dict[str, Any] | None) -> dict[str, Any] | Refusal | None:
    """The arguments to send the server for a call of `tool` with `args`, or the refusal of an
    agent that sets a hidden parameter."""
    o = tool.override
    if o is None or not o.parameters:
        return args
    hidden = o.hidden
    given = sorted(k for k in hidden if k in (args or {})) if hidden else []
    if given:
        names = ", ".join(repr(g) for g in given)
        return Refusal("denied", "HiddenParameter",
                       f"parameter {names} of {tool.label} is set by the project and cannot be given: call it "
                       "without " + ("it" if len(given) == 1 else "them"))
    defaults = {k: v for k, v in o.defaults.items() if k not in (args or {})}
    if not hidden and not defaults:
        return args
    fixed = {k: copy.deepcopy(v) if isinstance(v, dict | list) else v for k, v in hidden.items()}
    return {**defaults, **(args or {}), **fixed}
