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
    ranker = build_ranker(CATALOGUE, "bm25")
    hits = ranker.search("open an issue on the repository", 3)
    assert hits[0][0] == "github/create_issue"
    assert len(hits) <= 3
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert [i for i, _ in ranker.search("send a slack message", 1)] == ["slack/send_message"]


def test_top_k_zero_empty_catalogue_and_unmatched_query_return_nothing() -> None:
    assert build_ranker(CATALOGUE, "bm25").search("read file", 0) == []
    assert build_ranker([], "bm25").search("read file", 5) == []
    assert build_ranker(CATALOGUE, "bm25").search("zzzz qqqq", 5) == []


def test_parameter_names_and_descriptions_are_searched() -> None:
    ranker = build_ranker(CATALOGUE, "bm25")
    assert ranker.search("latitude longitude", 1)[0][0] == "weather/forecast"
    assert ranker.search("message body", 1)[0][0] == "slack/send_message"


def test_ids_keep_slashes_in_tool_names() -> None:
    hits = build_ranker(CATALOGUE, "bm25").search("flights in boundary", 1)
    assert hits[0][0] == "Flight Radar/flights/list-in-boundary"


def test_name_match_outranks_the_same_word_in_a_description() -> None:
    docs = [_doc("a", "helper", "can forecast things"), _doc("b", "forecast", "does things")]
    assert build_ranker(docs, "bm25").search("forecast", 2)[0][0] == "b/forecast"


def test_ties_break_on_catalogue_order() -> None:
    docs = [_doc("s", f"tool{i}", "same words here") for i in range(5)]
    assert [i for i, _ in build_ranker(docs, "bm25").search("same words", 5)] == [d.id for d in docs]


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
    assert ToolDoc.from_wire("gh", {"name": "x"}, "GitHub: issues and pull requests").server_about == \
        "GitHub: issues and pull requests"


def test_the_servers_own_instructions_are_a_low_weight_field_of_each_of_its_tools() -> None:
    about = "memory-server\nA knowledge graph that remembers people, facts and how they relate"
    docs = [ToolDoc("kg/create_entities", "kg", "create_entities", "Create entities in the graph", {}, about),
            ToolDoc("kg/read_graph", "kg", "read_graph", "Read the graph", {}, about),
            ToolDoc("fs/get_file_info", "fs", "get_file_info", "Information about a file", {})]
    hits = build_ranker(docs, "bm25").search("remember facts about people", 3)
    assert {h[0] for h in hits} == {"kg/create_entities", "kg/read_graph"}     # found only through it
    # ... and a word in a tool's own name or description still counts for more than the same word there
    docs.append(ToolDoc("notes/remember", "notes", "remember", "Remember a fact", {}))
    assert build_ranker(docs, "bm25").search("remember a fact", 1)[0][0] == "notes/remember"


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown ranker 'neural'"):
        build_ranker(CATALOGUE, "neural")


def _without_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the `semantic` extra were not installed: importing the semantic path fails."""
    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", None)
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    monkeypatch.setattr(rank, "_warned", set())


def test_semantic_without_the_extra_falls_back_to_bm25_and_logs_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _without_model(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="mcpctl.catalogue.rank"):
        first = build_ranker(CATALOGUE, "semantic")
        second = build_ranker(CATALOGUE, "hybrid")
    assert isinstance(first, LexicalRanker) and isinstance(second, LexicalRanker)
    assert first.search("read a file", 1)[0][0] == "fs/read_file"
    warnings = [r for r in caplog.records if "not installed" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert first.fallback is not None and "mcpctl tools install-semantic" in first.fallback
    assert rank.describe(first, "semantic").startswith("semantic: bm25 (semantic search is not installed")
    assert rank.label(first, "semantic") == "semantic->bm25"


def test_auto_without_the_model_is_bm25_and_says_why_at_info_level(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _without_model(monkeypatch)
    with caplog.at_level(logging.INFO, logger="mcpctl.catalogue.rank"):
        ranker = build_ranker(CATALOGUE)                       # auto is the default
    assert isinstance(ranker, LexicalRanker) and ranker.kind == "bm25"
    assert rank.label(ranker, "auto") == "auto->bm25"
    assert "auto: bm25 (semantic search is not installed" in rank.describe(ranker, "auto")
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert build_ranker(CATALOGUE, "bm25").fallback is None
    assert rank.describe(build_ranker(CATALOGUE, "bm25"), "bm25") == "bm25"
    assert rank.semantic_status()[0] is False


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
