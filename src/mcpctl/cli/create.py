"""`mcpctl create server|project NAME ...`: imperative creation (AlreadyExists without --force)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcpctl.errors import InvalidResource
from mcpctl.resources.apply import create_object
from mcpctl.resources.kinds import API_VERSION
from mcpctl.resources.store import Store
from mcpctl.resources.yamlio import Document

from ._common import cli_errors, complete_names, warn, write_stdout

create_app = typer.Typer(help="Create a server or a project from flags (fails if it exists; --force replaces).",
                         no_args_is_help=True)


def _pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise InvalidResource(f"{flag} {v!r}: expected KEY=VALUE", hint=f"for example {flag} API_KEY=${{env:API_KEY}}")
        out[key] = val
    return out


def _headers(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or []:
        if "=" in v:
            key, _, val = v.partition("=")
        elif ":" in v:
            key, _, val = v.partition(":")
        else:
            raise InvalidResource(f"--header {v!r}: expected NAME=VALUE or 'NAME: VALUE'",
                                  hint="for example --header 'Authorization=Bearer ${env:TOKEN}'")
        out[key.strip()] = val.strip()
    return out


# Validation speaks in manifest paths; on the command line the user typed flags.
_FLAGS = (
    ("spec.favouriteIndex.maxFavourites", "--max-favourites"),
    ("spec.favouriteIndex.tools", "--favourite"),
    ("spec.tools.disabled", "--disable"),
    ("spec.tools.enabled", "--enable"),
    ("spec.presentation", "--presentation"),
    ("spec.servers", "--server"),
    ("spec.timeouts.connect", "--connect-timeout"),
    ("spec.timeouts.call", "--call-timeout"),
    ("spec.url", "--url"),
    ("spec.env", "--env"),
    ("spec.headers", "--header"),
    ("spec.command", "the command"),
    ("metadata.labels", "--label"),
    ("metadata.name", "NAME"),
)


def _flag_message(text: str, src: str) -> str:
    text = text.replace(f"{src}, document 1, ", "").replace(f"{src}, document 1: ", "")
    for path, flag in _FLAGS:
        for sep in ("[", ".", ":", " "):
            text = text.replace(f"{path}{sep}", f"{flag}{' ' if sep == '.' else sep}")
    return text


def _create(doc_data: dict[str, Any], *, force: bool, allow_missing: bool = False) -> None:
    src = f"mcpctl create {doc_data['kind'].lower()}"
    doc = Document(source=src, index=1, data=doc_data)
    try:
        change, warnings = create_object(doc, Store(), force=force, allow_missing=allow_missing)
    except InvalidResource as e:
        raise InvalidResource(_flag_message(e.message, src), hint=e.hint) from None
    for w in warnings:
        warn(_flag_message(w, src))
    write_stdout(f"{change.ref} {change.action}\n")


@create_app.command("server")
@cli_errors
def create_server(
    name: Annotated[str, typer.Argument(help="Server name: lowercase letters, digits, '-'.")],
    command: Annotated[list[str] | None, typer.Argument(help="After --: the stdio command and its arguments.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Streamable HTTP endpoint (instead of a command).")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="HTTP header NAME=VALUE (repeatable).")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="Environment KEY=VALUE for the stdio server (repeatable). Use ${env:NAME} for secrets.")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working directory of the stdio server.")] = None,
    description: Annotated[str | None, typer.Option("--description", help="What this server is for.")] = None,
    connect_timeout: Annotated[float | None, typer.Option("--connect-timeout", help="Seconds to wait for the server to connect.")] = None,
    call_timeout: Annotated[float | None, typer.Option("--call-timeout", help="Seconds a tool call may take.")] = None,
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Label KEY=VALUE (repeatable).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the server if it exists.")] = False,
) -> None:
    """Register an upstream MCP server: `create server NAME -- CMD ARGS...` or `create server NAME --url URL`."""
    if url and command:
        raise InvalidResource("give either a command (after --) or --url, not both")
    if not url and not command:
        raise InvalidResource(f"server {name!r} needs a command or a URL",
                              hint=f"mcpctl create server {name} -- npx -y @modelcontextprotocol/server-memory, "
                              f"or mcpctl create server {name} --url http://127.0.0.1:8080/mcp")
    spec: dict[str, Any] = {}
    if url:
        spec.update(transport="http", url=url, headers=_headers(header))
        if env or cwd:
            raise InvalidResource("--env and --cwd are for stdio servers (a command after --), not --url")
    else:
        assert command
        spec.update(transport="stdio", command=command[0], args=command[1:], env=_pairs(env, "--env"))
        if cwd:
            spec["cwd"] = cwd
        if header:
            raise InvalidResource("--header is for HTTP servers (--url), not a stdio command")
    timeouts = {k: v for k, v in (("connect", connect_timeout), ("call", call_timeout)) if v is not None}
    if timeouts:
        spec["timeouts"] = timeouts
    if description:
        spec["description"] = description
    meta: dict[str, Any] = {"name": name}
    if label:
        meta["labels"] = _pairs(label, "--label")
    _create({"apiVersion": API_VERSION, "kind": "Server", "metadata": meta, "spec": spec}, force=force)


@create_app.command("project")
@cli_errors
def create_project(
    name: Annotated[str, typer.Argument(help="Project name: lowercase letters, digits, '-'.")],
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="A registered server (repeatable).",
                                                     autocompletion=complete_names("Server"))] = None,
    favourite: Annotated[list[str] | None, typer.Option("--favourite", help="Pin a favourite tool server/tool (repeatable).")] = None,
    favourite_index: Annotated[bool | None, typer.Option("--favourite-index/--no-favourite-index", help="Turn the favourite index on or off (on when favourites are given).")] = None,
    max_favourites: Annotated[int | None, typer.Option("--max-favourites", help="At most this many favourites (1-200).")] = None,
    disable: Annotated[list[str] | None, typer.Option("--disable", help="Disable tools: server/tool or a glob like github/delete_* (repeatable).")] = None,
    enable: Annotated[list[str] | None, typer.Option("--enable", help="Exceptions to --disable (repeatable).")] = None,
    presentation: Annotated[str | None, typer.Option("--presentation", help="flat | favourite-index | deferred")] = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Accept servers that are not registered yet.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace the project if it exists.")] = False,
) -> None:
    """Create a project: a set of servers with curation, favourites and presentation."""
    spec: dict[str, Any] = {"servers": list(server or [])}
    tools = {k: v for k, v in (("disabled", disable), ("enabled", enable)) if v}
    if tools:
        spec["tools"] = tools
    fav: dict[str, Any] = {}
    if favourite:
        fav["tools"] = favourite
        fav["enabled"] = True
    if favourite_index is not None:
        fav["enabled"] = favourite_index
    if max_favourites is not None:
        fav["maxFavourites"] = max_favourites
    if fav:
        spec["favouriteIndex"] = fav
    if presentation:
        spec["presentation"] = presentation
    if description:
        spec["description"] = description
    doc = {"apiVersion": API_VERSION, "kind": "Project", "metadata": {"name": name}, "spec": spec}
    _create(doc, force=force, allow_missing=allow_missing)


def register(app: typer.Typer) -> None:
    app.add_typer(create_app, name="create", rich_help_panel="Resources")
