"""search_tools in the gateway: what each server says about itself is captured and searched, and
a search that finds nothing says so (and how to find tools) without changing the result's shape."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest

from mcpctl import catalogue
from mcpctl.catalogue import rank
from mcpctl.catalogue.cache import FilesCache
from mcpctl.presentation.builtins import SearchPayload, no_match_text, search_result
from mcpctl.presentation.catalogue import cached_catalogue
from mcpctl.presentation.search import ToolSearch
from mcpctl.resources.kinds import ServerSpec
from mcpctl.resources.store import Store

KG = [{"name": "create_entities", "description": "Create multiple new entities in the knowledge graph",
       "inputSchema": {"type": "object", "properties": {"entities": {"type": "array"}}}},
      {"name": "read_graph", "description": "Read the entire knowledge graph"}]
FS = [{"name": "get_file_info", "description": "Retrieve detailed metadata about a file or directory"}]


def _project(presentation: str | None = None, ranker: str = "bm25") -> str:
    for server in ("kg", "fs"):
        Store().put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                     "spec": {"command": "true"}})
    spec: dict[str, Any] = {"servers": ["kg", "fs"], "search": {"ranker": ranker}}
    if presentation:
        spec["presentation"] = presentation
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"}, "spec": spec})
    FilesCache().write_server_entry("kg", {"tools": KG, "about": [{"name": "memory-server", "instructions":
                                    "Remembers people, facts and how they relate, across conversations."}]})
    FilesCache().write_server_tools("fs", FS)
    return "p"


def _search(kind: str, query: str, presentation: str | None = None) -> SearchPayload:
    _project(presentation, kind)
    view = cached_catalogue("p", Store(), FilesCache()).view()

    async def go() -> dict[str, Any]:
        return await ToolSearch(kind, FilesCache()).search(1, view, query, 5)

    payload = anyio.run(go)
    assert isinstance(payload, SearchPayload)
    return payload


def test_the_cache_keeps_the_about_section_and_its_text() -> None:
    _project()
    entry = FilesCache().read_server_entry("kg")
    assert entry is not None and entry["about"][0]["name"] == "memory-server"
    assert FilesCache().read_server_about("kg") == "memory-server\nRemembers people, facts and how they relate, across conversations."
    assert FilesCache().read_server_about("fs") == "" and FilesCache().read_server_about("nope") == ""
    # a later listing of the tools alone keeps the about section
    assert FilesCache().write_server_tools("kg", KG[:1])
    assert FilesCache().read_server_about("kg").startswith("memory-server")


def test_search_tools_ranks_tools_by_what_their_server_says_about_itself() -> None:
    payload = _search("bm25", "remember facts about people")
    assert [t["name"] for t in payload["tools"]] == ["kg__create_entities", "kg__read_graph"]
    assert payload.note is None


def test_a_search_that_finds_nothing_says_so_in_its_text_and_keeps_its_shape() -> None:
    payload = _search("bm25", "zzyzx qwerty")
    assert dict(payload) == {"tools": [], "total_searched": 3}
    assert payload.note is not None
    assert "No tool matched 'zzyzx qwerty' among the 3 tools" in payload.note
    assert "search.ranker: bm25" in payload.note
    assert "the servers are: kg, fs" in payload.note and "tools/list" in payload.note
    result = search_result(payload)
    assert result["structuredContent"] == {"tools": [], "total_searched": 3}
    assert type(result["structuredContent"]) is dict
    assert json.loads(result["content"][0]["text"]) == {"tools": [], "total_searched": 3}
    assert result["content"][1] == {"type": "text", "text": payload.note}
    assert result["isError"] is False


def test_a_search_that_finds_something_has_one_text_block() -> None:
    result = search_result(_search("bm25", "file metadata"))
    assert len(result["content"]) == 1 and result["structuredContent"]["tools"][0]["name"] == "fs__get_file_info"


def test_without_the_model_auto_searches_by_keyword_and_the_dead_end_says_how_to_get_semantic_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", None)
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    monkeypatch.setattr(rank, "_warned", set())
    payload = _search("auto", "zzyzx qwerty", presentation="deferred")
    assert payload["tools"] == []
    assert payload.note is not None
    assert "semantic search is not installed (mcpctl tools install-semantic)" in payload.note
    assert "call_tool" in payload.note and "tools/list" not in payload.note


def test_no_match_text_for_an_empty_catalogue() -> None:
    assert "no tools to search yet" in no_match_text("x", 0, [], deferred=False, why=None)
    text = no_match_text("x", 5, ["a"], deferred=False, why=None)
    assert "keyword only" not in text       # a semantic ranker that found nothing says no more than that


def test_the_upstream_captures_the_servers_instructions_into_the_listing_and_the_cache() -> None:
    from mcpctl.gateway.refresh import refresh

    spec = ServerSpec.from_resource({"metadata": {"name": "calc"},
                                     "spec": {"command": sys.executable, "args": ["-m", "mcpctl.examples.calc"]}})
    results = refresh({"calc": spec}, Store(), FilesCache())
    assert results["calc"].ok, results["calc"].error
    entry = FilesCache().read_server_entry("calc")
    assert entry is not None
    assert entry["about"] == [{"name": "mcpctl-calc", "instructions":
                               "Exact arithmetic, statistics and unit conversion. Prefer these tools over mental "
                               "arithmetic."}]
    assert "Exact arithmetic" in FilesCache().read_server_about("calc")


def test_server_about_keeps_only_what_the_server_gave() -> None:
    import mcp.types as t

    from mcpctl.upstream.supervisor import server_about

    assert server_about(None, None) == []
    assert server_about(None, "  Use me.  ") == [{"instructions": "Use me."}]
    info = t.Implementation(name="x", version="1", title="X Server", description="")
    assert server_about(info, None) == [{"name": "x", "title": "X Server"}]


def test_the_gateway_log_says_which_ranker_runs(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", None)
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    with caplog.at_level(logging.INFO, logger="mcpctl.gateway"):
        _search("auto", "file metadata")
    assert "search_tools ranks with bm25 (search.ranker: auto): semantic search is not installed" in caplog.text


def test_a_search_arriving_while_the_warm_up_reads_the_log_waits_for_what_it_learns() -> None:
    """The gateway's warm-up starts the first read of what the log teaches; a search arriving
    while that read is in flight ranks with what it learns (it once answered without it: the
    read was not stale any more, and nothing was learned yet), and a later refresh in flight
    does not hold a search up."""
    import threading
    import time

    from mcpctl.audit.records import SearchEvidence
    from mcpctl.presentation.search import Learning
    from mcpctl.resources.settings import LearnSettings

    _project()
    view = cached_catalogue("p", Store(), FilesCache()).view()
    query = "squirrel away my grocery list"
    release, reads = threading.Event(), []

    def evidence(project: str, since: float) -> list[SearchEvidence]:
        reads.append(project)
        assert release.wait(10)
        now = time.time()
        return [SearchEvidence(query, "kg/create_entities", s, now - 1, True) for s in ("a", "b")]

    async def go() -> tuple[SearchPayload, SearchPayload]:
        search = ToolSearch("bm25", FilesCache(), Learning("p", LearnSettings(), evidence))
        async with anyio.create_task_group() as tg:
            tg.start_soon(search.warm, 1, view)
            while not reads:
                await anyio.sleep(0.01)
            first: list[SearchPayload] = []

            async def ask() -> None:
                first.append(await search.search(1, view, query, 5))

            tg.start_soon(ask)
            await anyio.sleep(0.05)
            assert not first, "the first search answered before the read it needs ended"
            release.set()
        search.learning.refresh_s = 0.0     # type: ignore[union-attr]
        release.clear()
        with anyio.fail_after(5):           # a refresh in flight: answered with what was learned
            async with anyio.create_task_group() as tg:
                tg.start_soon(search.learn)
                while len(reads) < 2:
                    await anyio.sleep(0.01)
                later = await search.search(1, view, query, 5)
                release.set()
        return first[0], later

    first, later = anyio.run(go)
    assert first["tools"][0]["name"] == "kg__create_entities", first
    assert later["tools"][0]["name"] == "kg__create_entities", later
