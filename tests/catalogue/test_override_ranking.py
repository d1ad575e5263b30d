"""Overrides change what they name and nothing else: the shared sets' slices (MetaTool,
LiveMCPBench; tests/fixtures/*_slice, with their attribution) ranked through a project's catalogue
(the overrides stage, then `presentation.search.tool_docs`) rank exactly as the evaluation ranks the
dataset itself when the project overrides nothing, and a project that shortens three tools'
descriptions leaves every other tool's searchable text as its server wrote it (issue 38)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from mcpctl.catalogue.memcache import MemoryCache
from mcpctl.catalogue.rank import build_ranker
from mcpctl.evaluation.datasets import load_dataset
from mcpctl.evaluation.evaluate import evaluate
from mcpctl.presentation.catalogue import Catalogue
from mcpctl.presentation.search import tool_docs
from mcpctl.resources.kinds import ProjectSpec

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _listings(folder: Path) -> dict[str, list[dict[str, Any]]]:
    import json

    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (folder / "tools.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out[rec.pop("server")].append(rec)
    return out


def _catalogue(listings: dict[str, list[dict[str, Any]]], overrides: dict[str, Any]) -> Catalogue:
    spec: dict[str, Any] = {"servers": list(listings)}
    if overrides:
        spec["tools"] = {"overrides": overrides}
    cat = Catalogue("p", ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": spec}))
    cat.set_listings({s: {"tools": tools} for s, tools in listings.items()})
    return cat


def _docs(cat: Catalogue) -> list[Any]:
    return tool_docs({t.canonical_id: t for t in cat.tools}, MemoryCache())


@pytest.mark.parametrize("name", ["metatool_slice", "livemcpbench_slice"])
def test_a_project_without_overrides_ranks_the_shared_sets_as_the_evaluation_does(name: str) -> None:
    ds = load_dataset(FIXTURES / name)
    docs = _docs(_catalogue(_listings(FIXTURES / name), {}))
    assert sorted(docs, key=lambda d: d.id) == sorted(ds.tools, key=lambda d: d.id)
    through, direct = build_ranker(docs, "bm25"), build_ranker(list(ds.tools), "bm25")
    for q in ds.queries:
        assert [i for i, _ in through.search(q.text, 10)] == [i for i, _ in direct.search(q.text, 10)], q.text
    assert evaluate(through, ds.queries) == evaluate(direct, ds.queries)


@pytest.mark.parametrize("name", ["metatool_slice", "livemcpbench_slice"])
def test_shortening_the_three_longest_descriptions_leaves_every_other_tool_as_its_server_wrote_it(
        name: str) -> None:
    listings = _listings(FIXTURES / name)
    longest = sorted(((len(t.get("description") or ""), f"{s}/{t['name']}") for s, tools in listings.items()
                      for t in tools), reverse=True)[:3]
    overridden = {cid: {"description": f"Short wording {n}."} for n, (_, cid) in enumerate(longest)}
    before = {d.id: d for d in _docs(_catalogue(listings, {}))}
    after = {d.id: d for d in _docs(_catalogue(listings, overridden))}
    assert before.keys() == after.keys()
    changed = {cid for cid in before if before[cid] != after[cid]}
    assert changed == set(overridden)
    assert all(after[cid].description == o["description"] for cid, o in overridden.items())
