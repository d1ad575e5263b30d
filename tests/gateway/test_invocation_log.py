"""Every call is recorded (one row, the right outcome), never its arguments or results: through the
gateway in-process (`inproc`), and by several `mcpctl serve` processes writing one log."""

from __future__ import annotations

import anyio
import pytest
from gwkit import Kit, text_of, wait_tools
from inproc import Harness

from ci_support import SLACK

pytestmark = pytest.mark.anyio

SECRET = "sk-mcpctl-planted-SECRET-4f1c9a7e"


def _rows(project: str) -> list:
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:
        return log.query(project=project)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_calls_are_logged_with_outcomes_and_secrets_never_written(kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("alpha", call=1.5, env={"SOME_TOKEN": SECRET})
    kit.project("p", ["alpha"], tools={"disabled": ["alpha/delete_*"]},
                search={"recordQueries": False})
    async with gw.client("p", mode, log=True) as c:
        await wait_tools(c, {"alpha__echo"})
        r = await c.session.call_tool("alpha__echo", {"text": SECRET})
        assert text_of(r) == SECRET                       # the secret travels through the result
        r = await c.session.call_tool("alpha__leak", {"token": SECRET, "nested": {"k": SECRET}})
        assert SECRET in text_of(r)
        await c.session.call_tool("alpha__fail", {})
        await c.session.call_tool("alpha__delete_all", {"why": SECRET})
        await c.session.call_tool("alpha__hang", {"x": SECRET})
        await c.session.call_tool("search_tools", {"query": f"find {SECRET}"})
        await c.session.call_tool("alpha__crash", {"x": SECRET})
    rows = _rows("p")
    outcomes = [(r.presented_name, r.canonical_id, r.outcome) for r in rows]
    assert outcomes == [
        ("alpha__echo", "alpha/echo", "ok"),
        ("alpha__leak", "alpha/leak", "ok"),
        ("alpha__fail", "alpha/fail", "tool_error"),
        ("alpha__delete_all", "alpha/delete_all", "denied"),
        ("alpha__hang", "alpha/hang", "timeout"),
        ("search_tools", "mcpctl/search_tools", "ok"),
        ("alpha__crash", "alpha/crash", "upstream_down"),
    ]
    assert all(r.client_name == "mcp" and r.session_id for r in rows)
    assert len({r.session_id for r in rows}) == 1
    assert all(r.query is None for r in rows)
    assert rows[4].duration_ms >= 1400
    # nothing mcpctl wrote anywhere under MCPCTL_HOME contains the secret (db, WAL, logs, cache,
    # status, tokens); the resource file holds only the environment *reference* we planted.
    leaked = []
    for path in kit.home.rglob("*"):
        written_by_mcpctl = path.is_file() and not path.name.startswith("client-stderr") and path.suffix != ".yaml"
        if written_by_mcpctl and SECRET.encode() in path.read_bytes():
            leaked.append(str(path.relative_to(kit.home)))
    assert leaked == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_queries_recorded_only_when_opted_in(kit: Kit, gw: Harness, mode: str) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"], search={"recordQueries": True})
    async with gw.client("p", mode, log=True) as c:
        await wait_tools(c, {"alpha__echo"})
        await c.session.call_tool("search_tools", {"query": "add two numbers"})
    rows = _rows("p")
    assert [(r.canonical_id, r.query) for r in rows] == [("mcpctl/search_tools", "add two numbers")]


async def test_two_gateways_write_the_same_log_without_losing_rows(kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    n = 150

    async def gateway(tag: str) -> None:
        async with kit.client("p") as c:
            await wait_tools(c, {"alpha__echo"})
            for i in range(n):
                await c.session.call_tool("alpha__echo", {"text": f"{tag}{i}"})

    with anyio.fail_after(90 * SLACK):
        async with anyio.create_task_group() as tg:
            for tag in ("a", "b", "c"):
                tg.start_soon(gateway, tag)
    rows = _rows("p")
    assert len(rows) == 3 * n
    assert len({r.session_id for r in rows}) == 3
    assert kit.leftovers() == []
