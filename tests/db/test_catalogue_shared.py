"""The catalogue cache in the database, end to end: `mcpctl tools list` on a host that never
listed a server shows another host's listing (a new gateway instance starts warm). The cache's
contract on every backend: tests/catalogue/test_cache_contract.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.storage import Storage

TOOLS = [{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object"}},
         {"name": "shout", "description": "Echo it loudly.", "inputSchema": {"type": "object"}}]


def test_a_new_host_lists_the_shared_listing(pg_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = Storage.open()
    storage.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "alpha"},
                       "spec": {"command": "/nonexistent/alpha-server"}})    # cannot start: only the cache can answer
    storage.store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
                       "spec": {"servers": ["alpha"]}})
    assert storage.cache.write_server_tools("alpha", TOOLS)                  # host A listed it

    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-c"))              # host C: nothing on its disk
    r = subprocess.run([sys.executable, "-m", "mcpctl", "tools", "list", "--project", "p"],
                       capture_output=True, text=True, timeout=60 * SLACK, env={**os.environ})
    assert r.returncode == 0, r.stderr
    assert "alpha__echo" in r.stdout and "alpha__shout" in r.stdout
