"""The real Claude Code (`@anthropic-ai/claude-code` from npm, installed by .ci/run into
.npm-servers): `mcpctl connect claude-code` goes through its own `claude mcp add-json`, and
`claude mcp list`, which health-checks every server without an API key, shows the gateway as
connected over stdio and over HTTP. HOME is a temp dir, so the real user's config is untouched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_support import SLACK, skip_unless_ci

REPO = Path(__file__).resolve().parents[2]
NPM_DIR = Path(os.environ.get("MCPCTL_NPM_SERVERS", REPO / ".npm-servers"))
CLAUDE = NPM_DIR / "node_modules" / ".bin" / "claude"
MCPCTL = Path(sys.executable).parent / "mcpctl"

pytestmark = [pytest.mark.npm, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def claude_env(tmp_path: Path, tmp_home: Path) -> dict[str, str]:
    if not CLAUDE.exists() or not shutil.which("node"):
        skip_unless_ci("Claude Code is not installed (npm install --prefix .npm-servers "
                       "@anthropic-ai/claude-code@2.1.332)")
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (tmp_path / "tmp").mkdir()
    env = {
        "HOME": str(home),
        "MCPCTL_HOME": str(tmp_home),
        "PATH": os.pathsep.join([str(CLAUDE.parent), str(MCPCTL.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "LANG": "C.UTF-8",
        "PWD": str(work),
        "TMPDIR": str(tmp_path / "tmp"),    # Claude Code keeps its own (claude-<uid>/) there: not in /tmp
    }
    return env


def sh(env: dict[str, str], *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=env, cwd=env["PWD"], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


def mcpctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    r = sh(env, str(MCPCTL), *args)
    assert r.returncode == 0, f"mcpctl {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


def claude_list(env: dict[str, str]) -> dict[str, str]:
    """`claude mcp list`: server name -> the rest of its line."""
    r = sh(env, str(CLAUDE), "mcp", "list", timeout=180 * SLACK)
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^([\w.-]+): (.*)$", line)
        if m and " - " in m.group(2):
            out[m.group(1)] = m.group(2)
    return out


def listening_port(proc: subprocess.Popen[str], err_path: Path, timeout: float = 30) -> int:
    """The port an HTTP gateway started with `--port 0` bound (the kernel picks a free one: no
    port is guessed), read from the line it prints once it listens; bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(r"serving project '[^']*' at http://127\.0\.0\.1:(\d+)/mcp", err_path.read_text())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            raise AssertionError(f"the HTTP gateway exited: {err_path.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"the HTTP gateway did not say where it listens after {timeout}s: {err_path.read_text()}")


def test_connect_claude_code_shows_the_gateway_connected_over_stdio_and_http(claude_env: dict[str, str]) -> None:
    env = claude_env
    claude_json = Path(env["HOME"]) / ".claude.json"
    claude_json.write_text(json.dumps({"mcpServers": {
        "calc": {"type": "stdio", "command": "mcpctl", "args": ["example-server", "calc"]}}}, indent=2))
    mcpctl(env, "import", "claude-code", "--project", "work")

    r = mcpctl(env, "connect", "claude-code", "--project", "work", "--replace-imported")
    assert "ran: claude mcp add-json -s user mcpctl" in r.stdout and "ran: claude mcp remove -s user calc" in r.stdout
    listed = claude_list(env)
    assert "calc" not in listed                      # the client sees only the gateway
    assert listed["mcpctl"].endswith("✔ Connected"), listed
    assert f"{MCPCTL} serve --project work" in listed["mcpctl"]

    err_path = Path(env["MCPCTL_HOME"]) / "http-gateway.stderr"
    with open(err_path, "w") as err_file:
        gateway = subprocess.Popen([str(MCPCTL), "serve", "--project", "work", "--transport", "http", "--port", "0"],
                                   env=env, cwd=env["PWD"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=err_file, text=True)
    try:
        port = listening_port(gateway, err_path)
        mcpctl(env, "connect", "claude-code", "--project", "work", "--transport", "http", "--port", str(port),
               "--name", "mcpctl-http")
        token = (Path(env["MCPCTL_HOME"]) / "state" / "tokens" / "work.token").read_text().strip()
        assert token not in claude_json.read_text()       # the header comes from headersHelper
        listed = claude_list(env)
        assert listed["mcpctl-http"] == f"http://127.0.0.1:{port}/mcp (HTTP) - ✔ Connected", listed
        assert listed["mcpctl"].endswith("✔ Connected")
    finally:
        gateway.terminate()
        gateway.wait(timeout=20 * SLACK)

    mcpctl(env, "disconnect", "claude-code", "--name", "mcpctl-http")
    r = mcpctl(env, "disconnect", "claude-code")
    assert "put back: 'calc' (user)" in r.stdout
    listed = claude_list(env)
    assert set(listed) == {"calc"} and listed["calc"].endswith("✔ Connected")
