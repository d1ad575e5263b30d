"""Results in sections through the gateway: in-process (`inproc`) and `mcpctl serve` over stdio and
HTTP, the SDK's client in both protocol eras, the fault server's large tools as the upstream (issue 21)."""

from __future__ import annotations

import json
import re
from typing import Any

import mcp.types as t
import pytest
from gwkit import Kit, text_of, wait_tools
from inproc import Harness
from test_relay_requests import gateway_client
from typer.testing import CliRunner

from mcpctl.audit.log import InvocationLog
from mcpctl.catalogue.tokens import token_counter
from mcpctl.cli import app
from servers import payloads

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

BARE = {"names": {"style": "bare"}}
MB2 = 2 * 1024 * 1024
NOTE = re.compile(r'read_result\(result_id="(r[0-9a-f]+)", section=2\) up to section=(\d+)')
count = token_counter().count


def _project(kit: Kit, **results: Any) -> str:
    kit.server("up", "--large-tools")
    return kit.project("p", ["up"], **BARE, **({"results": results} if results else {}))


async def _cut(c: Any, tool: str, size: int) -> tuple[Any, str, int]:
    """Call `tool`; (the result, its result id, its number of sections)."""
    r = await c.call_tool(tool, {"size": size})
    assert not r.is_error
    m = NOTE.search(r.content[-1].text)
    assert m is not None, r.content[-1].text[:300]
    return r, m.group(1), int(m.group(2))


async def _sections(c: Any, first: str, rid: str, n: int) -> list[str]:
    out = [first]
    for k in range(2, n + 1):
        r = await c.call_tool("read_result", {"result_id": rid, "section": k})
        assert not r.is_error, text_of(r)
        out.append(r.content[0].text)
    return out


def _join_json(sections: list[str]) -> str:
    """The documented rule: drop a section's closing bracket and the next one's opening bracket,
    with a comma between."""
    inner = [s[:-1] if i == 0 else s[1:] if i == len(sections) - 1 else s[1:-1] for i, s in enumerate(sections)]
    return ",".join(inner)


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("http", "auto"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_large_text_and_json_results_come_in_sections_that_read_back_exactly(kit: Kit, gw: Harness,
                                                                                  front: str, mode: str) -> None:
    project = _project(kit)
    limit = 8000                                           # the default
    async with gateway_client(kit, project, front, mode, gw) as c:
        tools = {tl.name: tl for tl in await wait_tools(c, {"large_text", "read_result"})}
        assert tools["read_result"].meta is None            # flat: nothing is kept loaded
        r, rid, n = await _cut(c, "large_text", MB2)
        assert n > 1 and len(r.content) == 2
        text = _sections_checked(await _sections(c, r.content[0].text, rid, n), limit)
        assert "".join(text) == payloads.large_text(MB2)

        r, rid, n = await _cut(c, "large_json", MB2)
        sections = _sections_checked(await _sections(c, r.content[0].text, rid, n), limit)
        parsed = [json.loads(s) for s in sections]
        assert [x for p in parsed for x in p] == payloads.large_items(MB2)
        assert _join_json(sections) == payloads.large_json(MB2)

        after = await c.call_tool("read_result", {"result_id": rid, "section": n + 1})
        assert after.is_error and f"sections 1 to {n}" in text_of(after)
    assert kit.leftovers() == []


def _sections_checked(sections: list[str], limit: int) -> list[str]:
    assert all(count(s) <= limit for s in sections), max(count(s) for s in sections)
    return sections


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_another_session_or_credential_reads_nothing_and_eviction_is_said(kit: Kit, gw: Harness,
                                                                              mode: str) -> None:
    project = _project(kit, maxTokens=2000, keepMegabytes=1)
    other = CliRunner().invoke(app, ["create", "token", "other", "-p", project]).stdout.strip()
    async with gw.serve(project) as g, \
            g.client(mode, name="first") as a, g.client(mode, name="second") as b, \
            g.client(mode, name="first", token=other) as b2:
        await wait_tools(a, {"large_text"})
        _, rid, n = await _cut(a, "large_text", 400_000)
        unknown = await a.call_tool("read_result", {"result_id": "r0000000000000000", "section": 2})
        assert unknown.is_error
        for c in (b, b2):
            r = await c.call_tool("read_result", {"result_id": rid, "section": 2})
            assert r.is_error and text_of(r) == text_of(unknown).replace("r0000000000000000", rid)
        ok = await a.call_tool("read_result", {"result_id": rid, "section": n})
        assert not ok.is_error
        await _cut(a, "large_text", 400_000)            # 2 bytes a character: 1 MB holds one
        gone = await a.call_tool("read_result", {"result_id": rid, "section": 2})
        assert gone.is_error and "evicted to make room for newer results" in text_of(gone)
    assert kit.leftovers() == []


@pytest.mark.parametrize(("front", "mode"), [("stdio", "auto"), ("http", "legacy"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_images_pass_untouched_and_structured_results_still_validate(kit: Kit, gw: Harness, front: str,
                                                                          mode: str) -> None:
    project = _project(kit, maxTokens=1000)
    async with gateway_client(kit, project, front, mode, gw) as c:
        await wait_tools(c, {"image", "large_structured"})
        # 600 kB: over any limit in tokens, under the SDK client's 1 MB per server-sent event
        r = await c.call_tool("image", {"size": 600_000})
        assert isinstance(r.content[0], t.ImageContent) and r.content[0].data == payloads.image_data(600_000)
        assert [text_of(r)] == ["an image"] and len(r.content) == 2
        # the SDK client validates structuredContent against the tool's outputSchema
        r = await c.call_tool("large_structured", {"size": 200_000})
        assert not r.is_error and r.structured_content == {"items": payloads.large_items(200_000)}
        assert NOTE.search(r.content[-1].text) and count(r.content[0].text) <= 1000
    assert kit.leftovers() == []


@pytest.mark.parametrize("front", ["stdio", "inproc"])
async def test_with_max_tokens_0_nothing_is_cut_and_read_result_is_not_listed(kit: Kit, gw: Harness,
                                                                              front: str) -> None:
    project = _project(kit, maxTokens=0)
    async with gateway_client(kit, project, front, "auto", gw) as c:
        names = {tl.name for tl in await wait_tools(c, {"large_text"})}
        assert "read_result" not in names
        r = await c.call_tool("large_text", {"size": MB2})
        assert len(r.content) == 1 and r.content[0].text == payloads.large_text(MB2)
    assert kit.leftovers() == []


async def test_the_log_records_result_size_and_sections_and_read_result_is_kept_loaded(kit: Kit,
                                                                                       gw: Harness) -> None:
    kit.server("up", "--large-tools")
    project = kit.project("p", ["up"], **BARE, favouriteIndex={"enabled": True, "tools": ["up/large_text"]},
                          results={"maxTokens": 1000})
    async with gw.client(project, "legacy", log=True) as c:
        tools = {tl.name: tl for tl in await wait_tools(c, {"read_result"})}
        assert tools["read_result"].meta == {"anthropic/alwaysLoad": True}
        fav = next(n for n in tools if n.endswith("large_text") and tools[n].meta)
        _, rid, n = await _cut(c, fav, 100_000)
        await c.call_tool(fav, {"size": 10})
        await c.call_tool("read_result", {"result_id": rid, "section": 2})
    with InvocationLog() as lg:
        rows = [(r.canonical_id, r.result_chars, r.result_sections) for r in lg.query(project="p")]
    assert rows == [("up/large_text", 100_000, n), ("up/large_text", 10, None),
                    ("mcpctl/read_result", rows[2][1], None)]
    assert 0 < (rows[2][1] or 0) <= 4000


def test_create_project_max_result_tokens_is_stored_described_and_checked(kit: Kit) -> None:
    kit.server("up", "--large-tools")
    runner = CliRunner()
    r = runner.invoke(app, ["create", "project", "p", "-s", "up", "--max-result-tokens", "0"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    spec = kit.store.get("Project", "p")["spec"]
    assert spec["results"] == {"maxTokens": 0, "keepMegabytes": 64, "keepMinutes": 60}
    assert "never cut" in runner.invoke(app, ["describe", "project", "p"], prog_name="mcpctl").stdout
    r = runner.invoke(app, ["create", "project", "q", "-s", "up", "--max-result-tokens", "-1"], prog_name="mcpctl")
    assert r.exit_code != 0 and "--max-result-tokens" in r.output
    r = runner.invoke(app, ["create", "project", "q", "-s", "up"], prog_name="mcpctl")
    assert "cut over 8000 tokens" in runner.invoke(app, ["describe", "project", "q"], prog_name="mcpctl").stdout
