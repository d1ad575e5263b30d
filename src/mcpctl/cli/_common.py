"""Shared CLI plumbing: the error boundary, consoles, output formats, name completion."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from mcpctl.errors import MCPCtlError

P = ParamSpec("P")
R = TypeVar("R")

# Data goes to stdout, everything else (progress, warnings, errors) to stderr.
out = Console(soft_wrap=True, highlight=False, width=None if sys.stdout.isatty() else 250)
err = Console(stderr=True, soft_wrap=True, highlight=False)

OUTPUT_FORMATS = ("table", "wide", "yaml", "json", "name")


def cli_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn an MCPCtlError into one message on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MCPCtlError as e:
            err.print(f"[red]error:[/red] {escape(e.message)}", markup=True, highlight=False)
            if e.hint:
                err.print(f"  {e.hint}", markup=False)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)


def write_stdout(text: str) -> None:
    """Machine output, byte-exact (no rich wrapping or markup)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def print_json(data: Any) -> None:
    write_stdout(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def output_option(formats: tuple[str, ...] = OUTPUT_FORMATS) -> Any:
    """The `-o/--output` option: its help and its completion come from the formats it accepts."""

    def complete(incomplete: str) -> list[tuple[str, str]]:
        return [(f, "output format") for f in formats if f.startswith(incomplete)]

    return typer.Option("-o", "--output", help="|".join(formats), autocompletion=complete)


def check_format(fmt: str, allowed: tuple[str, ...] = OUTPUT_FORMATS) -> str:
    if fmt not in allowed:
        raise typer.BadParameter(f"{fmt!r} is not one of: {', '.join(allowed)}", param_hint="'-o' / '--output'")
    return fmt


def complete_names(kind_name: str) -> Callable[[str], list[tuple[str, str]]]:
    """Autocompletion for resource names of one kind."""

    def complete(incomplete: str) -> list[tuple[str, str]]:
        from mcpctl.resources.store import Store

        try:
            names = Store().names(kind_name)
        except OSError:
            return []
        return [(n, f"{kind_name.lower()} {n}") for n in names if n.startswith(incomplete)]

    return complete


def complete_projects(incomplete: str) -> list[tuple[str, str]]:
    return complete_names("Project")(incomplete)
