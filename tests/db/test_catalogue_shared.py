"""The catalogue cache in the database: a host that never listed a server starts from another
host's listing (a new gateway instance starts warm)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.catalogue import cache
from mcpctl.storage import Storage

TOOLS = [{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object"}},
         {"name": "shout", "description": "Echo it loudly.", "inputSchema": {"type": "object"}}]


def test_a_new_host_starts_from_the_shared_listing(pg_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Storage.open().store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "alpha"},
                 "spec": {"command": "/nonexistent/alpha-server"}})       # cannot start: only the cache can answer
    Storage.open().store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
                 "spec": {"servers": ["alpha"]}})
    assert cache.write_server_tools("alpha", TOOLS)                       # host A listed it

    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-b"))           # host B: nothing on its disk
    assert not cache.cache_path("alpha").exists()
    entry = cache.read_server_entry("alpha")
    assert entry is not None and [t["name"] for t in entry["tools"]] == ["echo", "shout"]
    assert cache.cache_path("alpha").exists()                             # kept as host B's working copy

    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-c"))
    r = subprocess.run([sys.executable, "-m", "mcpctl", "tools", "list", "--project", "p"],
                       capture_output=True, text=True, timeout=60 * SLACK, env={**os.environ})
    assert r.returncode == 0, r.stderr
    assert "alpha__echo" in r.stdout and "alpha__shout" in r.stdout

    cache.delete_server("alpha")                                          # a deleted server goes for everyone
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-d"))
    assert cache.read_server_entry("alpha") is None


def test_without_a_database_nothing_is_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.write_server_tools("alpha", TOOLS)
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "other"))
    assert cache.read_server_entry("alpha") is None
