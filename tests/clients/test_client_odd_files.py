"""Files mcpctl cannot read or must not write get a message naming the file and what to do, a
non-zero exit code and no change: never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from client_files import Env
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


def deep_json(env: Env) -> Path:
    return env.write("cursor", '{"mcpServers": {}, "x": ' + "[" * 5000 + "]" * 5000 + "}\n")


def long_number(env: Env) -> Path:
    return env.write("cursor", '{"mcpServers": {}, "x": 1' + "0" * 5000 + "}\n")


def deep_toml(env: Env) -> Path:
    return env.write("codex", "x = " + "[" * 5000 + "]" * 5000 + "\n")


def array_of_tables(env: Env) -> Path:
    return env.write("codex", '[[mcp_servers]]\nname = "github"\ncommand = "npx"\n')


def symlink_loop(env: Env) -> Path:
    path = env.path("cursor")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(path.with_name("other.json"))
    path.with_name("other.json").symlink_to(path)
    return path


def read_only(env: Env) -> Path:
    path = env.write("cursor", '{"mcpServers": {}}\n')
    path.chmod(0o444)
    return path


CASES: dict[str, tuple[Callable[[Env], Path], str]] = {
    "json nested 5000 deep": (deep_json, "nested more than"),
    "json number of 5001 digits": (long_number, "too long"),
    "toml nested 5000 deep": (deep_toml, "nested too deep"),
    "codex [[mcp_servers]]": (array_of_tables, "array of tables"),
    "symlink loop": (symlink_loop, "symlink loop"),
    "read-only file": (read_only, "read-only"),
}


def snapshot(path: Path) -> bytes | str:
    return os.readlink(path) if path.is_symlink() else path.read_bytes()


@pytest.mark.parametrize("case", list(CASES))
def test_an_odd_file_gets_a_message_not_a_traceback(env: Env, case: str) -> None:
    make, words = CASES[case]
    path = make(env)
    before = snapshot(path)
    client = "codex" if path.suffix == ".toml" else "cursor"
    run("create", "project", "work")
    r = run("connect", client, "--project", "work")
    assert r.exit_code != 0 and isinstance(r.exception, SystemExit), r.output
    message, *hint = r.stderr.strip().splitlines()
    assert str(path) in message and words in r.stderr and hint, r.stderr      # what, which file, what next
    assert snapshot(path) == before
    for args in (("disconnect", client), ("import", client)):
        if case == "read-only file" and args[0] == "import":
            continue                                        # reading it is fine
        r = run(*args)
        assert r.exit_code != 0 and isinstance(r.exception, SystemExit), (args, r.output)
        assert str(path) in r.stderr, (args, r.stderr)
        assert snapshot(path) == before


def _unprivileged() -> list[str] | None:
    """A prefix that runs a command without root's power to ignore permissions (None: cannot)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--inh-caps=-all", "--bounding-set=-all"] if setpriv else None


def test_a_file_in_a_read_only_directory_gets_a_message_and_stays(env: Env) -> None:
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    path = env.write("cursor", '{"mcpServers": {}}\n')
    before = path.read_bytes()
    run("create", "project", "work")
    path.parent.chmod(0o555)
    try:
        r = subprocess.run([*prefix, sys.executable, "-m", "mcpctl", "connect", "cursor", "--project", "work"],
                           capture_output=True, text=True, timeout=120 * SLACK, check=False)
    finally:
        path.parent.chmod(0o755)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"cannot write {path}" in r.stderr and "chmod" in r.stderr, r.stderr
    assert path.read_bytes() == before
    assert run("disconnect", "cursor").exit_code == 3         # connect left no record behind


def test_an_immutable_file_gets_a_message_and_stays(env: Env) -> None:
    path = env.write("cursor", '{"mcpServers": {}}\n')
    before = path.read_bytes()
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i does not work here (needs root and a file system with attributes)")
    try:
        run("create", "project", "work")
        r = run("connect", "cursor", "--project", "work")
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)
    assert r.exit_code != 0 and isinstance(r.exception, SystemExit), r.output
    assert f"cannot write {path}" in r.stderr and "chattr -i" in r.stderr, r.stderr
    assert path.read_bytes() == before
    assert run("disconnect", "cursor").exit_code == 3
