"""Fixtures for the identity tests: the gateway test kit (tests/gateway/gwkit.py) and a running
identity provider (tests/servers/idp_server.py, via `idpkit`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
sys.path.insert(0, str(Path(__file__).parent))

from gwkit import Kit
from idpkit import Idp, start_idp


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
def anyio_backend() -> str:
    return "asyncio"
