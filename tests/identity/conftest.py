"""Fixtures for the identity tests: the gateway test kit (tests/gateway/gwkit.py), its in-process
harness (inproc.py, the `gw` fixture as the gateway tests have it) and a running identity provider
(tests/servers/idp_server.py, via `idpkit`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
sys.path.insert(0, str(Path(__file__).parent))

from gwkit import Kit
from idpkit import Idp, start_idp
from inproc import Harness, threads_left, threads_now

from ci_support import INPROC


@pytest.fixture
def kit(tmp_home: Path) -> Iterator[Kit]:
    k = Kit(tmp_home)
    yield k
    k.leftovers(timeout=0)


@pytest.fixture
def idp(kit: Kit) -> Iterator[Idp]:
    server = start_idp(kit)
    try:
        yield server
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)


@pytest.fixture
def gw(kit: Kit, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """Gateways in this process over in-memory upstreams (`inproc`); teardown as in tests/gateway:
    no upstream connection left open, no thread left behind, no process started."""
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
