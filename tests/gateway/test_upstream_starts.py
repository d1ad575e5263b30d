"""A gateway starts at most MCPCTL_UPSTREAM_STARTS upstreams at once, and none after SIGTERM.

Real processes: 30 stdio upstreams, each `sh -c` that writes `started-<pid>` into a directory and
then waits for the test's `go-<pid>` before it execs the fault server. A start the test has not let
go cannot finish (the upstream cannot be listed), so it holds its slot: the number of started but
not let go processes is a lower bound of the starts in flight, and it must never exceed the limit.
The test lets starts go one at a time and waits for the next to begin; then, with the limit's
worth of starts held and the others waiting, it sends SIGTERM: no further upstream starts, and no
process of any upstream survives the gateway.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from gwkit import FAULT_SERVER, MCPCTL, SLACK, Kit

pytestmark = pytest.mark.anyio

SERVERS = 30
LIMIT = 3
LET_GO = 2 * LIMIT          # starts let go before SIGTERM: every slot is handed on at least once


def held_server(kit: Kit, name: str, markers: Path) -> str:
    script = (f'touch "{markers}/started-$$"; while [ ! -e "{markers}/go-$$" ]; do sleep 0.02; done; '
              'exec "$0" "$@"')
    return kit.server(name, "-c", script, sys.executable, str(FAULT_SERVER), "--name", name, command="/bin/sh",
                      connect=120.0)


def started(markers: Path) -> set[int]:
    return {int(p.name.split("-", 1)[1]) for p in markers.glob("started-*")}


def ups(kit: Kit) -> int:
    return sum(1 for n in range(SERVERS) if (kit.store.status("Server", f"s{n}") or {}).get("state") == "up")


async def until(check: object, proc: subprocess.Popen[bytes], markers: Path, let_go: set[int], what: str,
                timeout: float = 30.0) -> None:
    """Poll until `check()`; at every poll, no more starts in flight than the limit."""
    with anyio.fail_after(timeout * SLACK):
        while True:
            held = started(markers) - let_go
            assert len(held) <= LIMIT, f"{len(held)} upstreams starting at once (limit {LIMIT}) {what}"
            if check():  # type: ignore[operator]
                return
            assert proc.poll() is None, "the gateway exited"
            await anyio.sleep(0.02)


async def test_a_gateway_starts_at_most_the_limit_at_once_and_none_after_sigterm(kit: Kit, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    names = [held_server(kit, f"s{n}", markers) for n in range(SERVERS)]
    project = kit.project("big", names)
    proc = subprocess.Popen([MCPCTL, "serve", "--project", project], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark, "MCPCTL_UPSTREAM_STARTS": str(LIMIT)})
    let_go: set[int] = set()
    try:
        await until(lambda: len(started(markers)) == LIMIT, proc, markers, let_go, "at the gateway's start")
        while len(let_go) < LET_GO:
            pid = min(started(markers) - let_go)
            (markers / f"go-{pid}").touch()
            let_go.add(pid)
            # the start let go is listed, and its slot goes to the next upstream
            await until(lambda: len(started(markers)) == len(let_go) + LIMIT and ups(kit) == len(let_go),
                        proc, markers, let_go, f"after {len(let_go)} let go")
        before = started(markers)
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(30 * SLACK):
            while proc.poll() is None:
                await anyio.sleep(0.05)
        assert proc.returncode == 0
        assert started(markers) == before, "an upstream started after SIGTERM"
        assert len(before) == LET_GO + LIMIT < SERVERS
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kit.leftovers(timeout=5) == [], "an upstream process outlived the gateway"


async def test_listing_servers_from_the_cli_lists_at_most_the_limit_at_once(kit: Kit, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`list_servers` (`tools list --refresh`, a command's first listing) is bounded the same way."""
    from mcpctl.gateway.refresh import Listed, list_servers
    from mcpctl.presentation.catalogue import load_gateway_config
    from mcpctl.storage import Storage

    monkeypatch.setenv("MCPCTL_UPSTREAM_STARTS", "2")
    markers = tmp_path / "markers"
    markers.mkdir()
    names = [held_server(kit, f"s{n}", markers) for n in range(6)]
    _, servers = load_gateway_config(kit.project("p", names), kit.store)
    results: dict[str, Listed] = {}
    let_go: set[int] = set()

    async def listing() -> None:
        results.update(await list_servers(servers, kit.store, Storage.open().cache))

    async with anyio.create_task_group() as tg:
        tg.start_soon(listing)
        with anyio.fail_after(60 * SLACK):
            while len(results) < len(servers):
                held = started(markers) - let_go
                assert len(held) <= 2, f"{len(held)} servers starting at once (limit 2)"
                for pid in held if len(held) == 2 else ():
                    (markers / f"go-{pid}").touch()
                    let_go.add(pid)
                await anyio.sleep(0.02)
    assert sorted(results) == sorted(servers) and len(started(markers)) == 6
    assert all(r.ok for r in results.values()), results
    assert kit.leftovers(timeout=5) == []
