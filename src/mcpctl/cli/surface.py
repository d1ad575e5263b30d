"""`mcpctl surface --project P`: a project's tool surface, priced and judged (`catalogue.surface`).

Reads the catalogue exactly as the gateway presents it (the cache; servers never listed are
listed now, every server with `--refresh`) and the invocation log's calls in the window, and
prints the core's `SurfaceReport` for people (`table`: `presentation.surface_table`), scripts
(`json`, keys pinned by a test) or a pull-request comment (`markdown`): `presentation.surface_formats`.
Only the report goes to stdout. `--by credential|host|...`
adds the window's calls per token name, gateway host, ... (`cli/_breakdown.py`), in every format.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from mcpctl.audit.formats import breakdown_markdown, breakdown_section_json
from mcpctl.presentation import surface_formats as sf

from . import _breakdown as bd
from ._common import (
    Project,
    check_format,
    cli_errors,
    out,
    output_option,
    print_json,
    safe,
    show,
    write_stdout,
)

if TYPE_CHECKING:
    from mcpctl.presentation.surface import SurfaceReport

FORMATS = ("table", "json", "markdown")
_now = time.time                # the clock the window is measured from (a test can fix it)


# -- gathering -------------------------------------------------------------------------------------


def surface_report(project: str, *, window_days: float, refresh: bool = False, now: float | None = None
                   ) -> tuple[SurfaceReport, list[str]]:
    """The report for `project` and the servers that could not be listed (each warned about once)."""
    from mcpctl.catalogue.tokens import token_counter
    from mcpctl.presentation.surface import surface_of

    from ._common import invocation_log
    from ._listing import listed_catalogue, warn_unservable, working

    cached, failed = listed_catalogue(project, refresh=refresh, progress=True)
    failed = warn_unservable(cached, failed)
    now = _now() if now is None else now
    with working("reading the invocation log") as stage, invocation_log() as log:
        report = surface_of(cached, log, window_days=window_days, now=now, counter=token_counter(), on_stage=stage)
    return report, failed


# -- the command -----------------------------------------------------------------------------------


def _print_report(report: SurfaceReport, output: str, by: str | None) -> None:
    """The report in `output`'s format, with the window's calls per `by` (if given) at its end."""
    usage = bd.usage_by(by, project=report.project, since=report.since, until=report.until) if by else None
    period = f"in the last {report.window_days:g} days"
    if output == "json":
        print_json({**sf.report_json(report), **({"by": breakdown_section_json(by, usage)} if by and usage is not None else {})})
    elif output == "markdown":
        text = sf.render_markdown(report)
        if by and usage is not None:
            text += "\n" + "\n".join(breakdown_markdown(by, usage, period)) + "\n"
        write_stdout("\n".join(safe(line, markup=False) for line in text.split("\n")))
    else:
        from mcpctl.presentation.surface_table import surface_parts

        show(surface_parts(report))
        if by and usage is not None:
            out.print()
            bd.render_section(by, usage, period)


def register(app: typer.Typer) -> None:
    @app.command("surface", rich_help_panel="Gateway",
                 short_help="Price and judge a project's tool surface: tokens, write reach, look-alikes, use.")
    @cli_errors
    def surface_cmd(
        project: Project,
        window: Annotated[float, typer.Option("--window", min=0.001, help="Days of the invocation log to judge use by.")
                          ] = 30.0,
        output: Annotated[str, output_option(FORMATS)] = "table",
        refresh: Annotated[bool, typer.Option("--refresh", help="List every server now (otherwise the cached "
                                              "listing; servers never listed are listed anyway).")] = False,
        by: Annotated[str | None, typer.Option("--by", help=bd.by_option_help("Also the window's calls"))] = None,
    ) -> None:
        """Price and judge a project's tool surface: tokens per server and per presentation mode, tools that
        can write/delete/send, name collisions and near-duplicate descriptions across servers, use from the
        invocation log, and runnable recommendations. Token counts are approximate."""
        from mcpctl.errors import EXIT_UPSTREAM

        check_format(output, FORMATS)
        bd.check_by(by)
        report, failed = surface_report(project, window_days=window, refresh=refresh)
        _print_report(report, output, by)
        if failed:      # each failure was reported once, above; the report says it is incomplete
            raise typer.Exit(EXIT_UPSTREAM)
