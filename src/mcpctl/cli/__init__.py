"""The mcpctl command line: one module per verb group; the only code importing typer or rich.

Each verb module exposes `register(app)`. Modules must not import `mcp` (or anything that
does) at import time: shell completion runs this program on every TAB.
"""

from __future__ import annotations

import importlib

import typer

from mcpctl import __version__

app = typer.Typer(
    name="mcpctl",
    help="Register MCP servers once, group them into projects, and serve each project as one "
    "curated, searchable catalogue.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Order is the order of `mcpctl --help`.
_VERB_MODULES = (
    "get", "describe", "create", "apply", "diff", "delete", "edit",
    "serve", "tools", "logs", "eval", "demo",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mcpctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """mcpctl: one curated, searchable MCP catalogue for coding agents."""


for _name in _VERB_MODULES:
    try:
        _mod = importlib.import_module(f"mcpctl.cli.{_name}")
    except ModuleNotFoundError as e:   # a verb module not written yet
        if e.name != f"mcpctl.cli.{_name}":
            raise
        continue
    _mod.register(app)


def main() -> None:
    app(prog_name="mcpctl")
