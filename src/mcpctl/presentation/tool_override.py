"""One tool of a project as its server defines it, as the project rewords it (`tools.overrides`),
and as the agent sees it: what `mcpctl tools override` stores and `mcpctl tools show` prints.

`set_override` edits the project's override of a tool (checked as `apply` checks it: against the
tool's last listing); `shown` gathers the three definitions; `comparison_rows` lays them side by
side, one row per field, annotation and parameter. No rich, no typer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.resources.overrides import OverrideEdit
    from mcpctl.resources.store import ResourceStore


def input_properties(cid: str, cache: CatalogueCache) -> dict[str, Any]:
    """The properties of the tool's input schema as its server last listed it ({} when unknown)."""
    server, _, name = cid.partition("/")
    wire = next((w for w in cache.read_server_tools(server) or [] if w.get("name") == name), None)
    schema = (wire or {}).get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def set_override(store: ResourceStore, cache: CatalogueCache, project: str, cid: str,
                 edit: OverrideEdit) -> tuple[bool, list[str]]:
    """Store the edited override of tool `cid` in `project`; (changed, warnings)."""
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.edit import edit_spec
    from mcpctl.resources.kinds import check_override_id
    from mcpctl.resources.overrides import edit_override

    problem = check_override_id(cid)
    if problem:
        raise InvalidResource(f"ID: {problem}")
    try:
        done = edit_spec(store, "Project", project, lambda spec: edit_override(spec, cid, edit),
                         where="tools override", known_tools=cache.read_server_tools)
    except InvalidResource as e:
        raise InvalidResource(f"project {project!r}: {e.message}", hint=e.hint) from None
    return done.changed, done.warnings


def shown(store: ResourceStore, cache: CatalogueCache, project: str, cid: str) -> dict[str, Any]:
    """The tool `cid` of `project`: its server's definition, the override, and what the agent sees
    (the presented name and definition; None where the project does not present it)."""
    from mcpctl.errors import NotFound, did_you_mean
    from mcpctl.presentation.catalogue import cached_catalogue

    cached = cached_catalogue(project, store, cache)
    spec = store.get("Project", project).get("spec") or {}
    override = ((spec.get("tools") or {}).get("overrides") or {}).get(cid)
    tool = cached.catalogue.table.by_cid.get(cid)
    if tool is None:
        ids = list(cached.catalogue.table.by_cid)
        raise NotFound(f"project {project!r} has no tool {cid!r} in its servers' last listings",
                       hint=did_you_mean(cid, ids) or f"mcpctl tools list --project {project} --refresh")
    view = cached.view()
    name = view.present(cid)
    return {"canonicalId": cid, "presentedName": name, "upstream": dict(tool.own), "override": override,
            "presented": {**tool.wire, "name": name} if name is not None else None}


def _param_text(schema: Any, param: str) -> str:
    """A parameter of an input schema in one cell: type, required, default, description."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    prop = props.get(param) if isinstance(props, dict) else None
    if not isinstance(prop, dict):
        return "-"
    required = param in (schema.get("required") or [])
    bits = [str(prop.get("type", "any")) + (", required" if required else "")]
    if "default" in prop:
        bits.append("default " + ("null" if prop["default"] is None else _cell(prop["default"])))
    if prop.get("description"):
        bits.append(str(prop["description"]))
    return "; ".join(bits)


def _override_param(o: dict[str, Any] | None, param: str) -> str:
    """What the override does to a parameter, in one cell."""
    p = ((o or {}).get("parameters") or {}).get(param)
    if not p:
        return ""
    if p.get("hide"):
        return f"hidden, sent as {_cell(p.get('value'))}"
    return "; ".join(f"default {_cell(v)}" if k == "default" else str(v) for k, v in p.items())


def _cell(value: Any) -> str:
    """A value as the table shows it: text as it is, anything else as JSON (`true`, `5`, `["a"]`)."""
    import json

    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def comparison_rows(data: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(field, upstream, override, what the agent sees) for each field of `shown`'s tool."""
    up, o, seen = data["upstream"], data["override"] or {}, data["presented"]

    def field(key: str) -> tuple[str, str, str, str]:
        return (key, _cell(up.get(key)), _cell(o.get(key)), "(not presented)" if seen is None else _cell(seen.get(key)))

    rows = [field("name"), field("title"), field("description")]
    ann_up, ann_o = up.get("annotations") or {}, o.get("annotations") or {}
    ann_seen = (seen or {}).get("annotations") or {}
    for key in dict.fromkeys([*ann_up, *ann_o]):
        rows.append((f"annotations.{key}", _cell(ann_up.get(key)), _cell(ann_o.get(key)), _cell(ann_seen.get(key))))
    schema, seen_schema = up.get("inputSchema") or {}, (seen or {}).get("inputSchema") or {}
    params = list(dict.fromkeys([*(schema.get("properties") or {}), *(o.get("parameters") or {})]))
    for p in params:
        hidden = bool(((o.get("parameters") or {}).get(p) or {}).get("hide"))
        rows.append((f"parameter {p}", _param_text(schema, p), _override_param(o, p),
                     "(hidden)" if hidden else _param_text(seen_schema, p)))
    return rows
