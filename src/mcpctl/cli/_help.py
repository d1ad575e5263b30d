"""`--help` whose option names and defaults are never cut, on an 80-column terminal or piped.

typer lays each option out in five columns (long name, short name, negative long, negative short,
type) beside its help, and when the panel is narrower than the whole, rich shortens every column
with an ellipsis: `--gate-instructio…`, `[default: favourite-index-without-instructio…]`. Here each
option takes two columns: its names and type, whole (the negative form on its own line), and its
help, default included, as one paragraph that wraps (a word longer than the column is folded onto
the next line, never cut). Installed once per process by `install()` (the CLI's app builder).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

# What typer's rich helpers import for markdown help (not mcpctl's) and pretty tracebacks: 60 ms a help.
_DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


class _Later(type):
    """A class whose module is imported when it is called or an attribute of it is read."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(cls.__module__), cls.__name__)(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(getattr(importlib.import_module(cls.__module__), cls.__name__), name)


def rich_utils() -> Any:
    """typer's rich helpers, imported with `_Later` stand-ins of what `_DEFERRED` names."""
    if "typer.rich_utils" not in sys.modules:
        stand_ins = {m: type(sys)(m) for m in _DEFERRED if m not in sys.modules}
        for module, stand_in in stand_ins.items():
            setattr(stand_in, _DEFERRED[module], _Later(_DEFERRED[module], (), {"__module__": module}))
        sys.modules.update(stand_ins)
        try:
            importlib.import_module("typer.rich_utils")
        finally:
            for module in stand_ins:
                del sys.modules[module]
    return sys.modules["typer.rich_utils"]


def _names(param: Any, ctx: Any) -> Any:
    """An option's names and type as lines of one cell: `--server, -s <list[str]>`, `--no-x` below."""
    from rich.text import Text
    from typer import rich_utils as ru
    from typer.core import TyperArgument

    if isinstance(param, TyperArgument):
        names = param.display_name_raw + ("..." if param.metavar is None and param.nargs != 1 else "")
        negative = ""
    else:
        names = ", ".join(sorted(param.opts, key=lambda o: not o.startswith("--")))
        negative = ", ".join(param.secondary_opts)
    kind = param.display_type_rich(ctx=ctx) or ""
    ranged = param._get_number_range_help_str()
    cell = Text()
    cell.append_text(ru.highlighter(names))
    if kind or ranged:
        cell.append(" " + kind + (ru.RANGE_STRING.format(ranged) if ranged else ""), style=ru.STYLE_TYPES)
    if negative:
        cell.append("\n")
        cell.append_text(ru.negative_highlighter(negative))
    return cell


def _help(param: Any, ctx: Any, markup_mode: Any) -> Any:
    """The help, default and requiredness as one paragraph (typer puts them in `Columns`, whose
    items are not wrapped but cut)."""
    from rich.text import Text
    from typer import rich_utils as ru

    columns = ru._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
    texts = [p for p in columns.renderables if isinstance(p, Text)]
    if len(texts) < len(columns.renderables):
        return columns                          # markdown help (not used by mcpctl): as typer has it
    return Text(" ").join(t for t in texts if t.plain)


def _print_options_panel(*, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any) -> None:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils as ru

    if not params:
        return
    required = any(p.required for p in params)
    table = Table(highlight=True, show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))
    if required:
        table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, overflow="ignore")               # names: whole, however narrow the panel
    table.add_column(ratio=1, overflow="fold")                      # help: wraps, long words folded
    for p in params:
        row = [_names(p, ctx), _help(p, ctx, markup_mode)]
        if required:
            row.insert(0, Text(ru.REQUIRED_SHORT_STRING, style=ru.STYLE_REQUIRED_SHORT) if p.required else "")
        table.add_row(*row)
    console.print(Panel(table, border_style=ru.STYLE_OPTIONS_PANEL_BORDER, title=name,
                        title_align=ru.ALIGN_OPTIONS_PANEL))


def _use_panels() -> None:
    rich_utils()._print_options_panel = _print_options_panel


def install() -> None:
    """Lay out every options panel of `--help` as above (idempotent). typer's rich helpers (25 ms of
    imports) load only when a help is shown: the panel is put in place then, not at start-up."""
    from typer.core import TyperCommand, TyperGroup

    for cls in (TyperCommand, TyperGroup):
        if getattr(cls.format_help, "_mcpctl_panels", False):
            continue
        original = cls.format_help

        def format_help(self: Any, ctx: Any, formatter: Any, _original: Any = original) -> None:
            _use_panels()
            _original(self, ctx, formatter)

        format_help._mcpctl_panels = True  # type: ignore[attr-defined]
        cls.format_help = format_help  # type: ignore[method-assign]
