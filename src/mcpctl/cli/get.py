"""`mcpctl get KIND [NAME...] [-o table|wide|yaml|json|name]`."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import check_format, cli_errors, output_option, the_store
from ._resources import TABLES, complete_kind, render_objects, resolve_kind


def _complete_name(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    from mcpctl.resources.kinds import kind_for_alias

    kind = kind_for_alias(ctx.params.get("kind") or "")
    if kind is None:
        return []
    try:
        names = the_store().names(kind.name)
    except OSError:
        return []
    return [(n, f"{kind.name.lower()} {n}") for n in names if n.startswith(incomplete)]


def register(app: typer.Typer) -> None:
    @app.command("get", rich_help_panel="Resources")
    @cli_errors
    def get(
        kind: Annotated[str, typer.Argument(help="server|servers|srv, project|projects|proj",
                                            autocompletion=complete_kind)],
        names: Annotated[list[str] | None, typer.Argument(help="Names (all objects when omitted).",
                                                          autocompletion=_complete_name)] = None,
        output: Annotated[str, output_option(("table", "wide", "yaml", "json", "name"))] = "table",
    ) -> None:
        """Show resources: a table, or their full YAML/JSON (which `apply -f -` accepts back)."""
        from mcpctl.presentation.resources import live_view

        check_format(output)
        k = resolve_kind(kind)
        store = the_store()
        objs = [store.get(k.name, n) for n in names] if names else store.list(k.name)
        views = [live_view(store, o) for o in objs]
        if output in ("table", "wide"):
            if not views:
                from ._common import err

                err.print(f"No {k.plural} found. Create one with: mcpctl create {k.name.lower()} …")
                return
            from ._tables import print_table

            print_table(*TABLES[k.name](views, output == "wide"))
            return
        render_objects(views, output, single=names is not None and len(names) == 1)
