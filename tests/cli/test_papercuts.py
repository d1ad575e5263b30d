"""Small things a new user trips over: exit codes of usage errors, help, where a failed edit goes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app

BIN = Path(sys.executable).parent


def test_plain_mcpctl_shows_help_and_succeeds() -> None:
    done = subprocess.run([str(BIN / "mcpctl")], capture_output=True, text=True, timeout=30 * SLACK)
    assert done.returncode == 0 and "Usage: mcpctl" in done.stdout


def test_a_bad_flag_value_is_a_usage_error(runner: CliRunner) -> None:
    for flag, value in (("--presentation", "list"), ("--names", "short"), ("--ranker", "gpt")):
        r = runner.invoke(app, ["create", "project", "p", flag, value], prog_name="mcpctl")
        assert r.exit_code == 2, (flag, r.output)
        assert flag in r.stderr and value in r.stderr
    r = runner.invoke(app, ["get", "servers", "-o", "xml"], prog_name="mcpctl")
    assert r.exit_code == 2


def test_help_shows_no_type_for_on_off_flags(runner: CliRunner) -> None:
    r = runner.invoke(app, ["create", "project", "--help"], prog_name="mcpctl", env={"COLUMNS": "200"})
    assert r.exit_code == 0
    gate = next(line for line in r.stdout.splitlines() if "--gate " in line or "--gate  " in line)
    assert "<bool>" not in gate and "<bool>" not in r.stdout
    assert "<str>" in r.stdout          # options that take a value still say what


def test_a_failed_edit_is_kept_in_a_private_file_and_named(runner: CliRunner, tmp_path: Path,
                                                           monkeypatch: object) -> None:
    r = runner.invoke(app, ["create", "project", "web"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    script = tmp_path / "ed.py"
    script.write_text("import sys,pathlib\np=pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('spec:\\n', 'spec:\\n  servrs: [a]\\n'))\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")  # type: ignore[attr-defined]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))      # type: ignore[attr-defined]  # kept here, even on a failure
    r = runner.invoke(app, ["edit", "project", "web"], prog_name="mcpctl")
    assert r.exit_code == 1 and "servrs" in r.stderr, r.output
    assert "\\x0a" not in r.stderr, r.stderr              # the hint's lines are lines (issue 32)
    kept = [line for line in r.stderr.splitlines() if "your edit is saved in" in line]
    assert len(kept) == 1 and kept[0].startswith("  your edit is saved in "), r.stderr
    saved = next(w for w in r.stderr.split() if "mcpctl-edit-project-web-" in w)
    path = Path(saved.rstrip(";,."))
    assert path.exists() and "servrs:" in path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    path.unlink()
