"""`mcpctl tools override|show --project P ID`: a project's own wording of one tool.

`override` edits `tools.overrides.<ID>` of the project (checked as `apply` checks it: against the
tool's last listing when its server was listed); `show` prints the tool as its server defines it,
the override, and what the agent sees, side by side (or `-o json|yaml`); what is stored and
compared is `presentation.tool_override`'s, the table `presentation.tools_table`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.presentation import tool_override as ov

from ._common import (
    Project,
    check_format,
    cli_errors,
    complete_tool_ids,
    out,
    output_option,
    print_json,
    show,
    the_cache,
    the_store,
    warn,
    write_stdout,
)

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


def _print_show(data: dict[str, Any], output: str) -> None:
    if output == "json":
        print_json(data)
        return
    if output == "yaml":
        from mcpctl.resources import yamlio

        write_stdout(yamlio.to_yaml(data))
        return
    from mcpctl.presentation.tools_table import override_parts

    show(override_parts(data))


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

        props = ov.input_properties(tool, the_cache())
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
        changed, warnings = ov.set_override(the_store(), the_cache(), project, tool, edit)
        for w in warnings:
            warn(w)
        out.print(f"project/{project} {'configured' if changed else 'unchanged'}", markup=False)

    @tools_app.command("show")
    @cli_errors
    def show_cmd(project: Project, tool: _Tool,
                 output: Annotated[str, output_option(_SHOW_FORMATS)] = "table") -> None:
        """One tool side by side: as its server defines it, the project's override, and what the agent sees."""
        check_format(output, _SHOW_FORMATS)
        _print_show(ov.shown(the_store(), the_cache(), project, tool), output)
