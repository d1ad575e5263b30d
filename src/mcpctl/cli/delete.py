"""`mcpctl delete KIND NAME...` and `mcpctl delete -f FILE`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mcpctl.errors import MCPCtlError
from mcpctl.resources.apply import delete_objects

from ._common import cli_errors, the_store, warn, write_stdout
from ._resources import complete_kind, resolve_kind
from .get import _complete_name


def register(app: typer.Typer) -> None:
    @app.command("delete", rich_help_panel="Resources")
    @cli_errors
    def delete(
        kind: Annotated[str | None, typer.Argument(help="server|project (or plural/short forms)",
                                                   autocompletion=complete_kind)] = None,
        names: Annotated[list[str] | None, typer.Argument(autocompletion=_complete_name)] = None,
        filename: Annotated[list[str] | None, typer.Option("-f", "--filename", help="Delete what these manifests declare.")] = None,
        force: Annotated[bool, typer.Option("--force", help="Delete a server even if projects use it.")] = False,
        ignore_not_found: Annotated[bool, typer.Option("--ignore-not-found", help="Succeed when an object is already gone.")] = False,
    ) -> None:
        """Delete resources. A server that a project uses is kept unless --force."""
        targets: list[tuple[str, str]] = []
        if filename:
            from mcpctl.resources.validate import validate_document
            from mcpctl.resources.yamlio import load_sources

            if kind or names:
                raise MCPCtlError("give either KIND NAME... or -f FILE, not both")
            docs = load_sources(filename, stdin=sys.stdin)
            objs = [validate_document(d) for d in docs]
            # projects before the servers they use
            targets = [(o.kind, o.name) for o in sorted(objs, key=lambda o: o.kind != "Project")]
        else:
            if not kind or not names:
                raise MCPCtlError("what to delete?", hint="mcpctl delete server NAME, mcpctl delete project NAME, or mcpctl delete -f FILE")
            k = resolve_kind(kind)
            targets = [(k.name, n) for n in names]
        deleted, warnings = delete_objects(the_store(), targets, force=force, ignore_not_found=ignore_not_found)
        for w in warnings:
            warn(w)
        for k_name, n in deleted:
            if k_name == "Server":       # its last listing goes with it: no tool of it is shown
                from mcpctl.catalogue.pins import delete_pins

                from ._common import the_cache

                the_cache().delete_server(n)
                delete_pins(n)          # and its pinned definitions (state, not spec)
            write_stdout(f"{k_name.lower()}/{n} deleted\n")
