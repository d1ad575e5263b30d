"""`mcpctl ask --project P "QUESTION" [--top-k N] [--profile NAME] [-o table|json]`: the `ask`
built-in from the shell, for a user checking what an agent would get: the passages, answered by
the project's own model when its spec sets `ask.model` (the shell lends no model of its own, so
without it the passages only). The project's servers are connected once, now, their text resources read
and cut into passages (as the gateway does, `ask.index`), ranked by the project's ranker, and only
the servers the project's view admits (curation, and with --profile that credential's view) are
drawn on.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ._common import (
    check_format,
    cli_errors,
    complete_projects,
    err,
    out,
    output_option,
    print_json,
    the_cache,
    the_store,
    warn,
)

_FORMATS = ("table", "json")


def _retrieve(project: str, question: str, top_k: int | None, profile: str | None) -> dict[str, Any]:
    import anyio

    from mcpctl.ask import answer
    from mcpctl.errors import MCPCtlError
    from mcpctl.gateway.knowledge import read_servers
    from mcpctl.presentation.catalogue import cached_catalogue, load_gateway_config
    from mcpctl.presentation.view import SessionKey

    spec, servers = load_gateway_config(project, the_store())
    if profile is not None and spec.profile(profile) is None:
        raise MCPCtlError(f"project {project!r} has no profile {profile!r}",
                          hint=f"its profiles: {', '.join(spec.profile_names())}")
    view = cached_catalogue(project, the_store(), the_cache()).view(SessionKey(False, profile))
    allowed = {s for s in servers if view.admit(s, "resources") is None}
    if not spec.ask.enabled:
        warn(f"ask is not enabled in project {project!r}: its agents do not get the ask tool "
             f"(enable it with `ask: {{enabled: true}}` in its spec: mcpctl edit project {project})")
    chosen = {n: s for n, s in servers.items() if n in allowed}
    if err.is_terminal:
        with err.status(f"reading the resources of {len(chosen)} server(s)…"):
            got, failed = anyio.run(read_servers, chosen, spec.ask.max_bytes)
    else:
        got, failed = anyio.run(read_servers, chosen, spec.ask.max_bytes)
    for name, why in sorted(failed.items()):
        warn(f"server {name!r} could not be read: {why}")
    return answer.retrieve(question, got, allowed, ranker=spec.search.ranker, max_bytes=spec.ask.max_bytes,
                           top_k=top_k or spec.ask.top_k, model=spec.ask.model)


def register(app: typer.Typer) -> None:
    @app.command("ask", rich_help_panel="Catalogue")
    @cli_errors
    def ask_cmd(
        question: Annotated[str, typer.Argument(help="The question, in a sentence.")],
        project: Annotated[str, typer.Option("--project", "-p", help="The project whose servers to ask.",
                                             autocompletion=complete_projects)],
        top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=20,
                                                  help="Passages to show (1-20; default the project's ask.topK).")] = None,
        profile: Annotated[str | None, typer.Option(
            "--profile", help="Draw only on what this credential profile's view admits.")] = None,
        output: Annotated[str, output_option(_FORMATS)] = "table",
    ) -> None:
        """Ask what the project's servers know: the passages of their text resources that the ask
        built-in would give an agent, best first, with URIs and scores, and the answer of the
        project's model when its spec sets ask.model (else no model is asked)."""
        check_format(output, _FORMATS)
        result = _retrieve(project, question, top_k, profile)
        if output == "json":
            print_json(result)
            return
        from mcpctl.ask.answer import text

        err.print(f"{result['resources']} resource(s), {result['total_searched']} passage(s) searched, ranked by "
                  f"{result['ranker']}", highlight=False, markup=False, soft_wrap=True)
        out.print(text(result), highlight=False, markup=False, soft_wrap=True)
