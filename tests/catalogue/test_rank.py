from __future__ import annotations

import logging
import math
import sys

import pytest

from mcpctl import catalogue
from mcpctl.catalogue import rank
from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams, schema_fields
from mcpctl.catalogue.rank import LexicalRanker, ToolDoc, build_ranker


def _doc(server: str, name: str, description: str = "", schema: dict | None = None) -> ToolDoc:
    return ToolDoc(f"{server}/{name}", server, name, description, schema or {})


CATALOGUE = [
    _doc("github", "create_issue", "Create a new issue in a repository",
         {"type": "object", "properties": {"repo": {"type": "string", "description": "owner/name"},
                                            "title": {"type": "string"}}}),
    _doc("github", "list_pull_requests", "List pull requests of a repository"),
    _doc("slack", "send_message", "Post a message to a channel",
         {"properties": {"channel": {"description": "Channel id"}, "text": {"description": "Message body"}}}),
    _doc("fs", "read_file", "Read the contents of a file from disk"),
    _doc("weather", "forecast", "Weather forecast for a city",
         {"properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}}}),
    _doc("Flight Radar", "flights/list-in-boundary", "List flights in a bounding box"),
]


def test_search_returns_ids_best_first_and_respects_top_k() -> None:
    ranker = build_ranker(CATALOGUE)
    hits = ranker.search("open an issue on the repository", 3)
    assert hits[0][0] == "github/create_issue"
    assert len(hits) <= 3
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert [i for i, _ in ranker.search("send a slack message", 1)] == ["slack/send_message"]


def test_top_k_zero_empty_catalogue_and_unmatched_query_return_nothing() -> None:
    assert build_ranker(CATALOGUE).search("read file", 0) == []
    assert build_ranker([]).search("read file", 5) == []
    assert build_ranker(CATALOGUE).search("zzzz qqqq", 5) == []


def test_parameter_names_and_descriptions_are_searched() -> None:
    ranker = build_ranker(CATALOGUE)
    assert ranker.search("latitude longitude", 1)[0][0] == "weather/forecast"
    assert ranker.search("message body", 1)[0][0] == "slack/send_message"


def test_ids_keep_slashes_in_tool_names() -> None:
    hits = build_ranker(CATALOGUE).search("flights in boundary", 1)
    assert hits[0][0] == "Flight Radar/flights/list-in-boundary"


def test_name_match_outranks_the_same_word_in_a_description() -> None:
    docs = [_doc("a", "helper", "can forecast things"), _doc("b", "forecast", "does things")]
    assert build_ranker(docs).search("forecast", 2)[0][0] == "b/forecast"


def test_ties_break_on_catalogue_order() -> None:
    docs = [_doc("s", f"tool{i}", "same words here") for i in range(5)]
    assert [i for i, _ in build_ranker(docs).search("same words", 5)] == [d.id for d in docs]


def test_bm25f_score_matches_the_formula_on_a_hand_computed_case() -> None:
    params = BM25FParams(weights={"name": 2.0, "description": 1.0}, k1=1.2, b=0.5)
    fields = [{"name": "alpha", "description": "alpha beta beta"}, {"name": "gamma", "description": "beta"}]
    index = BM25FIndex(["d0", "d1"], fields, params, analyzer=str.split)
    avg_name, avg_desc = 1.0, 2.0
    # d0: alpha in name (tf 1, len 1) and description (tf 1, len 3)
    tf = 2.0 * 1 / (1 - 0.5 + 0.5 * 1 / avg_name) + 1.0 * 1 / (1 - 0.5 + 0.5 * 3 / avg_desc)
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    expected = idf * tf * 2.2 / (1.2 + tf)
    hits = index.search("alpha alpha", 2)   # a repeated query term counts once
    assert hits == [("d0", pytest.approx(expected))]


def test_schema_fields_reads_top_level_properties_only() -> None:
    schema = {"properties": {"path": {"description": "File path"},
                             "opts": {"title": "Opts", "properties": {"deep": {"description": "nested"}}}}}
    assert schema_fields(schema) == ("path opts", "File path")
    assert schema_fields({}) == ("", "")
    assert schema_fields({"properties": ["not", "a", "map"]}) == ("", "")


def test_tool_doc_from_wire_format() -> None:
    doc = ToolDoc.from_wire("gh", {"name": "a/b", "description": None, "inputSchema": {"type": "object"}})
    assert doc == ToolDoc("gh/a/b", "gh", "a/b", "", {"type": "object"})


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown ranker 'neural'"):
        build_ranker(CATALOGUE, "neural")


def test_semantic_without_the_extra_falls_back_to_bm25_and_logs_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", None)   # import now fails
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    monkeypatch.setattr(rank, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="mcpctl.catalogue.rank"):
        first = build_ranker(CATALOGUE, "semantic")
        second = build_ranker(CATALOGUE, "hybrid")
    assert isinstance(first, LexicalRanker) and isinstance(second, LexicalRanker)
    assert first.search("read a file", 1)[0][0] == "fs/read_file"
    warnings = [r for r in caplog.records if "semantic extra" in r.getMessage()]
    assert len(warnings) == 1


def test_a_model_that_fails_to_load_falls_back_to_bm25(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        @staticmethod
        def build(*args: object, **kwargs: object) -> object:
            raise OSError("weights file truncated")

    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", Broken)
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    monkeypatch.setattr(rank, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="mcpctl.catalogue.rank"):
        ranker = build_ranker(CATALOGUE, "hybrid")
    assert isinstance(ranker, LexicalRanker)
    assert "weights file truncated" in caplog.text
