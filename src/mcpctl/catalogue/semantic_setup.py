"""Installing semantic search into the environment mcpctl runs in, and checking that it loads.

`install_argv` is the command `mcpctl tools install-semantic` runs (pip of that environment, or
uv where it has no pip); `check_semantic` loads the model in a fresh interpreter, as a gateway
started afterwards would, and says what it found.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def install_argv(python: str | None = None) -> list[str]:
    """The command that installs semantic search into the environment of `python` (default: the
    one mcpctl runs in): pip when that environment has it, else uv."""
    import importlib.util
    import shutil

    from mcpctl.catalogue.rank import SEMANTIC_PACKAGES

    python = python or sys.executable
    if python == sys.executable and importlib.util.find_spec("pip") is None:
        uv = shutil.which("uv")
        if uv:
            return [uv, "pip", "install", "--python", python, "--no-deps", *SEMANTIC_PACKAGES]
    return [python, "-m", "pip", "install", "--no-deps", *SEMANTIC_PACKAGES]


_CHECK = ("import json, time, resource; t = time.perf_counter(); from mcpctl.catalogue.rank import "
          "semantic_status; ok, why = semantic_status(); print(json.dumps({'ok': ok, 'why': why, "
          "'load_s': time.perf_counter() - t, 'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))")


def check_semantic() -> dict[str, Any]:
    """Load the model in a fresh interpreter: {"ok", "why", "load_s", "rss_mb"}. MCPCtlError when
    the check fails or semantic search is still not available."""
    import subprocess

    from mcpctl.errors import MCPCtlError

    check = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True)
    try:
        status: dict[str, Any] = json.loads(check.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise MCPCtlError(f"installed, but the check failed: {check.stderr.strip()[-500:]}") from None
    if not status["ok"]:
        raise MCPCtlError(f"installed, but semantic search is still not available: {status['why']}",
                          hint="mcpctl doctor shows the details")
    return status
