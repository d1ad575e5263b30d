"""The stand-in model server (tests/servers/fake_llm.py) as a fixture: one process per module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_support import SLACK

FAKE_LLM = Path(__file__).resolve().parents[1] / "servers" / "fake_llm.py"


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[str]:
    """The stand-in's base URL (it binds its own port and prints it: held, not guessed)."""
    proc = subprocess.Popen([sys.executable, str(FAKE_LLM), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()          # printed once the socket listens
        assert line.startswith("http://127.0.0.1:"), f"fake_llm said {line!r}"
        yield line
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10 * SLACK)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10 * SLACK)


