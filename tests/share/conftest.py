"""Fixtures for the shared gateway's tests: the gateway tests' kit (`tests/gateway/gwkit.py`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))

from gwkit import Kit


@pytest.fixture
def kit(tmp_home: Path) -> Iterator[Kit]:
    k = Kit(tmp_home)
    yield k
    k.leftovers(timeout=0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
