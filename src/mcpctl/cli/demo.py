"""`mcpctl demo`: the main job end to end on the bundled example servers.

Registers the example servers (notes, calc, textkit) and a `demo` project in the store, exactly
as examples/*.yaml declare them (three pinned favourites, favourite-index presentation, a
`writer` profile), starts the real gateway (`mcpctl serve --project demo`) as a subprocess,
connects to it with the official MCP client, lists and calls tools through it, and prints a
short report: the favourites listed first with the instruction the client received, the calls,
the invocation log rows the run produced, and the favourites `mcpctl favourites suggest` draws
from them. Only the report goes to stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from mcpctl.catalogue.favourites import Floor

from ._common import cli_errors, err, out

PROJECT = "demo"
EXAMPLE_SERVERS = ("notes", "calc", "textkit")
# The demo's one short session is all the log holds: it suggests from any call (by default
# `favourites suggest` wants 3 calls in 2 sessions, --min-calls and --min-sessions).
DEMO_FLOOR = Floor(calls=1, sessions=1)
OWNER_LABEL = ("source", "mcpctl-examples")
DISABLED = "notes/delete_note"
FAVOURITES = ("notes/create_note", "notes/search_notes", "calc/add")
# A credential view the README's tokens use: reads everything, and may add a note.
WRITER = {"readOnly": True, "allow": ["notes/create_note"]}
# The tools the demo calls; the gateway must list them before the calls start.
NEEDED = ("notes/create_note", "notes/search_notes", "calc/add", "textkit/slugify")
_PASS_ENV = ("MCPCTL_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


# (call timeout, description) per server: the same as examples/servers.yaml.
_SERVERS = {
    "notes": (30, "A personal notes store (create, list, read, search, update, delete notes)"),
    "calc": (60, "Arithmetic, statistics, unit conversion and a slow tool that reports progress"),
    "textkit": (30, "Text utilities (word count, slugify, regex search, diff, hash, echo)"),
}


def demo_documents() -> list[dict[str, Any]]:
    """The Server and Project objects the demo registers: exactly examples/servers.yaml and
    examples/project.yaml (tests/examples pins it), so that applying those manifests after the
    demo, as the README's first session does, changes nothing. `mcpctl example-server NAME` is
    found on PATH or next to the Python running the gateway, so they work from an unactivated venv."""
    labels = {OWNER_LABEL[0]: OWNER_LABEL[1]}
    docs: list[dict[str, Any]] = []
    for name in EXAMPLE_SERVERS:
        call, description = _SERVERS[name]
        docs.append({
            "apiVersion": "mcpctl/v1", "kind": "Server",
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"transport": "stdio", "command": "mcpctl", "args": ["example-server", name],
                     "timeouts": {"connect": 30, "call": call}, "description": description},
        })
    docs.append({
        "apiVersion": "mcpctl/v1", "kind": "Project",
        "metadata": {"name": PROJECT, "labels": dict(labels)},
        "spec": {
            "description": "The bundled example servers, curated",
            "servers": list(EXAMPLE_SERVERS),
            "tools": {"disabled": [DISABLED]},
            "favouriteIndex": {"enabled": True, "tools": list(FAVOURITES), "maxFavourites": 15},
            "presentation": "favourite-index",
            "names": {"style": "portable", "maxLength": 48},
            "profiles": {"writer": dict(WRITER)},
            "search": {"enabled": True, "ranker": "bm25", "topK": 5, "recordQueries": True},
        },
    })
    return docs


@contextlib.contextmanager
def _home(home: Path | None) -> Iterator[None]:
    """Point mcpctl (this process and the gateway) at `home` for the duration of the demo."""
    if home is None:
        yield
        return
    old = os.environ.get("MCPCTL_HOME")
    os.environ["MCPCTL_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MCPCTL_HOME", None)
        else:
            os.environ["MCPCTL_HOME"] = old


def register_demo(store: Any) -> list[str]:
    """Apply the demo objects; refuse to overwrite same-named objects the demo did not create."""
    from mcpctl.errors import Conflict
    from mcpctl.resources.apply import apply_documents
    from mcpctl.resources.yamlio import Document

    data = demo_documents()
    for d in data:
        live = store.find(d["kind"], d["metadata"]["name"])
        labels = ((live or {}).get("metadata") or {}).get("labels") or {}
        if live is not None and labels.get(OWNER_LABEL[0]) != OWNER_LABEL[1]:
            ref = f"{d['kind'].lower()}/{d['metadata']['name']}"
            raise Conflict(f"{ref} already exists and was not created by mcpctl demo; leaving it alone",
                           hint="run the demo in a separate store: mcpctl demo --home /tmp/mcpctl-demo")
    docs = [Document("mcpctl demo", i + 1, d) for i, d in enumerate(data)]
    changes, warnings = apply_documents(docs, store)
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {w}")
    return [f"{c.ref} {c.action}" for c in changes]


@dataclass
class Step:
    title: str
    ok: bool
    detail: str


@dataclass
class Session:
    protocol: str = ""
    server: str = ""
    instructions: str = ""
    tools: list[Any] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def resolve_name(names: list[str], canonical_id: str) -> str:
    """The presented name of `canonical_id` in a listing, whatever the presentation mode."""
    server, _, tool = canonical_id.partition("/")
    preferred = (f"{server}__{tool}", f"favourite__{tool}", f"all__{server}__{tool}",
                 canonical_id, f"favourite/{tool}", f"all/{server}/{tool}")
    for name in preferred:
        if name in names:
            return name
    loose = [n for n in names if server in n and tool in n]
    return min(loose, key=len) if loose else canonical_id


def _text(result: Any) -> str:
    parts = [getattr(c, "text", f"<{getattr(c, 'type', '?')}>") for c in result.content]
    return "\n".join(parts)


def _short(text: str, n: int = 90) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


async def run_session(timeout: float, errlog_path: Path, protocol: str = "auto") -> Session:
    """Start the gateway, wait for the example tools, make the demo calls."""
    import anyio
    import mcp.types as t
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from mcpctl import __version__

    env = {k: os.environ[k] for k in _PASS_ENV if os.environ.get(k)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpctl", "serve", "--project", PROJECT],
                                   env=env or None)
    s = Session()
    from mcpctl import paths

    paths.private_dir(errlog_path.parent)
    with open(errlog_path, "w", encoding="utf-8", opener=paths.open_private) as errlog, anyio.fail_after(timeout):
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=timeout, mode=protocol,
                          client_info=t.Implementation(name="mcpctl-demo", version=__version__)) as c:
            s.protocol = c.protocol_version
            s.instructions = c.instructions or ""
            info = c.server_info
            s.server = f"{info.name} {info.version}" if info else "?"
            names: list[str] = []
            # Upstreams connect in the background; the first listing may come from an empty cache.
            while True:
                s.tools = list((await c.list_tools(cache_mode="refresh")).tools)
                names = [tool.name for tool in s.tools]
                if all(resolve_name(names, cid) in names for cid in NEEDED):
                    break
                await anyio.sleep(0.25)

            async def call(label: str, name: str, args: dict[str, Any], *, expect_error: bool = False) -> Any:
                t0 = time.perf_counter()
                try:
                    result = await c.call_tool(name, args)
                except MCPError as e:
                    s.steps.append(Step(f"{label}: {name}", False, f"error {e.code}: {e.message}"))
                    return None
                ms = (time.perf_counter() - t0) * 1000
                shown = json.dumps(args, ensure_ascii=False)
                s.steps.append(Step(f"{label}: {name} {_short(shown, 60)}", bool(result.is_error) == expect_error,
                                    f"{_short(_text(result))}  ({ms:.1f} ms)"))
                return result

            note = await call("Write a note", resolve_name(names, "notes/create_note"),
                              {"title": "Try mcpctl", "body": "Register MCP servers once, group them into "
                               "projects, serve one curated catalogue.", "tags": ["demo"]})
            await call("Search notes", resolve_name(names, "notes/search_notes"), {"query": "curated catalogue"})
            await call("Add numbers", resolve_name(names, "calc/add"), {"a": 19, "b": 23})
            await call("Make a slug", resolve_name(names, "textkit/slugify"), {"text": "One catalogue, many servers!"})
            if "search_tools" in names:
                found = await call("Search the catalogue", "search_tools", {"query": "take a note", "top_k": 3})
                hits = ((found.structured_content or {}).get("tools") or []) if found is not None else []
                if hits:
                    s.steps[-1].detail = ", ".join(f"{h['name']} ({h['score']:.2f})" for h in hits) + \
                        "  " + s.steps[-1].detail.rsplit("  ", 1)[-1]
                # An agent reads the returned schemas and calls the first tool it has arguments for.
                args = {"title": "Found through search_tools", "body": "The agent searched, then called."}
                fits = [h["name"] for h in hits
                        if set((h.get("inputSchema") or {}).get("required") or ()) <= set(args)
                        and set(args) <= set((h.get("inputSchema") or {}).get("properties") or {})]
                if fits:
                    await call("Call the first result that fits", fits[0], args)
            await call("Call a disabled tool (refused)", DISABLED, {"id": str(_note_id(note) or 1)},
                       expect_error=True)
    return s


def _note_id(result: Any) -> str | None:
    if result is None or result.is_error:
        return None
    with contextlib.suppress(ValueError, TypeError, KeyError):
        return str(json.loads(_text(result))["id"])
    return None


def _unwrap(e: BaseException) -> BaseException:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def print_report(home_note: str, registered: list[str], s: Session, rows: list[Any], pairs: list[tuple[str, str]],
                 log_path: Path, suggested: tuple[Any, str | None] | None = None, kept: bool = True) -> None:
    from rich.markup import escape
    from rich.table import Table

    from .logs import render_table

    out.print(f"[bold]mcpctl demo[/bold]  {escape(home_note)}")
    out.print("\n[bold]1. Registered[/bold] the example servers and project 'demo'")
    for line in registered:
        out.print(f"   {escape(line)}")
    out.print(f"\n[bold]2. Started the gateway[/bold] ({escape(sys.executable)} -m mcpctl serve --project demo): "
              f"{escape(s.server)}, protocol {escape(s.protocol)}")
    favs = [t.name for t in s.tools if t.name.startswith("favourite")]
    rest = [t.name for t in s.tools if t.name.startswith("all")]
    out.print(f"\n[bold]3. The agent sees {len(s.tools)} tools[/bold]: {len(favs)} favourites first, mcpctl's "
              f"search_tools, then all {len(rest)} enabled tools under all__<server>__<tool> "
              f"({DISABLED} is disabled in the project)")
    out.print(f"   Instructions it received: {escape(s.instructions)}")
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("NAME")
    table.add_column("RO", justify="center")
    table.add_column("DESCRIPTION")
    for t in s.tools:
        ann = t.annotations
        ro = "-" if ann is None or ann.read_only_hint is None else ("yes" if ann.read_only_hint else "no")
        table.add_row(escape(t.name), ro, escape(_short(t.description or "", 70)))
    out.print(table)
    out.print("\n[bold]4. Calls through the gateway[/bold]")
    for step in s.steps:
        mark = "[green]✓[/green]" if step.ok else "[red]✗[/red]"
        out.print(f" {mark} {escape(step.title)}\n     → {escape(step.detail)}")
    out.print(f"\n[bold]5. Invocation log[/bold] ({escape(str(log_path))}): {len(rows)} rows from this run")
    if rows:
        out.print(render_table(rows))
    for q, cid in pairs:
        out.print(escape(f"   search {q!r} was followed by a call to {cid}"))
    if suggested is not None:
        from ._suggest import render_suggest

        out.print("\n[bold]6. Favourites from this run's calls[/bold] (mcpctl favourites suggest --project demo)")
        render_suggest(PROJECT, suggested[0], "in this run", DEMO_FLOOR, 5)
        if suggested[1]:
            out.print("   To make them the favourites (nothing else changes):")
            out.print(f"   {escape(suggested[1])}")
    if kept:
        out.print("\nNext: [bold]mcpctl serve --project demo[/bold] from your agent's MCP config, "
                  "[bold]mcpctl favourites list --project demo[/bold], [bold]mcpctl logs --project demo[/bold]")
    else:
        out.print("\nNext: register your own servers (mcpctl create server NAME -- CMD …) and a project "
                  "(mcpctl create project P --server NAME --favourite NAME/TOOL), then mcpctl serve --project P")


EXAMPLE_SERVERS = ("notes", "calc", "textkit")


def register(app: typer.Typer) -> None:
    @app.command("example-server", hidden=True,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def example_server(
        ctx: typer.Context,
        name: Annotated[str, typer.Argument(help="notes | calc | textkit")],
    ) -> None:
        """Run one of the bundled example MCP servers over stdio (what examples/servers.yaml registers).

        Same as `python -m mcpctl.examples.NAME`, but found wherever `mcpctl` is: the gateway looks
        commands up on PATH and next to the Python running it, so this works from an unactivated venv.
        """
        import importlib

        from mcpctl import heap

        if name not in EXAMPLE_SERVERS:
            raise typer.BadParameter(f"{name!r} is not one of: {', '.join(EXAMPLE_SERVERS)}", param_hint="NAME")
        heap.start()                # the SDK's import without collections; the server settles (heap.py)
        importlib.import_module(f"mcpctl.examples.{name}").main(list(ctx.args))

    @app.command("demo", rich_help_panel="Getting started")
    @cli_errors
    def demo(
        home: Annotated[Path | None, typer.Option(
            "--home", help="Use this directory as MCPCTL_HOME (a separate store) instead of your own.")] = None,
        keep: Annotated[bool, typer.Option(
            "--keep/--cleanup", help="Keep the demo servers and project registered afterwards (default), "
            "or delete them at the end.")] = True,
        timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds to allow the whole run.")] = 90.0,
        protocol: Annotated[str, typer.Option(
            "--protocol", help="How the demo client connects: auto (2026-07-28 server/discover, as Claude Code "
            "does, falling back to the handshake) or legacy (the initialize handshake).")] = "auto",
    ) -> None:
        """See mcpctl work end to end on its bundled example servers.

        Registers the example servers and a 'demo' project, starts the real gateway, calls tools through it with the official MCP client, and shows the resulting invocation log.
        """
        import importlib.util

        import anyio

        from mcpctl import paths
        from mcpctl.audit.log import InvocationLog
        from mcpctl.errors import MCPCtlError, UpstreamError
        from mcpctl.resources.store import Store

        if protocol not in ("auto", "legacy"):
            raise typer.BadParameter(f"{protocol!r} is not one of: auto, legacy", param_hint="'--protocol'")
        if importlib.util.find_spec("mcpctl.cli.serve") is None:
            raise MCPCtlError("the gateway (mcpctl serve) is not part of this build yet",
                              hint="update mcpctl; the demo starts `mcpctl serve --project demo`")
        with _home(home.expanduser().resolve() if home else None):
            store = Store(paths.resources_dir())      # the demo's own files, whatever the database
            registered = register_demo(store)
            started = time.time()
            errlog = paths.log_dir() / "demo-gateway.stderr"
            try:
                session = anyio.run(run_session, timeout, errlog, protocol)
            except Exception as e:   # the SDK raises (nested) exception groups
                inner = _unwrap(e)
                why = "timed out" if isinstance(inner, TimeoutError) else f"{type(inner).__name__}: {inner}"
                tail = _tail(errlog)
                raise UpstreamError(f"the demo gateway failed: {why}",
                                    hint=(f"gateway stderr ({errlog}):\n{tail}" if tail else f"see {errlog}")) from None
            with InvocationLog() as log:
                rows = log.query(project=PROJECT, since=started)
                pairs = log.search_pairs(PROJECT, since=started)
                log_path = log.path
            from mcpctl.presentation.favourites import set_command, suggestions

            from ._common import invocation_log, the_store

            with invocation_log() as log:
                found, _, _ = suggestions(PROJECT, the_store(), log, 5, started, DEMO_FLOOR)
            line = set_command(PROJECT, found.suggested) if found.suggested else None
            note = f"(MCPCTL_HOME={os.environ['MCPCTL_HOME']})" if os.environ.get("MCPCTL_HOME") \
                else f"(store: {paths.resources_dir()})"
            print_report(note, registered, session, rows, pairs, log_path, (found, line), kept=keep)
            if not keep:
                for d in reversed(demo_documents()):
                    with contextlib.suppress(MCPCtlError):
                        store.delete(d["kind"], d["metadata"]["name"])
                err.print("Removed the demo servers and project (--cleanup).")
