"""Shared CLI plumbing: the error boundary, consoles, output formats, name completion."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from mcpctl.errors import MCPCtlError
from mcpctl.terminal import json_escaped, visible

if TYPE_CHECKING:
    from mcpctl.audit.records import AuditLog
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.presentation.tables import Part
    from mcpctl.resources.store import ResourceStore
    from mcpctl.storage import Storage

P = ParamSpec("P")
R = TypeVar("R")

# Data goes to stdout, everything else (progress, warnings, errors) to stderr.
out = Console(soft_wrap=True, highlight=False, width=None if sys.stdout.isatty() else 250)
err = Console(stderr=True, soft_wrap=True, highlight=False)

OUTPUT_FORMATS = ("table", "wide", "yaml", "json", "name")

def safe(text: object, *, markup: bool = True) -> str:
    """Untrusted text as a terminal should show it: every control and bidi character as a visible
    escape (`\\x1b`, `\\u202e`), and, for output rich reads as markup (tables, `print` with markup),
    `[` escaped so that `[red]` is text. The one helper every human-readable output uses; machine
    output (`-o json|yaml|name`) stays exact. Which characters: `mcpctl.terminal`."""
    shown = visible(str(text))
    if not markup:
        return shown
    from rich.markup import escape

    return escape(shown)


def storage() -> Storage:
    """The command's `Storage`, opened by the CLI's root (`mcpctl.cli`) for this command line."""
    from ._storage import current

    return current()


def the_store() -> ResourceStore:
    """The command's resource store (`storage().store`)."""
    return storage().store


def the_cache() -> CatalogueCache:
    """The command's catalogue cache (`storage().cache`)."""
    return storage().cache


@contextlib.contextmanager
def invocation_log() -> Iterator[AuditLog]:
    """The command's invocation log (the team database's when a database URL is in effect, else
    the SQLite file); an MCPCtlError names what cannot be opened. The root closes it."""
    yield storage().log


def cli_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn an MCPCtlError into one message on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MCPCtlError as e:
            report_error(e)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def report_error(e: MCPCtlError) -> None:
    """An MCPCtlError as every command reports it: `error: <message>` and its hint, on stderr."""
    first, *more = e.message.split("\n")       # several problems (mcpctl's own lines) print as lines
    err.print(f"[red]error:[/red] {safe(first)}", markup=True, highlight=False)
    for line in more:
        err.print(f"  {safe(line, markup=False)}", markup=False)
    for line in (e.hint or "").splitlines():     # so does a hint of several lines
        err.print(f"  {safe(line.strip(), markup=False)}", markup=False)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {safe(message)}", markup=True, highlight=False)


def write_stdout(text: str) -> None:
    """Machine output, byte-exact (no rich wrapping or markup)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def show(parts: Iterable[Part]) -> None:
    """A report built by another package (`presentation.tables.Part`s) on stdout: lines as they are, tables."""
    for part in parts:
        if isinstance(part, str):
            out.print(part, markup=False)
        else:
            out.print(part)


def print_json(data: Any) -> None:
    """JSON as it is, except that DEL, C1 and bidi controls are written as `\\u202e` escapes
    (the same string to a parser; json.dumps already escapes C0)."""
    write_stdout(json_text(data) + "\n")


def json_text(data: Any, indent: int | None = 2) -> str:
    return json_escaped(json.dumps(data, indent=indent, ensure_ascii=False))


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
        try:
            names = the_store().names(kind_name)
        except OSError:
            return []
        return [(n, f"{kind_name.lower()} {n}") for n in names if n.startswith(incomplete)]

    return complete


def complete_projects(incomplete: str) -> list[tuple[str, str]]:
    return complete_names("Project")(incomplete)


def complete_tool_ids(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Canonical ids `server/tool` from the catalogue cache (`presentation.tools.tool_choices`): of
    the servers named on the command line (--server) or the project's (--project), else of every
    cached server."""
    from mcpctl.presentation.tools import tool_choices

    servers = [s for s in (ctx.params.get("server") or []) if isinstance(s, str)]
    project = ctx.params.get("project")
    return tool_choices(the_store(), the_cache(), servers, project if isinstance(project, str) else None, incomplete)


def project_option(help: str = "The project.") -> Any:
    """The `-p/--project` option: a project's name, completed from the store."""
    return typer.Option("--project", "-p", help=help, autocompletion=complete_projects)


# A command's required `--project`, as the tools, favourites and surface commands spell it.
Project = Annotated[str, project_option()]
