"""`mcpctl tools override|show --project P ID`: a project's own wording of one tool.

`override` edits `tools.overrides.<ID>` of the project (checked as `apply` checks it: against the
tool's last listing when its server was listed); `show` prints the tool as its server defines it,
the override, and what the agent sees, side by side (or `-o json|yaml`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ._common import (
    Project,
    check_format,
    cli_errors,
    out,
    output_option,
    print_json,
    safe,
    the_store,
    warn,
    write_stdout,
)
from .create import complete_tool_ids

_Tool = Annotated[str, typer.Argument(metavar="ID", help="The tool's canonical id, server/tool.",
                                      autocompletion=complete_tool_ids)]
_Pairs = list[str] | None
_SHOW_FORMATS = ("table", "json", "yaml")


def _pairs(values: _Pairs, flag: str) -> dict[str, str]:
    out_: dict[str, str] = {}
    for item in values or []:
        param, sep, value = item.partition("=")
        if not sep or not param.strip():
            raise typer.BadParameter(f"{item!r} is not PARAM=VALUE", param_hint=f"'{flag}'")
        out_[param.strip()] = value
    return out_


def _schema_of(cid: str) -> dict[str, Any]:
    """The properties of the tool's input schema as its server last listed it ({} when unknown)."""
    from ._common import the_cache

    server, _, name = cid.partition("/")
    wire = next((w for w in the_cache().read_server_tools(server) or [] if w.get("name") == name), None)
    schema = (wire or {}).get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def override(project: str, cid: str, edit: Any) -> tuple[bool, list[str]]:
    """Store the edited override; (changed, warnings)."""
    from mcpctl.errors import InvalidResource
    from mcpctl.resources.edit import edit_spec
    from mcpctl.resources.kinds import check_override_id
    from mcpctl.resources.overrides import edit_override

    from ._common import the_cache

    problem = check_override_id(cid)
    if problem:
        raise InvalidResource(f"ID: {problem}")
    try:
        done = edit_spec(the_store(), "Project", project, lambda spec: edit_override(spec, cid, edit),
                         where="tools override", known_tools=the_cache().read_server_tools)
    except InvalidResource as e:
        raise InvalidResource(f"project {project!r}: {e.message}", hint=e.hint) from None
    return done.changed, done.warnings


def shown(project: str, cid: str) -> dict[str, Any]:
    """The tool `cid` of `project`: its server's definition, the override, and what the agent sees
    (the presented name and definition; None where the project does not present it)."""
    from mcpctl.errors import NotFound, did_you_mean
    from mcpctl.presentation.catalogue import cached_catalogue

    from ._common import the_cache

    store = the_store()
    cached = cached_catalogue(project, store, the_cache())
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


def _rows(data: dict[str, Any]) -> list[tuple[str, str, str, str]]:
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


def _print_show(data: dict[str, Any], output: str) -> None:
    if output == "json":
        print_json(data)
        return
    if output == "yaml":
        from mcpctl.resources import yamlio

        write_stdout(yamlio.to_yaml(data))
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold", show_lines=False)
    for c in ("FIELD", "UPSTREAM", "OVERRIDE", "AGENT SEES"):
        table.add_column(c, overflow="fold", no_wrap=c == "FIELD")
    for row in _rows(data):
        table.add_row(*(safe(cell) for cell in row))
    name = data["presentedName"] or "not presented in this project"
    out.print(f"{safe(data['canonicalId'])} (presented as {safe(name)})", markup=False)
    out.print(table)


def register(tools_app: typer.Typer) -> None:
    @tools_app.command("override")
    @cli_errors
    def override_cmd(
        project: Project,
        tool: _Tool,
        name: Annotated[str | None, typer.Option("--name", help="The tool's presented name (its part of "
                                                 "server__name); \"\" keeps the server's.")] = None,
        title: Annotated[str | None, typer.Option("--title", help="Its title; \"\" keeps the server's.")] = None,
        description: Annotated[str | None, typer.Option("--description", help="Its description; \"\" keeps "
                                                        "the server's.")] = None,
        hide: Annotated[_Pairs, typer.Option("--hide", metavar="PARAM=VALUE", help="Hide a parameter from the "
                                             "agent; every call sends VALUE (repeatable).")] = None,
        default: Annotated[_Pairs, typer.Option("--default", metavar="PARAM=VALUE", help="Fill in VALUE when a "
                                                "call leaves PARAM out (repeatable).")] = None,
        describe: Annotated[_Pairs, typer.Option("--describe", metavar="PARAM=TEXT", help="A parameter's own "
                                                 "description (repeatable).")] = None,
        reset: Annotated[list[str] | None, typer.Option("--reset", metavar="PARAM", help="Stop overriding a "
                                                        "parameter (repeatable).")] = None,
        read_only: Annotated[bool | None, typer.Option("--read-only/--not-read-only",
                                                       help="Annotate it read-only (or not).")] = None,
        destructive: Annotated[bool | None, typer.Option("--destructive/--not-destructive",
                                                         help="Annotate it destructive (or not).")] = None,
        clear: Annotated[bool, typer.Option("--clear", help="Remove the whole override: the agent sees the "
                                            "tool as its server defines it.")] = False,
    ) -> None:
        """Reword one tool for this project: name, title, description, annotations, parameters.
        Checked against the tool's last listing; `mcpctl tools show` prints the result."""
        from mcpctl.resources.overrides import OverrideEdit, parse_value

        props = _schema_of(tool)
        annotations = {k: v for k, v in (("readOnlyHint", read_only), ("destructiveHint", destructive))
                       if v is not None}
        edit = OverrideEdit(name, title, description, annotations or None,
                            {p: parse_value(v, props.get(p)) for p, v in _pairs(hide, "--hide").items()},
                            {p: parse_value(v, props.get(p)) for p, v in _pairs(default, "--default").items()},
                            _pairs(describe, "--describe"), tuple(reset or ()), clear)
        given = [x for x in (name, title, description, hide, default, describe, reset) if x] + list(annotations)
        if clear and given:
            raise typer.BadParameter("give --clear alone", param_hint="'--clear'")
        if not clear and not given and name is None and title is None and description is None:
            raise typer.BadParameter("nothing to change: give --description, --name, --title, --hide, --default, "
                                     "--describe, --reset, --read-only, --destructive, or --clear",
                                     param_hint="'ID'")
        changed, warnings = override(project, tool, edit)
        for w in warnings:
            warn(w)
        out.print(f"project/{project} {'configured' if changed else 'unchanged'}", markup=False)

    @tools_app.command("show")
    @cli_errors
    def show_cmd(project: Project, tool: _Tool,
                 output: Annotated[str, output_option(_SHOW_FORMATS)] = "table") -> None:
        """One tool side by side: as its server defines it, the project's override, and what the agent sees."""
        check_format(output, _SHOW_FORMATS)
        _print_show(shown(project, tool), output)
