"""The PostgreSQL fixtures (tests/pg_support.py) and the gateway test kit (tests/gateway/gwkit.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))

from pg_support import pg_cluster, pg_db, pg_url

__all__ = ["pg_cluster", "pg_db", "pg_url"]


import pytest
from gwkit import Kit


@pytest.fixture
def kit(tmp_home: Path) -> Iterator[Kit]:
    k = Kit(tmp_home)
    yield k
    k.leftovers(timeout=0)
