"""What ask sends to a model and returns (mcp-free)."""

from __future__ import annotations

from mcpctl.ask import answer
from mcpctl.ask.index import Hit
from mcpctl.ask.passages import Passage

HITS = [Hit(Passage("notes", "notes://2", "Release train", 0, "Leaves Thursday."), 0.9),
        Hit(Passage("docs", "doc://a", "Guide", 1, "Freeze on Wednesday.", "Freeze"), 0.4)]


def test_the_sampling_text_holds_the_passages_with_their_uris_then_the_question() -> None:
    text = answer.sampling_text("When?", HITS)
    assert text.index("[1] notes://2 (Release train)\nLeaves Thursday.") < text.index("[2] doc://a (Guide — Freeze)")
    assert text.endswith("Question: When?")


def test_citations_are_the_known_uris_the_answer_names_in_order() -> None:
    assert answer.cited("Thursday [doc://a], see [notes://2] and [doc://a] and [other://x].", HITS) == \
        ["doc://a", "notes://2"]


def test_the_payload_without_a_model_says_so_and_keeps_scores() -> None:
    p = answer.payload("When?", HITS, None, None, answer.NO_MODEL, 7)
    assert "answer" not in p and p["note"].startswith("No model was lent")
    assert [x["uri"] for x in p["passages"]] == ["notes://2", "doc://a"] and p["passages"][1]["heading"] == "Freeze"
    assert "notes://2 (score 0.900)" in answer.text(p)
