"""`mcpctl create server|project NAME ...`: imperative creation (AlreadyExists without --force).

The flags become a manifest in `resources.flags`; a --url server's transport is asked of the server
(`upstream.probe`) and a new server is listed once (`_listing`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.errors import InvalidResource
from mcpctl.resources.apply import create_object
from mcpctl.resources.flags import flag_message, project_document, server_document
from mcpctl.resources.settings import DEFAULT_MAX_RESULT_TOKENS, DEFAULT_NAME_MAX_LENGTH
from mcpctl.resources.yamlio import Document

from . import token
from ._common import cli_errors, complete_names, complete_tool_ids, the_cache, the_store, warn, write_stdout


def _create(doc_data: dict[str, Any], *, force: bool, allow_missing: bool = False) -> None:
    src = f"mcpctl create {doc_data['kind'].lower()}"
    doc = Document(source=src, index=1, data=doc_data)
    try:
        change, warnings = create_object(doc, the_store(), force=force, allow_missing=allow_missing,
                                         known_tools=the_cache().read_server_tools)
    except InvalidResource as e:
        raise InvalidResource(flag_message(e.message, src), hint=e.hint) from None
    for w in warnings:
        warn(flag_message(w, src))
    write_stdout(f"{change.ref} {change.action}\n")


@cli_errors
def create_server(
    name: Annotated[str, typer.Argument(help="Server name: lowercase letters, digits, '-'.")],
    command: Annotated[list[str] | None, typer.Argument(help="After --: the stdio command and its arguments.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Remote endpoint (instead of a command): streamable HTTP, "
                                            "or legacy HTTP+SSE when the server answers that way.")] = None,
    transport: Annotated[str | None, typer.Option("--transport", help="With --url: http or sse (default: try "
                                                  "streamable HTTP, fall back to SSE on the spec's signal).")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="HTTP header NAME=VALUE (repeatable).")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="Environment KEY=VALUE for the stdio server (repeatable). Use ${env:NAME} for secrets.")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working directory of the stdio server.")] = None,
    description: Annotated[str | None, typer.Option("--description", help="What this server is for.")] = None,
    connect_timeout: Annotated[float | None, typer.Option("--connect-timeout", help="Seconds to wait for the server to connect.")] = None,
    call_timeout: Annotated[float | None, typer.Option("--call-timeout", help="Seconds a tool call may take.")] = None,
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Label KEY=VALUE (repeatable).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the server if it exists.")] = False,
    check: Annotated[bool, typer.Option("--check/--no-check", help="Connect and list the server once, now, "
                                        "and say how many tools it has or why it failed.")] = True,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse (store nothing) when the command is not "
                                         "found or a ${env:…}/${file:…} reference cannot be resolved here.")] = False,
) -> None:
    """Register an upstream MCP server: `create server NAME -- CMD ARGS...` or `create server NAME --url URL`.

    Then it is listed once (--no-check skips that): its tool count, or why it failed."""
    doc = server_document(name, command=command, url=url, transport=transport, header=header, env=env, cwd=cwd,
                          description=description, connect_timeout=connect_timeout, call_timeout=call_timeout,
                          label=label)
    spec = doc["spec"]
    from mcpctl.resources.server_checks import static_problems

    problems = static_problems(spec)
    if strict and problems:
        raise InvalidResource(f"server {name!r}: {problems[0]}",
                              hint="; ".join(problems[1:]) or "fix it, or create the server without --strict")
    for problem in problems:
        warn(f"server {name!r}: {problem}")
    if url and (transport is None or not header):
        from mcpctl.upstream.probe import remote_transport

        found, oauth, asked = remote_transport(spec, connect_timeout, probe=check and not problems)
        if asked and found == "sse" and spec.get("transport") != "sse":
            from ._common import err

            err.print("  the server speaks the legacy HTTP+SSE transport: transport sse", markup=False)
        spec["transport"] = transport or found
        if oauth and not header:        # a static --header wins over a sign-in
            spec["auth"] = {"type": "oauth"}
    _create(doc, force=force)
    if spec.get("auth"):
        from ._common import err

        err.print(f"  the server asks for an OAuth sign-in: recorded auth: {{type: oauth}}; "
                  f"run mcpctl login {name}", markup=False)
    elif check and not problems:          # (with problems, listing would only fail the same way)
        _check_listing(name)


def _check_listing(name: str) -> None:
    """List the new server once and say what came of it (stderr; the result line stays on stdout)."""
    from mcpctl.resources.kinds import ServerSpec

    from ._common import err
    from ._listing import list_now

    spec = ServerSpec.from_resource(the_store().get("Server", name))
    result = list_now({name: spec}, f"listing {name}").get(name)
    if result is not None and result.ok:
        err.print(f"  listed: {result.tools} tools (protocol {result.protocol})", markup=False)
        _flag_listing(name)


def _flag_listing(name: str) -> None:
    """The first listing is pinned as the trusted one: say now what in it carries the marks of
    tool poisoning (`_flags`), before a project serves it."""
    from mcpctl.catalogue.poison.flags import headline
    from mcpctl.presentation.tools import flags_of

    from . import _flags

    found = flags_of((f"{name}/{t.get('name')}", t) for t in the_cache().read_server_tools(name) or [])
    tools = " ".join(f"'{t}'" for t in found)
    _flags.say(found, headline(len(found), "tool description", "tool descriptions") +
               " (pinned as listed: flagged, not blocked)",
               f"read them before a project serves this server; keep them from the agent with: mcpctl tools "
               f"disable --project P {tools}")


@cli_errors
def create_project(
    name: Annotated[str, typer.Argument(help="Project name: lowercase letters, digits, '-'.")],
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="A registered server (repeatable).",
                                                     autocompletion=complete_names("Server"))] = None,
    favourite: Annotated[list[str] | None, typer.Option(
        "--favourite", help="Pin a favourite tool server/tool (repeatable; in order). Turns the favourite index on.",
        autocompletion=complete_tool_ids)] = None,
    favourite_index: Annotated[bool | None, typer.Option(
        "--favourite-index/--no-favourite-index",
        help="Present favourites first, then every tool under all/ (on when favourites are given).")] = None,
    max_favourites: Annotated[int | None, typer.Option("--max-favourites", help="At most this many favourites (1-200).")] = None,
    disable: Annotated[list[str] | None, typer.Option("--disable", help="Disable tools: server/tool or a glob like github/delete_* (repeatable).")] = None,
    enable: Annotated[list[str] | None, typer.Option("--enable", help="Exceptions to --disable (repeatable).")] = None,
    presentation: Annotated[str | None, typer.Option(
        "--presentation", help="flat | favourite-index | deferred (default: favourite-index with favourites, else flat)")] = None,
    gate: Annotated[bool | None, typer.Option(
        "--gate/--no-gate", help="Gate each session: it sees only begin_session(task) until it calls it.")] = None,
    gate_instructions: Annotated[str | None, typer.Option(
        "--gate-instructions", help="What begin_session tells the agent (with --gate).")] = None,
    names: Annotated[str | None, typer.Option("--names", help="Presented names: portable (client-safe, default) | spec | bare")] = None,
    max_name_length: Annotated[int | None, typer.Option("--max-name-length", help=f"Longest presented name (16-128; default {DEFAULT_NAME_MAX_LENGTH}).")] = None,
    search: Annotated[bool | None, typer.Option("--search/--no-search", help="Offer the search_tools built-in (default on).")] = None,
    ranker: Annotated[str | None, typer.Option("--ranker", help="search_tools ranker: auto (default) | bm25 | semantic | hybrid")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", help="search_tools results by default (1-20).")] = None,
    record_queries: Annotated[bool | None, typer.Option(
        "--record-queries/--no-record-queries", help="Record search_tools queries in the invocation log.")] = None,
    max_result_tokens: Annotated[int | None, typer.Option(
        "--max-result-tokens", help="Cut a tool result's text over this many tokens into sections read with "
        f"read_result (default {DEFAULT_MAX_RESULT_TOKENS}; 0: never cut).")] = None,
    ask: Annotated[bool | None, typer.Option(
        "--ask/--no-ask", help="Offer the ask built-in: answers from the servers' text resources (docs/ask.md).")] = None,
    ask_top_k: Annotated[int | None, typer.Option("--ask-top-k", help="Passages ask returns by default (1-20).")] = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Label KEY=VALUE (repeatable).")] = None,
    annotation: Annotated[list[str] | None, typer.Option("--annotation", help="Annotation KEY=VALUE (repeatable).")] = None,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Accept servers that are not registered yet.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace the project if it exists.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse (store nothing) when a --favourite, --enable or "
                                         "--disable id matches no tool its server last listed.")] = False,
) -> None:
    """Create a project: a set of servers with curation, favourites, presentation and search settings."""
    from mcpctl.resources.kinds import NAME_STYLES, PRESENTATIONS
    from mcpctl.resources.settings import RANKERS

    for value, allowed, flag in ((presentation, PRESENTATIONS, "--presentation"), (names, NAME_STYLES, "--names"),
                                 (ranker, RANKERS, "--ranker")):
        if value is not None and value not in allowed:       # a usage error (exit 2), as for any bad flag value
            raise typer.BadParameter(f"{value!r} is not one of: {', '.join(allowed)}", param_hint=f"'{flag}'")
    from mcpctl.catalogue.idcheck import check_project_ids

    settings: dict[str, dict[str, Any]] = {
        "gate": {"enabled": gate, "instructions": gate_instructions},
        "names": {"style": names, "maxLength": max_name_length},
        "search": {"enabled": search, "ranker": ranker, "topK": top_k, "recordQueries": record_queries},
        "results": {"maxTokens": max_result_tokens},
        "ask": {"enabled": ask, "topK": ask_top_k},
    }
    doc = project_document(name, servers=server, favourites=favourite, favourite_index=favourite_index,
                           max_favourites=max_favourites, disable=disable, enable=enable, presentation=presentation,
                           settings=settings, description=description, label=label, annotation=annotation)
    for w in check_project_ids(name, doc["spec"], the_cache(), strict=strict):
        warn(w)
    _create(doc, force=force, allow_missing=allow_missing)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Create a server or a project from flags (fails if it exists; --force replaces).",
                        no_args_is_help=True)
    group.command("server")(create_server)
    group.command("project")(create_project)
    token.add_command(group)
    app.add_typer(group, name="create", rich_help_panel="Resources")
