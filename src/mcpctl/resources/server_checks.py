"""What can be checked about a stdio or HTTP server without starting it (no `mcp` import).

Used by `create server` (warnings, or refusals with --strict) and shared with the gateway for
finding a command: PATH first, then next to the Python running mcpctl (a venv's own bin works
even when the venv is not activated, as clients start servers with a minimal environment).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcpctl.resources.kinds import SECRET_REF_RE


def find_command(command: str) -> str | None:
    """Resolve a stdio command on PATH, then next to `sys.executable` (the venv's own bin)."""
    if os.sep in command:
        p = Path(command).expanduser()
        return str(p) if p.exists() else None
    return shutil.which(command) or shutil.which(command, path=str(Path(sys.executable).parent))


def _references(value: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2).strip()) for m in SECRET_REF_RE.finditer(value)]


def static_problems(spec: dict[str, Any]) -> list[str]:
    """Problems a server's spec shows before it is started (each a sentence naming the flag)."""
    problems: list[str] = []
    if spec.get("transport", "stdio") == "stdio":
        command = str(spec.get("command") or "")
        if command and not _references(command):
            if os.sep in command and not os.path.isabs(os.path.expanduser(command)):
                problems.append(f"the command {command!r} is a relative path: the gateway runs in its client's "
                                "working directory, so use an absolute path")
            elif os.sep in command:
                path = Path(command).expanduser()
                if not path.is_file():
                    problems.append(f"the command {command!r} does not exist" if not path.exists()
                                    else f"the command {command!r} is not a file")
                elif not os.access(path, os.X_OK):
                    problems.append(f"the command {command!r} is not executable (chmod +x {command})")
            elif find_command(command) is None:
                problems.append(f"the command {command!r} is not on PATH (nor next to {sys.executable})")
        cwd = spec.get("cwd")
        if cwd and not Path(os.path.expanduser(str(cwd))).is_dir():
            problems.append(f"--cwd {cwd!r} is not a directory")
        values = [("the command", command)] + [(f"argument {a!r}", str(a)) for a in spec.get("args") or []] + \
            [(f"--env {k}", str(v)) for k, v in (spec.get("env") or {}).items()]
    else:
        values = [("--url", str(spec.get("url") or ""))] + \
            [(f"--header {k}", str(v)) for k, v in (spec.get("headers") or {}).items()]
    for where, value in values:
        for source, ref in _references(value):
            if source == "env" and ref not in os.environ:
                problems.append(f"{where}: ${{env:{ref}}} is not set in this environment (the gateway resolves it "
                                "when it starts the server: set it where the gateway runs)")
            elif source == "file" and not Path(ref).expanduser().is_file():
                problems.append(f"{where}: ${{file:{ref}}} does not exist")
    return problems
