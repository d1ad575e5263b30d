"""`mcpctl serve` parses a plain command line without typer; everything else goes to typer.

(click itself is loaded anyway, by uvicorn through the mcp SDK.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gwkit import SRC_ENV

from ci_support import SLACK
from mcpctl.cli.serve import OPTIONS, parse_lean


def test_plain_command_lines_parse_without_typer() -> None:
    limits = {"header_timeout": 10.0, "idle_timeout": 15.0, "max_connections": 512, "max_sessions": 256,
              "session_idle_timeout": 300.0, "page_size": 0, "body_timeout": 30.0,
              "max_connections_per_credential": 128, "max_sessions_per_credential": 64,
              "max_parked_per_credential": 256}
    assert parse_lean(["--project", "p"]) == {"project": "p", "transport": "stdio", "host": "127.0.0.1",
                                              "port": 8765, "token_file": None, "profile": None, "verbose": False, "allow_host": (),
                                              "advertise_url": None, **limits}
    got = parse_lean(["-p", "p", "--transport=http", "--port", "9000", "--host", "::1", "--token-file", "t",
                      "-v", "--project", "q"])
    assert got == {"project": "q", "transport": "http", "host": "::1", "port": 9000,
                   "token_file": Path("t"), "profile": None, "verbose": True, "allow_host": (), "advertise_url": None,
                   **limits}
    got = parse_lean(["-p", "p", "--transport", "http", "--advertise-url", "http://10.0.3.7:8765"])
    assert got is not None and got["advertise_url"] == "http://10.0.3.7:8765"


def test_allow_host_repeats_parse_lean() -> None:
    got = parse_lean(["-p", "p", "--allow-host", "a,b", "--allow-host=c"])
    assert got is not None and got["allow_host"] == ("a,b", "c")      # split and checked by `allowed_hosts`


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["-h"], ["--project"], ["--project", "p", "--bogus"], ["--project", "p", "--port", "x"],
    ["--project", "p", "--transport", "sse"], ["--project", "--verbose"], ["-pp"], ["--verbose=1", "-p", "p"],
    ["--project", "p", "extra"], ["--project", ""], ["--project", "p", "--page-size", "-1"],
    ["--project", "p", "--page-size", "10001"],
])
def test_anything_else_goes_to_typer(argv: list[str]) -> None:
    assert parse_lean(argv) is None


def test_page_size_parses_lean() -> None:
    got = parse_lean(["--project", "p", "--page-size", "50"])
    assert got is not None and got["page_size"] == 50


@pytest.mark.parametrize("value", ["-1", "10001", "x"])
def test_a_bad_page_size_is_a_usage_error_naming_the_flag(value: str) -> None:
    r = subprocess.run([sys.executable, "-m", "mcpctl", "serve", "--project", "p", "--page-size", value],
                       capture_output=True, text=True, timeout=60 * SLACK, stdin=subprocess.DEVNULL,
                       env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", **SRC_ENV})
    assert r.returncode == 2, r.stderr
    assert "--page-size" in r.stderr


def test_help_still_comes_from_typer_with_every_option() -> None:
    r = subprocess.run([sys.executable, "-m", "mcpctl", "serve", "--help"], capture_output=True, text=True,
                       timeout=60 * SLACK, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", **SRC_ENV})
    assert r.returncode == 0, r.stderr
    for o in OPTIONS:
        for flag in o.flags:
            assert flag in r.stdout


def test_lean_serve_does_not_load_typer_or_rich(tmp_path: Path) -> None:
    code = ("import sys; from mcpctl.cli import serve; import mcpctl.gateway.run as run; "
            "run.run = lambda *a, **k: print(sorted(m for m in ('typer', 'rich') if m in sys.modules)); "
            "sys.argv = ['mcpctl', 'serve', '--project', 'p']; import mcpctl.cli; mcpctl.cli.main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60 * SLACK,
                       env={"MCPCTL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **SRC_ENV})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
