"""Client configuration files as each client writes them, in a temporary HOME.

Every test here runs with HOME (and the current directory) in a temp dir, the variables that
move a client's files (XDG_CONFIG_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, APPDATA) unset, and the
`claude` command hidden unless a test asks for it, so nothing touches the real user's files.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from client_files import Env


@pytest.fixture
def env(tmp_path: Path, tmp_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    home = tmp_path / "home"
    work = tmp_path / "work" / "myapp"
    home.mkdir()
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                "APPDATA", "REMOTE_TOKEN", "SENTRY_TOKEN", "MCPCTL_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(work)
    monkeypatch.setattr("mcpctl.clients.claude_code.find_claude", lambda: None)
    yield Env(home, work, tmp_home)
