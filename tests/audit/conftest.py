from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty MCPCTL_HOME, so nothing touches the user's real profile."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MCPCTL_HOME", str(home))
    return home
