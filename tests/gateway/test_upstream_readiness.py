"""A call to a down or failing upstream answers at once or within the connect timeout, never after
the whole call timeout; a hung upstream is restarted (issue 8, defect 3). Through `mcpctl serve`,
and in-process (`front="inproc"`: a server that exits closes its connection)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from gwkit import SLACK, Kit, _alive, _mark_pids, text_of, until, wait_tools
from inproc import Harness
from test_relay_requests import gateway_client

from mcpctl.upstream import supervisor as upstream

pytestmark = pytest.mark.anyio

ECHO = [{"name": "echo", "inputSchema": {"type": "object"}}]


def _cached(*servers: str) -> None:
    from mcpctl.catalogue.cache import FilesCache

    for s in servers:
        FilesCache().write_server_tools(s, ECHO)


async def _timed_call(c: object, name: str, limit: float, **args: object) -> tuple[object, float]:
    t0 = time.monotonic()
    with anyio.fail_after(limit):
        r = await c.session.call_tool(name, args)  # type: ignore[attr-defined]
    return r, time.monotonic() - t0


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_a_cached_server_that_exits_at_start_fails_the_first_call_at_once(kit: Kit, gw: Harness,
                                                                               front: str, mode: str) -> None:
    kit.server("good")
    kit.server("broken", "--exit-at-start", call=30, connect=10)
    _cached("good", "broken")
    async with gateway_client(kit, kit.project("p", ["good", "broken"]), front, mode, gw) as c:
        r, dt = await _timed_call(c, "broken__echo", 5 * SLACK, text="x")
        text = text_of(r)
        assert r.is_error and "broken" in text and "Connection closed" in text, text   # its last error
        assert dt < 2 * SLACK
        r, dt = await _timed_call(c, "good__echo", 5 * SLACK, text="ok")
        assert text_of(r) == "ok"


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_a_call_while_a_failing_server_respawns_returns_its_last_error_at_once(
        kit: Kit, gw: Harness, tmp_path: Path, front: str, mode: str) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    # Every start takes 1 s, then fails: a respawn is in progress for 1 s at a time.
    kit.server("flaky", "--start-delay", "1", "--exit-after-start-delay", "--start-marker", str(markers),
               call=30, connect=10)
    _cached("flaky")
    async with gateway_client(kit, kit.project("p", ["flaky"]), front, mode, gw) as c:
        r, dt = await _timed_call(c, "flaky__echo", 10 * SLACK, text="x")   # the first start fails
        assert r.is_error and "flaky" in text_of(r)
        assert dt < 1 + 2 * SLACK
        await until(c, lambda: len(list(markers.iterdir())) >= 2, 10, 0.02)   # the next start is under way
        r, dt = await _timed_call(c, "flaky__echo", 5 * SLACK, text="x")
        text = text_of(r)
        assert r.is_error and "flaky" in text and "Connection closed" in text, text
        assert dt < 0.5 * SLACK


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_a_server_that_never_comes_up_fails_a_call_within_its_connect_timeout(kit: Kit, gw: Harness,
                                                                                    front: str, mode: str) -> None:
    kit.server("stuck", "--start-delay", "60", call=30, connect=1)
    _cached("stuck")
    async with gateway_client(kit, kit.project("p", ["stuck"]), front, mode, gw) as c:
        r, dt = await _timed_call(c, "stuck__echo", 10 * SLACK, text="x")
        text = text_of(r)
        assert r.is_error and "stuck" in text and "1s (timeouts.connect)" in text, text
        assert dt < 1 + 1.5 * SLACK
    assert kit.leftovers() == []


def _server_pids(kit: Kit, name: str) -> set[int]:
    out = set()
    for pid in _mark_pids(kit.mark):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if _alive(pid) and b"--name" in args and args[args.index(b"--name") + 1] == name.encode():
            out.add(pid)
    return out


@pytest.mark.stress
async def test_a_hung_upstream_is_restarted_after_consecutive_call_timeouts(kit: Kit) -> None:
    kit.server("frozen", "--freeze-tool", call=1)
    timed_out = "did not answer within 1s"
    async with kit.client(kit.project("p", ["frozen"])) as c:
        await wait_tools(c, {"frozen__freeze", "frozen__echo"})
        (first,) = _server_pids(kit, "frozen")
        # An answer resets the count: a timeout, an answer, then three timeouts in a row (the
        # last two calls find the upstream not restarted yet: they time out too).
        for tool, want in (("hang", timed_out), ("echo", "x"),
                           ("freeze", timed_out), ("echo", timed_out), ("echo", timed_out)):
            r, _ = await _timed_call(c, f"frozen__{tool}", 5 * SLACK, text="x")
            assert want in text_of(r) and r.is_error == (want == timed_out), (tool, text_of(r))
        with anyio.fail_after(15 * SLACK):        # restarted: a new process answers
            while True:
                r, _ = await _timed_call(c, "frozen__echo", 5 * SLACK, text="again")
                if not r.is_error:
                    break
                assert "frozen" in text_of(r)
                await anyio.sleep(0.1)
        assert text_of(r) == "again"
        assert first not in _server_pids(kit, "frozen")
    log = (kit.home / "log" / "gateway-p.log").read_text()
    assert "3 calls in a row timed out" in log
    assert upstream.HUNG_AFTER_TIMEOUTS == 3
    assert kit.leftovers() == []
