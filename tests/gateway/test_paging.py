"""Downstream pagination (`serve --page-size`): one page by default, cursors honoured whenever a
client sends one, bad cursors refused with -32602, in both eras over stdio and in-process
(`inproc`, the SDK server the HTTP front serves)."""

from __future__ import annotations

import contextlib
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from gwkit import Kit, until, wait_tools
from inproc import Harness
from mcp import MCPError
from test_early_front import _answered_early
from test_serve_http import http_client, http_gateway

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

N = 20
PAGE = 7
SECTIONS = ("tools", "resources", "resourceTemplates", "prompts")


@contextlib.asynccontextmanager
async def _client(kit: Kit, project: str, front: str, mode: str, *extra: str,
                  gw: Harness | None = None) -> AsyncIterator[Any]:
    if front == "inproc":
        assert gw is not None and extra in ((), ("--page-size", str(PAGE)))
        async with gw.client(project, mode, page_size=PAGE if extra else 0) as c:
            yield c
    elif front == "stdio":
        from mcp import Client
        from mcp.client.stdio import stdio_client

        with open(kit.home / f"client-stderr-{uuid.uuid4().hex[:6]}.log", "w") as errlog:
            async with Client(stdio_client(kit.params(project, *extra), errlog=errlog), mode=mode) as c:
                yield c
    else:
        with http_gateway(kit, project, *extra) as (url, token):
            async with http_client(url, token, mode) as c:
                yield c


def _lister(c: Any, section: str) -> Callable[[str | None], Awaitable[tuple[list[str], str | None]]]:
    async def page(cursor: str | None) -> tuple[list[str], str | None]:
        if section == "tools":
            r: Any = await c.list_tools(cursor=cursor, cache_mode="bypass")
            return [x.name for x in r.tools], r.next_cursor
        if section == "resources":
            r = await c.list_resources(cursor=cursor, cache_mode="bypass")
            return [str(x.uri) for x in r.resources], r.next_cursor
        if section == "resourceTemplates":
            r = await c.list_resource_templates(cursor=cursor, cache_mode="bypass")
            return [x.uri_template for x in r.resource_templates], r.next_cursor
        r = await c.list_prompts(cursor=cursor, cache_mode="bypass")
        return [x.name for x in r.prompts], r.next_cursor

    return page


async def _walk(c: Any, section: str, cursor: str | None = None) -> tuple[list[str], list[int]]:
    """Every item from `cursor` on, following nextCursor; and each page's size."""
    page = _lister(c, section)
    items: list[str] = []
    sizes: list[int] = []
    for _ in range(100):
        got, cursor = await page(cursor)
        items += got
        sizes.append(len(got))
        if cursor is None:
            return items, sizes
    raise AssertionError("nextCursor never ended")


def _setup(kit: Kit) -> str:
    kit.server("a", "--tools", str(N), "--list-items", str(N))
    kit.server("b", "--list-items", "3")
    return kit.project("p", ["a", "b"])


async def _code(call: Awaitable[Any]) -> int:
    with pytest.raises(MCPError) as e:
        await call
    return e.value.error.code


@pytest.mark.parametrize("front", ["stdio", "inproc"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_lists_are_one_page_by_default_and_pages_of_n_with_page_size(kit: Kit, gw: Harness, front: str,
                                                                           mode: str) -> None:
    project = _setup(kit)
    whole: dict[str, list[str]] = {}
    async with _client(kit, project, front, mode, gw=gw) as c:
        with warnings.catch_warnings():
            await wait_tools(c, {"a__synthetic_0019", "b__echo"})
        for section in SECTIONS:
            whole[section], sizes = await _walk(c, section)
            assert sizes == [len(whole[section])], section          # one page, no nextCursor
        assert len(whole["resources"]) == len(whole["prompts"]) == N + 1 + 3 + 1
    rounds = 2 if front == "stdio" else 1        # stdio again: the early front answers the first list
    for _ in range(rounds):
        async with _client(kit, project, front, mode, "--page-size", str(PAGE), gw=gw) as c:
            first, cursor = await _lister(c, "tools")(None)
            assert len(first) == PAGE and cursor is not None
            for section in SECTIONS:
                items, sizes = await _walk(c, section)
                assert items == whole[section], section            # every item once, in order
                assert all(s == PAGE for s in sizes[:-1]) and 0 < sizes[-1] <= PAGE, (section, sizes)
            called = await c.call_tool("a__synthetic_0019", {})    # a tool on a later page
            assert called.is_error is False
            assert await _code(c.list_tools(cursor="not a cursor", cache_mode="bypass")) == -32602
            _, resources_cursor = await _lister(c, "resources")(None)
            assert resources_cursor is not None
            assert await _code(c.list_prompts(cursor=resources_cursor, cache_mode="bypass")) == -32602
            saved = resources_cursor
    if front == "stdio":
        early = _answered_early(kit.home, project)
        assert early and " 0 answered" not in early[-1]
    async with _client(kit, project, front, mode, gw=gw) as c:
        # a cursor from earlier is honoured by a gateway that pages nothing itself
        items, sizes = await _walk(c, "resources", saved)
        assert items == whole["resources"][PAGE:] and len(sizes) == 1
        assert await _code(c.list_tools(cursor="e30", cache_mode="bypass")) == -32602     # "{}"


@pytest.mark.parametrize(("front", "mode"), [("stdio", "auto"), ("http", "legacy"), ("inproc", "legacy"),
                                            ("inproc", "auto")])
async def test_a_cursor_from_before_a_catalogue_change_is_honoured_at_its_offset(kit: Kit, gw: Harness, front: str,
                                                                                mode: str) -> None:
    project = _setup(kit)
    async with _client(kit, project, front, mode, "--page-size", str(PAGE), gw=gw) as c:
        before: list[str] = []
        after: list[str] = []

        async def listed_all() -> bool:
            nonlocal before
            before = (await _walk(c, "tools"))[0]
            return {"a__synthetic_0019", "b__echo"} <= set(before)

        await until(c, listed_all)
        _, cursor = await _lister(c, "tools")(None)
        assert cursor is not None
        kit.project("p", ["a", "b"], tools={"disabled": ["a/synthetic_000*"]})     # 10 tools fewer

        async def ten_fewer() -> bool:
            nonlocal after
            after, _ = await _walk(c, "tools")
            return len(after) == len(before) - 10

        await until(c, ten_fewer)
        page, _ = await _lister(c, "tools")(cursor)
        assert page == after[PAGE:2 * PAGE]


def test_cursors_round_trip_and_refuse_what_they_did_not_mint() -> None:
    import base64
    import json

    from mcpctl.presentation import paging

    items = list(range(10))
    assert paging.page(items, "tools", None, 0, 1) == (items, None)
    first, cursor = paging.page(items, "tools", None, 4, 1)
    assert first == [0, 1, 2, 3] and cursor is not None
    second, cursor = paging.page(items, "tools", cursor, 4, 2)
    third, last = paging.page(items, "tools", cursor, 4, 2)
    assert second == [4, 5, 6, 7] and third == [8, 9] and last is None
    assert paging.page(items, "tools", cursor, 0, 3) == ([8, 9], None)       # honoured without a page size
    assert paging.page(items, "tools", paging.encode("tools", 50, 1), 4, 1) == ([], None)   # past the end

    def forged(data: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()

    for bad in ("", "!!", "x" * 600, 7, forged([1]), forged({"s": "tools", "o": -1}),
                forged({"s": "tools", "o": True}), forged({"s": "nope", "o": 1}), forged({"s": "tools"})):
        with pytest.raises(paging.CursorError, match="tools/list"):
            paging.decode(bad, "tools")
    with pytest.raises(paging.CursorError, match="issued by prompts/list"):
        paging.decode(paging.encode("prompts", 3, 1), "resources")
