"""Fixtures for the gateway tests; the helpers live in `gwkit`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gwkit import Kit
from inproc import Harness, threads_left, threads_now

from ci_support import INPROC


@pytest.fixture
def kit(tmp_home: Path) -> Iterator[Kit]:
    k = Kit(tmp_home)
    yield k
    k.leftovers(timeout=0)


@pytest.fixture
def gw(kit: Kit, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """Gateways in this process over in-memory upstreams (`inproc`); every test that drives an
    in-process Gateway uses this fixture. Teardown: no upstream connection left open, no thread
    left behind, no process started."""
    before = threads_now()
    h = Harness(kit.home)
    yield h
    if h.gateways:
        INPROC.add(request.node.nodeid)
    assert h.upstreams.open == 0, "an in-memory upstream connection was left open"
    assert threads_left(before) == [], "threads left running"
    assert kit.leftovers(timeout=0) == []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
