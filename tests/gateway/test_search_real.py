"""The new user of issue 12, with the real servers: the npm memory and filesystem servers and
mcp-server-time behind one project, listed for real (what they say about themselves included),
then searched the way a person asks. With the embedding model (auto -> hybrid) the memory
server's tools come first for "remember a fact about a person"; with BM25F alone a request that
names memory finds them (after the one tool whose description says "information"), and one that
shares no word with any tool says so in its text."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import SLACK, npm_bin

from ci_support import skip_unless_ci
from mcpctl.catalogue import rank
from mcpctl.catalogue.cache import FilesCache
from mcpctl.gateway.refresh import refresh_project
from mcpctl.presentation import search
from mcpctl.presentation.builtins import SearchPayload
from mcpctl.presentation.catalogue import cached_catalogue
from mcpctl.presentation.search import ToolSearch
from mcpctl.resources.store import Store

pytestmark = [pytest.mark.npm]

MEMORY, FILESYSTEM = npm_bin("mcp-server-memory"), npm_bin("mcp-server-filesystem")
TIME = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) or shutil.which("mcp-server-time")
REQUESTS = ("remember a fact about a person", "store information about a person in memory")


@pytest.fixture
def project(tmp_path: Path) -> str:
    if not (MEMORY and FILESYSTEM):
        skip_unless_ci("npm reference servers not installed (run: npm install --prefix .npm-servers "
                       "@modelcontextprotocol/server-{filesystem,memory})")
    if not TIME:
        skip_unless_ci("mcp-server-time is not installed (pip install mcp-server-time)")
    files = tmp_path / "files"
    files.mkdir()
    servers = {"memory": (MEMORY, [], {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
               "fs": (FILESYSTEM, [str(files)], {}),
               "time": (TIME, ["--local-timezone", "UTC"], {})}
    for name, (command, args, env) in servers.items():
        Store().put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                     "spec": {"command": command, "args": args, "env": env}})
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "demo"},
                 "spec": {"servers": list(servers)}})
    listed = refresh_project("demo", Store(), FilesCache())
    assert all(r.ok for r in listed.values()), {n: r.error for n, r in listed.items()}
    return "demo"


def _search(kind: str, query: str) -> SearchPayload:
    view = cached_catalogue("demo", Store(), FilesCache()).view()

    async def go() -> dict[str, Any]:
        return await ToolSearch(kind, FilesCache()).search(1, view, query, 5)

    payload = anyio.run(go)
    assert isinstance(payload, SearchPayload)
    return payload


def test_the_real_servers_about_sections_are_captured(project: str) -> None:
    for server in ("memory", "fs", "time"):
        entry = FilesCache().read_server_entry(server)
        assert entry is not None and entry["about"] and entry["about"][0].get("name"), server
    assert "memory" in FilesCache().read_server_about("memory")


def test_with_the_model_a_memory_tool_comes_first(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not rank.semantic_status()[0]:
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed")
    # The first search waits up to 10 s for a small catalogue's embeddings; a loaded machine embeds slower.
    monkeypatch.setattr(search, "FIRST_SEARCH_WAIT_S", search.FIRST_SEARCH_WAIT_S * SLACK)
    for query in REQUESTS:
        payload = _search("auto", query)
        first = payload["tools"][0]["name"]
        assert first.startswith("memory__"), (query, [t["name"] for t in payload["tools"]])
        assert payload.note is None and payload["total_searched"] == len(cached_catalogue("demo", Store(), FilesCache()).view().searchable)


def test_with_bm25_alone_a_request_naming_memory_reaches_the_memory_server_and_none_is_a_dead_end(
    project: str,
) -> None:
    # "memory" is only in the server's name and its about section ("memory-server": the npm
    # server gives no title or instructions), so BM25F ranks the one tool whose description says
    # "information" first, and the memory server's tools right after it.
    payload = _search("bm25", "store information about a person in memory")
    names = [t["name"] for t in payload["tools"]]
    assert sum(n.startswith("memory__") for n in names) >= 4, names
    # No word of this request is in any tool ("a fact" would be: search reads it as an
    # observation; "keep in mind" as something to remember): the result says so, and how to find tools.
    payload = _search("bm25", "Lena is my sister")
    assert dict(payload) == {"tools": [], "total_searched": len(cached_catalogue("demo", Store(), FilesCache()).view().searchable)}
    assert payload.note is not None and "No tool matched 'Lena is my sister'" in payload.note
    assert "search.ranker: bm25" in payload.note
    assert "tools/list" in payload.note and "memory, fs, time" in payload.note
