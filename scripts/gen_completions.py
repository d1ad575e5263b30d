"""Generate completions/ for bash, zsh and fish (`--check` fails when they are stale).

    python scripts/gen_completions.py          # rewrite the files
    python scripts/gen_completions.py --check  # exit 1 if any file differs
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"bash": "mcpctl.bash", "zsh": "_mcpctl", "fish": "mcpctl.fish"}


def generate(shell: str) -> str:
    env = {**os.environ, "_MCPCTL_COMPLETE": f"source_{shell}"}
    code = "import sys; sys.argv[0] = 'mcpctl'; from mcpctl.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for shell, name in TARGETS.items():
        path = ROOT / "completions" / name
        text = generate(shell)
        if not text.strip():
            print(f"error: no completion script generated for {shell}", file=sys.stderr)
            return 2
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print("stale completion scripts (run python scripts/gen_completions.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
