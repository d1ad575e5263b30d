"""The CLI must start fast: nothing heavy is imported just to parse a command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ci_support import SLACK

HEAVY = ("mcp", "mcp_types", "pydantic", "httpx2", "uvicorn", "starlette", "anyio", "sqlite3",
         "prometheus_client", "opentelemetry")


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = ("import sys, mcpctl.cli; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK, check=True)
    assert r.stdout.strip() == "", f"imported at CLI start: {r.stdout.strip()}"


def test_help_lists_the_verbs() -> None:
    r = subprocess.run([sys.executable, "-m", "mcpctl", "--help"], capture_output=True, text=True, timeout=60 * SLACK)
    assert r.returncode == 0
    for verb in ("get", "apply", "create", "delete", "describe", "diff"):
        assert verb in r.stdout


def _tree(cmd: Any) -> Any:
    """What a command line can meet of a command: its help, its parameters, its subcommands."""
    params = [(p.name, tuple(getattr(p, "opts", ())), p.required, repr(p.default), getattr(p, "help", None),
               repr(p.bare_type), p.nargs, p.multiple) for p in cmd.params]
    subs = {name: _tree(sub) for name, sub in getattr(cmd, "commands", {}).items()}
    return (cmd.help, cmd.short_help, cmd.hidden, params, subs)


def test_each_command_line_builds_only_the_module_that_holds_its_command() -> None:
    """`main()` builds the one module `_COMMANDS` names: that app holds exactly the commands the
    whole app has from it, identical down to every option."""
    import typer

    from mcpctl import cli

    whole = typer.main.get_command(cli._build_app())
    assert set(whole.commands) == set(cli._COMMANDS), "a command is missing from _COMMANDS, or gone"   # type: ignore[attr-defined]
    for module in set(cli._COMMANDS.values()):
        alone = typer.main.get_command(cli._build_app((module,)))
        assert set(alone.commands) == {c for c, m in cli._COMMANDS.items() if m == module}, module  # type: ignore[attr-defined]
        for name, cmd in alone.commands.items():  # type: ignore[attr-defined]
            assert _tree(cmd) == _tree(whole.commands[name]), name  # type: ignore[attr-defined]


def test_building_the_app_again_adds_no_command_twice() -> None:
    import typer

    from mcpctl import cli

    first, second = (_tree(typer.main.get_command(cli._build_app())) for _ in range(2))
    assert first == second


def test_a_command_line_imports_the_modules_of_its_command_only() -> None:
    code = ("import sys; sys.argv = ['mcpctl', 'get', 'servers']\n"
            "from mcpctl.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('prometheus_client', 'opentelemetry'))), file=sys.stderr)\n"
            "print(sorted(m for m in sys.modules if m.startswith('mcpctl.cli.')), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK, check=True)
    assert r.stderr.strip().splitlines()[-2] == "[]", "metrics or tracing imported by `mcpctl get servers`"
    loaded = r.stderr.strip().splitlines()[-1]
    assert "mcpctl.cli.get" in loaded and "mcpctl.cli.bakeoff" not in loaded and "mcpctl.cli.create" not in loaded, loaded


STORE = """\
apiVersion: mcpctl/v1
kind: Server
metadata: {name: memory}
spec: {command: npx, args: ["-y", "@modelcontextprotocol/server-memory"]}
---
apiVersion: mcpctl/v1
kind: Project
metadata: {name: web}
spec:
  servers: [memory]
  favouriteIndex: {enabled: true, tools: [memory/read_graph]}
  presentation: favourite-index
"""
SDK = ("mcp", "mcp_types", "pydantic", "pydantic_core", "numpy")


def _run_and_list(argv: list[str], modules: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """`mcpctl ARGV` in a fresh interpreter (`__complete ...`: what the shell runs on TAB), its
    stderr ending with a line `LOADED` followed by those of `modules` it imported."""
    env = dict(os.environ)
    if argv[:1] == ["__complete"]:
        env |= {"_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": "mcpctl " + " ".join(argv[1:]),
                "COMP_CWORD": str(len(argv) - 1)}
        argv = []
    code = ("import sys, atexit\n"
            f"atexit.register(lambda: print('LOADED', *[m for m in {modules!r} if m in sys.modules], file=sys.stderr))\n"
            f"sys.argv = ['mcpctl', *{argv!r}]\n"
            "from mcpctl.cli import main\n"
            "main()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60 * SLACK)


@pytest.mark.parametrize("argv", [
    ["get", "servers"], ["get", "projects", "-o", "yaml"], ["describe", "server", "memory"],
    ["favourites", "list", "--project", "web"], ["--help"], ["get", "--help"], ["--version"],
    ["__complete", "get", ""],
], ids=lambda a: " ".join(a))
def test_commands_that_read_the_store_import_no_sdk(argv: list[str], tmp_path: Path) -> None:
    """Reading and printing the store, help, completion and the version import neither the MCP SDK
    nor pydantic (typer would, to coerce option values: `cli._coerce_without_pydantic`)."""
    manifest = tmp_path / "store.yaml"
    manifest.write_text(STORE)
    subprocess.run([sys.executable, "-m", "mcpctl", "apply", "-f", str(manifest)], check=True,
                   capture_output=True, timeout=60 * SLACK)
    from mcpctl.catalogue.cache import FilesCache  # listed before: read from the cache

    FilesCache().write_server_entry("memory", {"tools": [{"name": "read_graph", "description": "Read the whole graph",
                                             "inputSchema": {"type": "object"}}]})
    r = _run_and_list(argv, SDK)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip(), "printed nothing"
    loaded = [line for line in r.stderr.splitlines() if line.startswith("LOADED")]
    assert loaded == ["LOADED"], f"{argv}: {loaded}"


def test_the_roots_stand_ins_are_the_commands_as_the_root_shows_them() -> None:
    """`cli._SUMMARIES` (what `--help` and completing a command's name show, without building the
    commands) is the whole app's: names in order, panels, first paragraphs, short helps, hidden."""
    import typer
    from typer.models import DefaultPlaceholder

    from mcpctl import cli

    whole = typer.main.get_command(cli._build_app())
    got = []
    for name, cmd in whole.commands.items():  # type: ignore[attr-defined]
        panel = cmd.rich_help_panel
        assert not cmd.deprecated, name
        got.append((name, panel.value if isinstance(panel, DefaultPlaceholder) else panel,
                    None if cmd.short_help else (cmd.help or "").split("\n\n")[0], cmd.short_help, cmd.hidden))
    assert tuple(got) == cli._SUMMARIES, f"paste into cli/__init__.py:\n{got}"


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_roots_help_and_a_names_completion_are_the_whole_apps(columns: str) -> None:
    from typer.testing import CliRunner

    from mcpctl import cli

    runner = CliRunner()
    whole, stand_ins = cli._build_app(), cli._stand_ins()
    for argv, env in [(["--help"], {}), (["--bogus"], {}), (["gte"], {}),
                      ([], {"_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": "mcpctl ", "COMP_CWORD": "1"}),
                      ([], {"_MCPCTL_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "mcpctl d"})]:
        env |= {"COLUMNS": columns}
        a, b = (runner.invoke(app, argv, prog_name="mcpctl", env=env) for app in (whole, stand_ins))
        assert (a.exit_code, a.output) == (b.exit_code, b.output), argv
        assert a.output.strip(), argv


LIGHT = ("typer", "rich", "mcpctl.cli.get", "mcpctl.cli.tools", "rich.markdown", "markdown_it", "rich.traceback",
         "pygments")


@pytest.mark.parametrize(("argv", "absent"), [
    (["--version"], LIGHT), (["--help"], LIGHT[2:]), ([], LIGHT[2:]), (["gte"], LIGHT[2:4]),
    (["get", "--help"], (*LIGHT[3:], "ruamel.yaml")), (["tools", "--help"], ("mcpctl.cli.get", "mcpctl.cli.create", "mcpctl.resources.apply", *LIGHT[4:])),
    (["__complete", ""], LIGHT[2:]), (["__complete", "get", ""], ("rich.markdown", "mcpctl.cli.tools", "ruamel.yaml", "mcpctl.presentation.resources")),
], ids=lambda a: " ".join(a) if a and isinstance(a[0], str) and a[0].startswith(("-", "_", "g")) else None)
def test_help_version_and_completion_import_only_what_they_show(argv: list[str], absent: tuple[str, ...]) -> None:
    """The root's help and completing a command's name build no command (`cli._SUMMARIES`); a help does
    not import what typer's rich helpers load for markdown help and tracebacks (`_help.rich_utils`),
    nor, for `get`, the YAML library; `--version` imports neither typer nor rich."""
    r = _run_and_list(argv, absent)
    assert r.stdout.strip() or "No such command" in r.stderr, r.stderr
    assert [line for line in r.stderr.splitlines() if line.startswith("LOADED")] == ["LOADED"], r.stderr


def test_typers_rich_helpers_load_what_they_deferred_on_first_use() -> None:
    code = ("import sys\n"
            "from mcpctl.cli import _help\n"
            "ru = _help.rich_utils()\n"
            "assert 'rich.markdown' not in sys.modules and 'rich.traceback' not in sys.modules\n"
            "from rich.markdown import Markdown\n"
            "from rich.traceback import Traceback\n"
            "assert isinstance(ru._make_rich_text(text='*x*', markup_mode='markdown'), Markdown)\n"
            "from typer.models import DeveloperExceptionConfig\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n"
            "    assert isinstance(ru.get_traceback(e, DeveloperExceptionConfig(), []), Traceback)\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK)
    assert r.stdout.strip() == "ok", r.stderr
