"""The CLI must start fast: nothing heavy is imported just to parse a command line."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from ci_support import SLACK

HEAVY = ("mcp", "mcp_types", "pydantic", "httpx2", "uvicorn", "starlette", "anyio", "sqlite3")


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
            "print(sorted(m for m in sys.modules if m.startswith('mcpctl.cli.')), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK, check=True)
    loaded = r.stderr.strip().splitlines()[-1]
    assert "mcpctl.cli.get" in loaded and "mcpctl.cli.bakeoff" not in loaded and "mcpctl.cli.create" not in loaded, loaded
