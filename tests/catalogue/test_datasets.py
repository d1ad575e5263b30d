from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpctl.catalogue.analyze import analyze
from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams
from mcpctl.catalogue.rank import ToolDoc, build_ranker
from mcpctl.errors import InvalidResource, NotFound
from mcpctl.evaluation.datasets import find_datasets, load_dataset, replicate
from mcpctl.evaluation.evaluate import evaluate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _write(folder: Path, tools: list[dict], queries: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return folder


def test_ids_are_server_slash_name_and_never_split(tmp_path: Path) -> None:
    folder = _write(tmp_path / "d", [{"server": "Flight Radar", "name": "flights/list", "description": "x"}],
                    [{"id": "1", "query": "q", "relevant_groups": [["Flight Radar/flights/list"]]}])
    ds = load_dataset(folder)
    assert ds.tools[0].id == "Flight Radar/flights/list"
    assert ds.tools[0].name == "flights/list"
    assert ds.queries[0].groups == (frozenset({"Flight Radar/flights/list"}),)


def test_portions_come_from_split_or_fold(tmp_path: Path) -> None:
    tools = [{"server": "s", "name": "t", "description": ""}]
    gold = [["s/t"]]
    folder = _write(tmp_path / "d", tools, [
        {"id": "a", "query": "q", "relevant_groups": gold, "split": "train"},
        {"id": "b", "query": "q", "relevant_groups": gold, "split": "test"},
        {"id": "c", "query": "q", "relevant_groups": gold, "fold": 4},
        {"id": "d", "query": "q", "relevant_groups": gold, "fold": 0},
        {"id": "e", "query": "q", "relevant_groups": gold},
    ])
    ds = load_dataset(folder)
    assert [q.id for q in ds.select("test")] == ["b", "c", "e"]
    assert [q.id for q in ds.select("dev")] == ["a", "d"]
    assert len(ds.select("all")) == 5


def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    folder = _write(tmp_path / "d", [{"server": "s", "name": "t"}], [])
    (folder / "queries.jsonl").write_text('{"id": 1, "query": "q", "relevant_groups": [["s/t"]]}\n{oops\n')
    with pytest.raises(InvalidResource, match=r"queries.jsonl:2: not valid JSON"):
        load_dataset(folder)
    (folder / "queries.jsonl").write_text('{"id": 1, "query": "q", "relevant_groups": [["s/missing"]]}\n')
    with pytest.raises(InvalidResource, match=r"queries.jsonl:1: gold tool 's/missing' is not in tools.jsonl"):
        load_dataset(folder)
    with pytest.raises(NotFound, match=r"tools\.jsonl not found"):
        load_dataset(tmp_path / "nowhere")


def test_vendored_slices_load() -> None:
    assert [p.name for p in find_datasets(FIXTURES)] == ["livemcpbench_slice", "metatool_slice", "people_requests",
                                                          "tuning_requests", "tuning_requests_10", "tuning_requests_11", "tuning_requests_2",
                                                          "tuning_requests_3", "tuning_requests_4", "tuning_requests_5",
                                                          "tuning_requests_6", "tuning_requests_7", "tuning_requests_8",
                                                          "tuning_requests_9", "user_requests"]
    sizes = {"tuning_requests": 98} | {f"tuning_requests_{n}": 100 for n in range(2, 12)}
    for name, size in sizes.items():       # the tuning sets: every request dev, none test
        tuning = load_dataset(FIXTURES / name)
        assert (name, len(tuning.select("dev")), len(tuning.select("test"))) == (name, size, 0)
    live = load_dataset(FIXTURES / "livemcpbench_slice")
    meta = load_dataset(FIXTURES / "metatool_slice")
    assert len(live.queries) == 8 and all(q.portion is None for q in live.queries)
    assert len(meta.select("test")) == 25 and len(meta.select("dev")) == 25


def _plain_bm25(tools: list[ToolDoc]) -> BM25FIndex:
    """The floor: one field of name + description, no stemming or stop words, k1 1.2, b .75."""
    return BM25FIndex([t.id for t in tools], [{"text": f"{t.name} {t.description}"} for t in tools],
                      BM25FParams(weights={"text": 1.0}, k1=1.2, b=0.75),
                      analyzer=lambda s: analyze(s, stem=False, stop=False))


@pytest.mark.parametrize("name", ["livemcpbench_slice", "metatool_slice"])
@pytest.mark.timeout(600)       # embeds the slice with the model when installed: CPU-bound, slower under load
def test_default_ranker_beats_plain_bm25_on_vendored_slices(name: str) -> None:
    ds = load_dataset(FIXTURES / name)
    queries = ds.select("all")
    ours = evaluate(build_ranker(ds.tools), queries)
    floor = evaluate(_plain_bm25(list(ds.tools)), queries)
    assert ours["R@5"] + ours["MRR@10"] > floor["R@5"] + floor["MRR@10"]


def test_replicate_reaches_the_size_with_unique_ids() -> None:
    ds = load_dataset(FIXTURES / "metatool_slice")
    big = replicate(ds.tools, 100)
    assert len(big) == 100 and len({t.id for t in big}) == 100
    assert big[:30] == list(ds.tools)


def test_user_requests_loads_with_its_servers_and_scores() -> None:
    ds = load_dataset(FIXTURES / "user_requests")
    assert len(ds.tools) == 60 and len({t.server for t in ds.tools}) == 8
    assert len(ds.select("test")) >= 60 and len(ds.select("dev")) == 36
    about = {t.server: t.server_about for t in ds.tools}
    assert about["memory"] == "memory-server"
    assert about["notes"] == "mcpctl-notes\nA personal notes store."     # the first sentence of its instructions
    ids = {t.id for t in ds.tools}
    assert all(m in ids for q in ds.queries for g in q.groups for m in g)
    from mcpctl.catalogue.rank import build_ranker
    from mcpctl.evaluation.evaluate import evaluate

    metrics = evaluate(build_ranker(ds.tools, "bm25"), ds.select("test"))
    assert 0.3 < metrics["R@5"] <= metrics["R@10"] <= 1.0
