"""`mcpctl bakeoff`: measure what each presentation does to a model's choice of tool.

    mcpctl bakeoff --endpoint URL --model NAME[,NAME...] [--api-key-env VAR] (--project P | --catalogue DIR)
                   --tasks FILE [--presentations flat,favourite-index,...] [--favourites ID,...]
                   [--trials K] [--max-turns T] [--max-calls-per-turn N] [--request-timeout S]
                   [--seed S] [--temperature X] [--ranker R]
                   [-o table|json|markdown] [--save FILE.jsonl]
    mcpctl bakeoff report FILE.jsonl... [-o table|json|markdown]

The model drives the real gateway (`mcpctl serve` over stdio) once per presentation; see
docs/bakeoff.md and `mcpctl.bakeoff`. Heavy modules are imported when the command runs.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import (
    check_format,
    cli_errors,
    complete_projects,
    err,
    output_option,
    the_cache,
    the_store,
    write_stdout,
)

_FORMATS = ("table", "markdown", "json")
_DEFAULT_PRESENTATIONS = "flat,favourite-index,favourite-index-without-instruction,deferred"


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


def _show(text: str, fmt: str) -> None:
    from mcpctl.terminal import visible

    if fmt != "json":
        text = "\n".join(visible(line) for line in text.split("\n"))
    write_stdout(text + "\n")


def _check(presentations: list[str], project: str | None, catalogue: Path | None, trials: int,
           max_turns: int, api_key_env: str | None, ranker: str | None) -> None:
    from mcpctl.bakeoff.workspace import PRESENTATIONS
    from mcpctl.resources.settings import RANKERS

    if ranker is not None and ranker not in RANKERS:
        raise typer.BadParameter(f"{ranker!r} is not one of: {', '.join(RANKERS)}", param_hint="'--ranker'")
    if (project is None) == (catalogue is None):
        raise typer.BadParameter("give exactly one of --project P or --catalogue DIR", param_hint="'--project'")
    bad = [p for p in presentations if p not in PRESENTATIONS]
    if bad or not presentations:
        raise typer.BadParameter(f"{', '.join(bad) or 'nothing'} is not one of: {', '.join(PRESENTATIONS)}",
                                 param_hint="'--presentations'")
    if len(set(presentations)) != len(presentations):
        raise typer.BadParameter("a presentation is named twice", param_hint="'--presentations'")
    if trials < 1 or max_turns < 1:
        raise typer.BadParameter("--trials and --max-turns must be at least 1", param_hint="'--trials'")
    if api_key_env and not os.environ.get(api_key_env):
        raise typer.BadParameter(f"environment variable {api_key_env} is not set (or empty)",
                                 param_hint="'--api-key-env'")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Measure what each presentation does to a model's choice of tool: drive it "
                        "through the real gateway under each presentation and report first pick, wander, "
                        "success, tokens, turns and time with 95 % intervals (docs/bakeoff.md).",
                        invoke_without_command=True, no_args_is_help=False)

    @group.callback(invoke_without_command=True)
    @cli_errors
    def bakeoff(
        ctx: typer.Context,
        endpoint: Annotated[str | None, typer.Option(
            "--endpoint", help="OpenAI-compatible base URL ending in /v1 (Ollama: http://127.0.0.1:11434/v1).")] = None,
        model: Annotated[list[str] | None, typer.Option(
            "--model", metavar="NAME[,NAME...]", help="Model name the endpoint serves (comma-separated or repeated: each is measured "
            "on the same gateways).")] = None,
        api_key_env: Annotated[str | None, typer.Option(
            "--api-key-env", help="Environment variable holding the endpoint's API key (never a flag).")] = None,
        project: Annotated[str | None, typer.Option(
            "--project", "-p", help="Measure a copy of this project (calls reach its real servers).",
            autocompletion=complete_projects)] = None,
        catalogue: Annotated[Path | None, typer.Option(
            "--catalogue", help="A folder with tools.jsonl, served by stub servers that record calls.",
            file_okay=False)] = None,
        tasks: Annotated[Path | None, typer.Option(
            "--tasks", help="JSON Lines of tasks: id, query, and relevant_groups (lists of server/tool ids).",
            dir_okay=False)] = None,
        presentations: Annotated[str, typer.Option(
            "--presentations", help="Comma-separated: flat, favourite-index, "
            "favourite-index-without-instruction, deferred.")] = _DEFAULT_PRESENTATIONS,
        favourites: Annotated[list[str] | None, typer.Option(
            "--favourites", metavar="ID[,ID...]", help="Favourites (server/tool, comma-separated or repeated); default: the "
            "project's, or the catalogue's favourites.txt.")] = None,
        trials: Annotated[int, typer.Option("--trials", help="Runs of every task per presentation.")] = 1,
        max_turns: Annotated[int, typer.Option("--max-turns", help="Model turns per task.")] = 8,
        max_calls: Annotated[int, typer.Option(
            "--max-calls-per-turn", help="Tool calls of one answer that are run (the rest are answered "
            "'not run').")] = 8,
        request_timeout: Annotated[float, typer.Option(
            "--request-timeout", help="Seconds one model request may take (a slow one is reported every "
            "30 s; 2 timeouts in a row stop the run).")] = 600.0,
        seed: Annotated[int, typer.Option("--seed", help="Sent as seed (trial k: seed + k).")] = 0,
        temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")] = 0.0,
        ranker: Annotated[str | None, typer.Option(
            "--ranker", help="search_tools ranker for every presentation (auto|bm25|semantic|hybrid); "
            "default: the project's (auto for a catalogue).")] = None,
        save: Annotated[Path | None, typer.Option(
            "--save", help="Append one JSON line per task × presentation × trial.", dir_okay=False)] = None,
        output: Annotated[str, output_option(_FORMATS)] = "table",
    ) -> None:
        """Drive a model through the real gateway under each presentation and report first pick,
        wander, success, tokens, turns and time, with 95 % intervals. `bakeoff report FILE…` redraws
        saved runs."""
        if ctx.invoked_subcommand is not None:
            return
        check_format(output, _FORMATS)
        models = _split(model)
        if not endpoint or not models or tasks is None:
            raise typer.BadParameter("--endpoint, --model and --tasks are required", param_hint="'--endpoint'")
        chosen = _split([presentations])
        _check(chosen, project, catalogue, trials, max_turns, api_key_env, ranker)
        if max_calls < 1:
            raise typer.BadParameter("must be at least 1", param_hint="'--max-calls-per-turn'")
        if not request_timeout > 0:
            raise typer.BadParameter("must be a positive number of seconds", param_hint="'--request-timeout'")
        _run(endpoint, models, api_key_env, project, catalogue, tasks, chosen, _split(favourites) or None,
             trials, max_turns, seed, temperature, ranker, save, output, max_calls, request_timeout)

    @group.command("report")
    @cli_errors
    def report_cmd(
        files: Annotated[list[Path], typer.Argument(help="Results saved with --save (JSON Lines).",
                                                    dir_okay=False)],
        output: Annotated[str, output_option(_FORMATS)] = "table",
    ) -> None:
        """Redraw and compare saved bake-off runs."""
        check_format(output, _FORMATS)
        from mcpctl.bakeoff.report import load, render

        _show(render(load(files), output), output)

    app.add_typer(group, name="bakeoff", rich_help_panel="Catalogue")


def _run(endpoint: str, models: list[str], api_key_env: str | None, project: str | None, catalogue: Path | None,
         tasks: Path, presentations: list[str], favourites: list[str] | None, trials: int, max_turns: int,
         seed: int, temperature: float, ranker: str | None, save: Path | None, output: str, max_calls: int = 8,
         request_timeout: float = 600.0) -> None:
    import anyio

    from mcpctl.bakeoff.data import load_tasks
    from mcpctl.bakeoff.run import RunConfig, measure

    task_list = load_tasks(tasks)
    cfg = RunConfig(endpoint=endpoint, models=models, tasks_file=str(tasks), presentations=presentations,
                    trials=trials, max_turns=max_turns, seed=seed, temperature=temperature,
                    catalogue=str(catalogue) if catalogue else None, project=project, favourites=favourites,
                    ranker=ranker, api_key_env=api_key_env, max_calls_per_turn=max_calls,
                    request_timeout=request_timeout)
    api_key = os.environ.get(api_key_env) if api_key_env else None

    def progress(presentation: str, done: int, total: int) -> None:
        if err.is_terminal or done == total:
            err.print(f"{presentation}: {done}/{total} tasks", highlight=False, markup=False)

    def notice(text: str) -> None:
        from mcpctl.terminal import visible

        err.print(visible(text), highlight=False, markup=False)

    async def go() -> tuple[str, list[dict[str, Any]], int]:
        return await measure(cfg, task_list, output, store=the_store() if project else None,
                             cache=the_cache() if project else None, api_key=api_key,
                             save=save, progress=progress, notice=notice)

    # SIGTERM as Ctrl-C: the gateways are closed and the temporary homes removed either way
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        text, failed, total = anyio.run(go)
    finally:
        signal.signal(signal.SIGTERM, previous)
    _show(text, output)
    if failed and len(failed) == total:
        from mcpctl.errors import UpstreamError

        raise UpstreamError(f"every task ended in an error, nothing was measured: {failed[0].get('error')}",
                            hint="check --endpoint and --model (mcpctl bakeoff needs an OpenAI-compatible "
                            "chat-completions endpoint with tool calling)")
