"""The CLI must start fast: nothing heavy is imported just to parse a command line."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("mcp", "mcp_types", "pydantic", "httpx2", "uvicorn", "starlette", "anyio", "sqlite3")


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = ("import sys, mcpctl.cli; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert r.stdout.strip() == "", f"imported at CLI start: {r.stdout.strip()}"


def test_help_lists_the_verbs() -> None:
    r = subprocess.run([sys.executable, "-m", "mcpctl", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for verb in ("get", "apply", "create", "delete", "describe", "diff"):
        assert verb in r.stdout
