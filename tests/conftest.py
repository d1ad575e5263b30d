"""Fixtures shared by every test: an isolated MCPCTL_HOME and a CLI runner."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own MCPCTL_HOME; nothing touches the real profile."""
    home = tmp_path / "mcpctl-home"
    monkeypatch.setenv("MCPCTL_HOME", str(home))
    monkeypatch.delenv("MCPCTL_DATABASE_URL", raising=False)     # files unless a test asks (tests/pg_support.py)
    # Subprocesses (gateways, examples) must find this venv's executables.
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    yield home


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def repo() -> Path:
    return REPO

