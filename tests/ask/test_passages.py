"""Passages cut at natural boundaries, and the index bounded in bytes (mcp-free, bm25)."""

from __future__ import annotations

import pytest

from mcpctl.ask.index import PassageIndex
from mcpctl.ask.passages import MAX_CHARS, cut, passages_of


def test_paragraphs_are_kept_whole_and_merged_up_to_the_limit() -> None:
    text = "# Title\n\nshort one.\n\nshort two.\n\n## Deploys\n\nThe train leaves on Thursday.\n"
    assert cut(text) == [("Title", "short one.\n\nshort two."), ("Deploys", "The train leaves on Thursday.")]


def test_long_paragraphs_are_cut_between_lines_then_words_then_anywhere() -> None:
    lines = "\n".join(f"line {i} " + "x" * 60 for i in range(40))
    pieces = [p for _, p in cut(lines)]
    assert all(len(p) <= MAX_CHARS for p in pieces) and "\n".join(pieces) == lines
    words = " ".join(["word"] * 1000)
    pieces = [p for _, p in cut(words)]
    assert all(len(p) <= MAX_CHARS for p in pieces) and " ".join(pieces) == words
    blob = "y" * 2000
    assert "".join(p for _, p in cut(blob)) == blob


def test_blank_text_has_no_passages() -> None:
    assert passages_of("s", "u", "n", " \n\n \n") == []


def test_the_index_holds_at_most_max_bytes_and_says_what_it_cut() -> None:
    ix = PassageIndex("bm25", max_bytes=5000)
    assert ix.put("a", "a://1", "one", "alpha " * 500)          # 3,000 bytes
    assert ix.put("a", "a://2", "two", "beta " * 1000)          # 5,000: cut to the 2,000 left
    assert ix.size == 5000 and "cut to 2000 bytes" in ix.skipped[("a", "a://2")]
    ix.put("a", "a://3", "three", "gamma")
    assert ix.size == 5000 and "not indexed" in ix.skipped[("a", "a://3")]
    assert not ix.put("a", "a://1", "one", "alpha " * 500)      # unchanged
    ix.keep_only("a", {"a://2"})
    assert ix.resources() == [("a", "a://2")] and ix.size == 2000 and ("a", "a://3") not in ix.skipped


def test_search_ranks_only_the_servers_given() -> None:
    ix = PassageIndex("bm25")
    ix.put("notes", "notes://1", "Release", "The release train leaves on Thursday.")
    ix.put("docs", "doc://1", "Release notes", "Release notes are written on Thursday.")
    assert {h.passage.server for h in ix.search("release Thursday", 5)} == {"notes", "docs"}
    hits = ix.search("release Thursday", 5, {"docs"})
    assert [h.passage.uri for h in hits] == ["doc://1"]
    assert ix.search("release", 5, set()) == []


def test_the_index_says_which_ranker_ranks_and_why_it_fell_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mcpctl ask` prints this after its count, so a reader (and the docs test) can tell a
    keyword ranking from a semantic one."""
    from mcpctl.catalogue import vectors

    index = PassageIndex("bm25")
    index.put("notes", "notes://1", "Release train", "The release train leaves every Thursday.")
    assert index.describe() == "bm25 (search.ranker: bm25)"

    def no_model() -> None:
        raise FileNotFoundError("no MiniLM files")

    monkeypatch.setattr(vectors, "find_model_dir", no_model)
    monkeypatch.setattr(vectors, "_model", None)
    monkeypatch.setattr(vectors, "_model_key", "")
    index = PassageIndex("auto")
    index.put("notes", "notes://1", "Release train", "The release train leaves every Thursday.")
    assert index.describe().startswith("bm25 (search.ranker: auto): the embedding model could not be loaded")
    assert "no MiniLM files" in index.describe()
