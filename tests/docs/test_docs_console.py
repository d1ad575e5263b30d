"""Every ```console block of README.md, examples/README.md and docs/*.md, run as a new user would, against its output.

Each document runs on a fresh machine of its own: a temporary HOME (so mcpctl's store, logs and
caches start empty at their default paths, and no client configuration of this machine is read)
mapped onto the documents' `/home/me`, and a working directory `/home/me/mcpctl` holding what the
documents assume of the repository: `examples/`, `.venv` (this test's venv) and the npm reference
servers as `node_modules/` (so `npx -y @modelcontextprotocol/server-memory` starts the installed
copy; npm runs offline), and what HOMES gives the document beyond that (a client's configuration
file that docs/clients.md shows with `cat` before it imports from it). The commands run in document order through bash (pipes, redirects,
quotes and continuations as typed), stdin closed, stdout and stderr merged as a terminal shows
them. `source .venv/bin/activate` puts the venv's bin first on PATH for the rest of the document;
the README starts without it (its first command is `.venv/bin/mcpctl demo`), the others with it
(and from the repository's root, as the README's commands run).
What matches what is docblocks.py's language (`...`, named patterns, no output = must succeed).

Explicit exceptions, each with its reason: blocks marked `<!-- docs-test: skip REASON -->` in the
document, and outputs that need the semantic model (they name the hybrid ranker) where it is not
installed (CI installs it, and there the scores must match the document exactly: the model's
port is deterministic on one machine). When a document's expected output changes, only the
document changes: the failure prints the output to paste.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from docblocks import Block, Command, matches, parse, report, trim_trailing_blanks

from ci_support import skip_unless_ci

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "examples" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NPM_DIR = Path(os.environ.get("MCPCTL_NPM_SERVERS", REPO / ".npm-servers"))
VENV = Path(sys.executable).parent.parent
ACTIVATE = "source .venv/bin/activate"
DOC_HOME = "/home/me"
COMMAND_TIMEOUT = 120
# Files a document assumes in the user's home: tests/docs/homes/<name>/ is copied into it.
HOMES = {"docs/clients.md": "clients"}
# A document naming this starts the npm reference server (.ci/run installs it into .npm-servers).
NPM_SERVER = "@modelcontextprotocol/server-memory"
# An expected output naming one of these needs the semantic model (mcpctl tools install-semantic).
NEEDS_MODEL = ("hybrid ranker", "semantic search active", "ranked by hybrid")


def _with_console_blocks() -> list[Path]:
    return [d for d in DOCS if parse(d)]


def _model_installed() -> bool:
    try:
        import numpy  # noqa: F401

        from mcpctl.catalogue import semantic

        semantic.find_model_dir()
    except ImportError:
        return False
    return True


@dataclass
class Terminal:
    """A new user's shell: their home, the repository checkout, their PATH."""

    home: Path
    cwd: Path
    env: dict[str, str]
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def fresh(cls, root: Path, activated: bool, files: str | None = None) -> Terminal:
        home = root / "me"
        cwd = home / "mcpctl"
        if files:
            shutil.copytree(Path(__file__).parent / "homes" / files, home)
        cwd.mkdir(parents=True)
        shutil.copytree(REPO / "examples", cwd / "examples", ignore=shutil.ignore_patterns("__pycache__"))
        (cwd / ".venv").symlink_to(VENV, target_is_directory=True)
        if (NPM_DIR / "node_modules").is_dir():
            (cwd / "node_modules").symlink_to(NPM_DIR / "node_modules", target_is_directory=True)
        bin_dir = str(VENV / "bin")
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MCPCTL_", "XDG_", "VIRTUAL_ENV", "PYTHON")) and k not in ("COLUMNS", "LINES")}
        env.update(HOME=str(home), PATH=os.pathsep.join(path), PYTHONUNBUFFERED="1",
                   npm_config_offline="true", npm_config_update_notifier="false", npm_config_cache=str(root / "npm"))
        term = cls(home, cwd, env)
        if activated:
            term.activate()
        return term

    def activate(self) -> None:
        self.env["VIRTUAL_ENV"] = str(self.cwd / ".venv")
        self.env["PATH"] = f"{self.cwd / '.venv' / 'bin'}{os.pathsep}{self.env['PATH']}"

    def run(self, command: Command) -> tuple[int, list[str]]:
        if command.text.strip() == ACTIVATE:
            self.activate()
            return 0, []
        proc = subprocess.run(["bash", "-c", command.text], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT)
        text = proc.stdout.decode("utf-8", errors="replace")
        # The documents' paths: this machine's temporary home is their /home/me.
        for real, shown in ((str(self.home), DOC_HOME), (str(VENV), f"{DOC_HOME}/mcpctl/.venv")):
            text = text.replace(real, shown)
        return proc.returncode, trim_trailing_blanks(text.splitlines())


def _run_block(term: Terminal, block: Block, doc: str, model: bool) -> list[str]:
    failures: list[str] = []
    for command in block.commands:
        code, actual = term.run(command)
        expected = trim_trailing_blanks(command.expected)
        if not model and any(marker in e for e in expected for marker in NEEDS_MODEL):
            term.skipped.append(f"{doc}:{command.line}: output needs the semantic model (not installed)")
            continue
        if code != 0 or (expected and not matches(expected, actual)):
            failures.append(report(doc, Command(command.line, command.text, expected), actual, code))
    return failures


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("doc", _with_console_blocks(), ids=lambda d: d.relative_to(REPO).as_posix())
def test_console_blocks_print_what_the_document_shows(doc: Path, tmp_path: Path) -> None:
    name = doc.relative_to(REPO).as_posix()
    blocks = parse(doc)
    runnable = [b for b in blocks if b.skip is None]
    if not runnable:
        pytest.skip("; ".join(f"{name}:{b.line}: {b.skip}" for b in blocks))
    if NPM_SERVER in doc.read_text(encoding="utf-8") and not (
            shutil.which("npx") and (NPM_DIR / "node_modules" / NPM_SERVER).is_dir()):
        skip_unless_ci(f"{name} starts {NPM_SERVER}: npx or {NPM_DIR}/node_modules lacks it")
    term = Terminal.fresh(tmp_path, activated=name != "README.md", files=HOMES.get(name))
    model = _model_installed()
    failures: list[str] = []
    for block in runnable:
        failures += _run_block(term, block, name, model)
    assert not failures, f"{len(failures)} documented command(s) differ:\n\n" + "\n\n".join(failures)
    if term.skipped:
        skip_unless_ci("; ".join(term.skipped))

