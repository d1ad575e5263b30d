"""`mcpctl.preflight`: what `mcpctl serve` checks before the gateway starts, without the CLI."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mcpctl.errors import EXIT_USAGE, MCPCtlError
from mcpctl.preflight import allowed_hosts, check_listen, check_profile
from mcpctl.resources.store import Store


def test_check_listen_refuses_a_bad_port_and_a_taken_one() -> None:
    with pytest.raises(MCPCtlError, match="--port 70000: must be between 1 and 65535") as e:
        check_listen("127.0.0.1", 70000)
    assert e.value.exit_code == EXIT_USAGE
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(MCPCtlError, match=r"cannot listen on 127\.0\.0\.1:"):
            check_listen("127.0.0.1", taken.getsockname()[1])
    check_listen("127.0.0.1", 0)                        # any free port


def test_check_profile_is_for_stdio_and_names_the_profiles(tmp_path: Path) -> None:
    store = Store(tmp_path / "resources")
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"}, "spec": {"servers": []}})
    with pytest.raises(MCPCtlError, match="--profile is for stdio"):
        check_profile(store, "p", "http", "read-only")
    with pytest.raises(MCPCtlError, match="project 'p' has no such profile") as e:
        check_profile(store, "p", "stdio", "writer")
    assert "read-only" in (e.value.hint or "")
    check_profile(store, "p", "stdio", "read-only")


def test_allowed_hosts_splits_lowers_and_refuses_ports() -> None:
    assert allowed_hosts(("Gateway,mcpctl-gw", "10.0.0.5")) == ("gateway", "mcpctl-gw", "10.0.0.5")
    with pytest.raises(MCPCtlError, match="--allow-host 'gw:8080': expected a host name"):
        allowed_hosts(("gw:8080",))
