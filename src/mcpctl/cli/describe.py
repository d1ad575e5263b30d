"""`mcpctl describe KIND NAME`: a readable account of one object and what relates to it (what it
says of each kind is `presentation.resources.describe_fields`'s; this module prints it)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.presentation.resources import NOT_REGISTERED, age, describe_fields

from ._common import cli_errors, out, safe, the_store
from ._resources import complete_kind, resolve_kind
from .get import _complete_name


def _kv(label: str, value: Any, *, markup: str | None = None) -> None:
    """One `Label: value` line; `value` is shown as text (`markup`: a line mcpctl composed itself)."""
    out.print(f"[bold]{safe(label) + ':':<16}[/bold] {markup if markup is not None else safe(value)}",
              highlight=False)


def _field(label: str | None, value: str) -> None:
    """One of `presentation.resources.describe_fields`: a `Label: value` line (a project's servers
    missing from the store in red), or a line of its own."""
    if label is None:
        out.print(safe(value, markup=False), highlight=False, markup=False)
    elif label == "Servers":
        _kv(label, None, markup=safe(value).replace(NOT_REGISTERED, " [red](not registered)[/red]"))
    else:
        _kv(label, value)


def register(app: typer.Typer) -> None:
    @app.command("describe", rich_help_panel="Resources")
    @cli_errors
    def describe(
        kind: Annotated[str, typer.Argument(autocompletion=complete_kind)],
        name: Annotated[str, typer.Argument(autocompletion=_complete_name)],
    ) -> None:
        """Show one object in detail, with its observed status and what uses it."""
        k = resolve_kind(kind)
        store = the_store()
        res = store.get(k.name, name)
        m = res["metadata"]
        _kv("Name", m["name"])
        _kv("Kind", k.name)
        for key, v in (m.get("labels") or {}).items():
            _kv(f"  label {key}", v)
        _kv("Created", f"{m.get('creationTimestamp', '-')} ({age(m.get('creationTimestamp'))} ago)")
        _kv("Generation", f"{m.get('generation', '-')} (resourceVersion {m.get('resourceVersion', '-')})")
        for label, value in describe_fields(store, k.name, res):
            _field(label, value)
