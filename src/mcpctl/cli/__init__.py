"""The mcpctl command line: one module per verb group; the only code importing typer or rich.

Each verb module exposes `register(app)`, which builds its groups afresh (an app can be built
more than once in a process). Modules must not import `mcp` (or anything that does) at import
time: shell completion runs this program on every TAB.

The whole typer app is built on first use (`from mcpctl.cli import app`). `main()` builds only
the module of the command its command line names (`_COMMANDS`); the root's help and the
completion of a command's name get stand-ins of the commands (`_SUMMARIES`), and a command line it
cannot tell the whole app. It runs a plain `mcpctl serve --project P ...` without
typer at all: the gateway is a long-lived process, and typer, rich and the other verbs would stay
resident for nothing (`serve.lean_main`; anything it does not recognise, `--help` included, goes
to the typer command as before).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from mcpctl import __version__

if TYPE_CHECKING:
    import typer

# Order is the order of `mcpctl --help`.
_VERB_MODULES = (
    "get", "describe", "create", "apply", "diff", "delete", "edit",
    "serve", "login", "tools", "favourites", "surface", "logs", "eval", "ask", "bakeoff", "demo", "import_cmd",
    "connect", "doctor", "db",
)
# The module that builds each top-level command. A command line naming one builds only that module
# (`main`): typer builds every parameter of every command it is given, 0.1 s of the 0.43 s CPU a
# `mcpctl get servers` took with all 42. tests/cli/test_startup.py checks it against the whole app.
_COMMANDS: dict[str, str] = {
    **{m: m for m in _VERB_MODULES if m != "import_cmd"},
    "import": "import_cmd", "logout": "login", "example-server": "demo", "disconnect": "connect",
}
# What the root's help and completing a command's name show of each (`_stand_ins`): name, panel, help
# (its first paragraph), short help, hidden, in the whole app's order. test_startup.py checks it.
_SUMMARIES: tuple[tuple[str, str | None, str | None, str | None, bool], ...] = (
    ('get', 'Resources', 'Show resources: a table, or their full YAML/JSON (which `apply -f -` accepts back).', None, False),
    ('describe', 'Resources', 'Show one object in detail, with its observed status and what uses it.', None, False),
    ('apply', 'Resources', 'Create or update resources from YAML/JSON manifests. All documents are validated first: one bad document changes nothing.', None, False),
    ('diff', 'Resources', 'Show how the manifests differ from what is stored. Exit 0: same, 1: different, 2 or more: error.', None, False),
    ('delete', 'Resources', 'Delete resources. A server that a project uses is kept unless --force.', None, False),
    ('edit', 'Resources', 'Edit an object in $VISUAL / $EDITOR; it is validated and applied when you save.', None, False),
    ('serve', 'Gateway', "Serve a project's curated catalogue as one MCP server.", None, False),
    ('login', 'Servers', 'Sign in to a remote server (OAuth 2.1 + PKCE); a running gateway picks the tokens up.', None, False),
    ('logout', 'Servers', "Forget a server's tokens and client registration.", None, False),
    ('surface', 'Gateway', None, "Price and judge a project's tool surface: tokens, write reach, look-alikes, use.", False),
    ('eval', 'Catalogue', 'Score a search ranker: R@1, R@5, R@10, MRR@10, nDCG@10 and C@10 per dataset.', None, False),
    ('ask', 'Catalogue', "Ask what the project's servers know: the passages of their text resources that the ask\nbuilt-in would give an agent, best first, with URIs and scores, and the answer of the\nproject's model when its spec sets ask.model (else no model is asked).", None, False),
    ('example-server', None, 'Run one of the bundled example MCP servers over stdio (what examples/servers.yaml registers).', None, True),
    ('demo', 'Getting started', 'See mcpctl work end to end on its bundled example servers.', None, False),
    ('import', 'Getting started', 'Import the MCP servers a client already has (each entry becomes a server).', None, False),
    ('connect', 'Getting started', 'Point a client at the gateway: write its mcpctl entry.', None, False),
    ('disconnect', 'Getting started', 'Undo mcpctl connect: remove the gateway entry, put back the entries it replaced.', None, False),
    ('doctor', 'Getting started', 'Check the install, every server and every project, and say what to fix.', None, False),
    ('create', 'Resources', 'Create a server or a project from flags (fails if it exists; --force replaces).', None, False),
    ('tools', 'Gateway', "A project's tool catalogue: list it, enable or disable tools.", None, False),
    ('favourites', 'Gateway', "A project's favourite tools: list, pin, unpin, and suggest them from real use.", None, False),
    ('logs', 'Evidence', 'Show the invocation log: one row per tool call the gateway routed (never arguments or results).', None, False),
    ('bakeoff', 'Catalogue', "Measure what each presentation does to a model's choice of tool: drive it through the real gateway under each presentation and report first pick, wander, success, tokens, turns and time with 95 % intervals (docs/bakeoff.md).", None, False),
    ('db', None, 'The team database (PostgreSQL): migrate its schema, show its status, copy a store into or out of it.', None, False),
)

_app: typer.Typer | None = None
_flag_url: str | None = None        # `--database-url`, which main() takes out of argv


def _quiet_flag_types() -> None:
    """typer prints a `<bool>` type next to every on/off flag in --help, as if it took a value."""
    from typer.core import TyperOption

    if getattr(TyperOption, "_mcpctl_quiet_flags", False):
        return
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    TyperOption._mcpctl_quiet_flags = True  # type: ignore[attr-defined]


def _coerce_without_pydantic() -> None:
    """typer (0.29) coerces every parameter's value with a pydantic TypeAdapter built at its first
    use, the value None (an option not given) and a plain string included: importing pydantic cost
    a `mcpctl get servers` 0.1-0.2 s of its 0.3-0.5 s CPU. Here an option not given and a string
    for a `str` parameter (no parser) pass as they are, exactly what the adapter returns for them;
    any other value still gets typer's own coercion, built as before (tests/cli/test_startup.py)."""
    from dataclasses import dataclass

    from typer import _coercion, core

    param = core._TyperParameter
    if getattr(param, "_mcpctl_lazy_coercion", False):
        return

    @dataclass(frozen=True)
    class Lazy(_coercion.RuntimeParam):
        descriptor: _coercion.TypeDescriptor

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, str) and self.annotation is str and self.parameter_info.parser is None:
                return value
            return _coercion.build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: core._TyperParameter) -> _coercion.RuntimeParam:
        if self._runtime_param is None:
            d = self.type_descriptor
            self._runtime_param = (Lazy(d.parameter_info, d.annotation, d) if d.file_annotation is None
                                   else _coercion.build_runtime_param(d))
        return self._runtime_param

    param.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    param._mcpctl_lazy_coercion = True  # type: ignore[attr-defined]


def _build_app(modules: tuple[str, ...] = _VERB_MODULES) -> typer.Typer:
    """The app with the commands of `modules` (all of them by default)."""
    import typer

    _quiet_flag_types()
    _coerce_without_pydantic()
    from mcpctl.cli import _help

    _help.install()

    app = typer.Typer(
        name="mcpctl",
        help="Register MCP servers once, group them into projects, and serve each project as one "
        "curated, searchable catalogue.",
        no_args_is_help=True,
        pretty_exceptions_show_locals=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"mcpctl {__version__}")
            raise typer.Exit()

    def _root(
        ctx: typer.Context,
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
        database_url: str | None = typer.Option(
            None, "--database-url", metavar="URL",
            help="Keep the store in this PostgreSQL database (postgresql://...); overrides "
                 "MCPCTL_DATABASE_URL and the database.url setting. Before the verb."),
    ) -> None:
        """mcpctl: one curated, searchable MCP catalogue for coding agents."""
        from mcpctl import heap

        heap.settle()                         # the command runs with the collector on
        from mcpctl.cli import _storage

        if database_url is not None:          # main() takes it out of argv; this is for app([...]) callers
            from mcpctl.db.config import check_flag

            database_url = check_flag(database_url)
        _storage.open_storage(database_url or _flag_url)     # the command line's storage, opened once
        ctx.call_on_close(_storage.close)

    _root.__annotations__["ctx"] = typer.Context     # (typer is imported here only: its name, resolved)
    app.callback()(_root)

    for name in modules:
        try:
            mod = importlib.import_module(f"mcpctl.cli.{name}")
        except ModuleNotFoundError as e:   # a verb module not written yet
            if e.name != f"mcpctl.cli.{name}":
                raise
            continue
        mod.register(app)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        global _app
        if _app is None:
            _app = _build_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _completing_in() -> str | None:
    """The module of the command a completion is for (`mcpctl get <TAB>`: get's), "" when the
    command's own name is being completed, None when it cannot be told (the whole app answers)."""
    if "COMP_WORDS" in os.environ:           # bash: the words and the index of the one completed
        words = os.environ["COMP_WORDS"].split()
        try:
            done = int(os.environ.get("COMP_CWORD", "")) > 1
        except ValueError:
            return None
    else:                                    # zsh, fish, powershell: the line up to the cursor
        line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
        words = line.split()
        done = len(words) > 2 or (len(words) == 2 and line[-1:].isspace())
    if not done:
        return ""
    return _COMMANDS.get(words[1]) if len(words) > 1 else None


def _stand_ins() -> typer.Typer:
    """The root with a parameterless stand-in of each command: its help, completing a name."""
    app = _build_app(())
    for name, panel, help_text, short_help, hidden in _SUMMARIES:
        app.command(name, help=help_text, short_help=short_help, rich_help_panel=panel, hidden=hidden)(lambda: None)
    return app


def _complete() -> None:
    """What the shell runs on TAB (the words are in the environment); zsh, fish and powershell
    show help text too, which rich renders (`_help.rich_utils`)."""
    if not os.environ["_MCPCTL_COMPLETE"].endswith("bash"):
        importlib.import_module("mcpctl.cli._help").rich_utils()
    module = _completing_in()
    (_stand_ins() if module == "" else _build_app((module,)) if module else __getattr__("app"))(prog_name="mcpctl")


def main() -> None:
    from mcpctl import heap

    heap.start()            # the collector is off until the command line is parsed (heap.py)
    argv = sys.argv[1:]
    url = None
    if any(a.startswith("--database-url") for a in argv):
        from mcpctl.db.config import take_flag
        from mcpctl.errors import MCPCtlError

        try:
            argv, url = take_flag(argv)
        except MCPCtlError as e:
            print(f"error: {e.message}" + (f"\n  {e.hint}" if e.hint else ""), file=sys.stderr)
            sys.exit(2)
        sys.argv[1:] = argv
    global _flag_url
    _flag_url = url                  # for the root callback, which opens the command line's storage
    if argv[:1] == ["serve"]:        # `serve --shared`: a stdlib-only relay (mcpctl.share), which exits here
        from mcpctl.share.relay import route
        argv = route(argv, importlib.import_module("mcpctl.cli.serve").parse_lean, url)
    if os.environ.get("_MCPCTL_COMPLETE"):   # a TAB: the shell runs `mcpctl` with no arguments
        _complete()
        return
    if not argv:                     # plain `mcpctl`: the help, and success (click would exit 2)
        _stand_ins()(["--help"], prog_name="mcpctl")
        return
    if argv[:1] == ["serve"]:
        from mcpctl.cli import serve
        from mcpctl.cli._storage import open_storage

        if serve.lean_main(argv[1:], open_storage(url)):    # the gateway's storage, opened here once
            return
    if argv == ["--version"]:                # what the root's eager --version prints, without typer
        print(f"mcpctl {__version__}")
        sys.exit(0)                          # as typer exits after an eager option
    elif (module := _COMMANDS.get(argv[0])) is not None:
        _build_app((module,))(prog_name="mcpctl")
    elif not any(a in _COMMANDS for a in argv):     # the root's help, a misspelt command
        _stand_ins()(prog_name="mcpctl")
    else:                                   # a command after something else (`--help get`)
        __getattr__("app")(prog_name="mcpctl")
