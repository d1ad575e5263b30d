"""`mcpctl diff -f FILE`: what apply would change (exit 0 same, 1 different, >1 error)."""

from __future__ import annotations

import difflib
import sys
from typing import Annotated, Any

import typer

from mcpctl.errors import MCPCtlError
from mcpctl.resources.apply import plan, validate_all
from mcpctl.resources.yamlio import load_sources, skipped_message, to_yaml

from ._common import err, report_error, the_store, write_stdout

EXIT_DIFFERENT = 1
EXIT_ERROR = 2


def _comparable(res: dict[str, Any] | None) -> str:
    if res is None:
        return ""
    meta = {k: v for k, v in res.get("metadata", {}).items() if k in ("name", "labels", "annotations")}
    return to_yaml({"apiVersion": res.get("apiVersion"), "kind": res.get("kind"), "metadata": meta, "spec": res.get("spec", {})})


def register(app: typer.Typer) -> None:
    @app.command("diff", rich_help_panel="Resources")
    def diff(
        filename: Annotated[list[str], typer.Option("-f", "--filename", help="File, directory or - for stdin.")],
        recursive: Annotated[bool, typer.Option("-R", "--recursive")] = False,
    ) -> None:
        """Show how the manifests differ from what is stored. Exit 0: same, 1: different, 2 or more: error."""
        try:
            docs = load_sources(filename, stdin=sys.stdin, recursive=recursive,
                                on_skip=lambda paths: err.print(skipped_message(paths), markup=False, highlight=False))
            store = the_store()
            from ._common import the_cache

            objs, _warnings = validate_all(docs, store, allow_missing=True, known_tools=the_cache().read_server_tools)
            changes = plan(objs, store)
        except MCPCtlError as e:
            report_error(e)
            raise typer.Exit(max(EXIT_ERROR, e.exit_code)) from None
        different = False
        for c in changes:
            if c.action == "unchanged":
                continue
            different = True
            desired = c.resource
            lines = difflib.unified_diff(
                _comparable(c.live).splitlines(keepends=True), _comparable(desired).splitlines(keepends=True),
                fromfile=f"live/{c.ref}" if c.live else "/dev/null", tofile=f"desired/{c.ref}")
            write_stdout("".join(lines))
        raise typer.Exit(EXIT_DIFFERENT if different else 0)
