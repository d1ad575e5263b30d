"""Shell completion: the checked-in scripts are current, and names complete dynamically."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app


def test_completion_scripts_are_current(repo: Path) -> None:
    r = subprocess.run([sys.executable, str(repo / "scripts" / "gen_completions.py"), "--check"],
                       capture_output=True, text=True, timeout=60 * SLACK)
    assert r.returncode == 0, r.stderr


def _setup(runner: CliRunner) -> None:
    for name in ("alpha", "beta"):
        assert runner.invoke(app, ["create", "server", name, "--", "cmd"]).exit_code == 0
    assert runner.invoke(app, ["create", "project", "web", "--server", "alpha"]).exit_code == 0


def test_bash_completes_resource_names(runner: CliRunner) -> None:
    _setup(runner)
    env = {"_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": "mcpctl get server a", "COMP_CWORD": "3"}
    r = runner.invoke(app, [], prog_name="mcpctl", env=env)
    assert r.stdout.split() == ["alpha"]


def test_zsh_completes_kinds_and_fish_completes_projects(runner: CliRunner) -> None:
    _setup(runner)
    r = runner.invoke(app, [], prog_name="mcpctl",
                      env={"_MCPCTL_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "mcpctl get pro"})
    assert '"project"' in r.stdout and '"projects"' in r.stdout and "server" not in r.stdout
    r = runner.invoke(app, [], prog_name="mcpctl",
                      env={"_MCPCTL_COMPLETE": "complete_fish", "_TYPER_COMPLETE_FISH_ACTION": "get-args",
                           "_TYPER_COMPLETE_ARGS": "mcpctl describe project w"})
    assert r.stdout.startswith("web\tproject web")
