from __future__ import annotations

import pytest

from mcpctl.catalogue.analyze import STOP_WORDS, analyze


@pytest.mark.parametrize(("text", "expected"), [
    ("list_directory", ["list", "directori", "listdirectory"]),
    ("listDirectory", ["list", "directori", "listdirectory"]),
    ("list-directory", ["list", "directori", "listdirectory"]),
    ("fs.read", ["fs", "read", "fsread"]),
    ("/v1/nutrition", ["v", "1", "nutrit", "v1nutrition"]),
    ("getHTTPResponse", ["get", "http", "respons", "gethttpresponse"]),
    ("base64", ["base", "64", "base64"]),
])
def test_identifiers_split_into_parts_plus_joined_form(text: str, expected: list[str]) -> None:
    assert analyze(text) == expected


def test_function_words_dropped_but_content_verbs_kept() -> None:
    assert analyze("Please find the files of a user and list them") == ["find", "file", "user", "list"]
    for verb in ("get", "list", "find", "create", "search", "delete", "send"):
        assert verb not in STOP_WORDS


def test_stemming_merges_inflections_without_collapsing_news_into_new() -> None:
    assert analyze("files") == analyze("file")
    assert analyze("searching") == analyze("searches") == analyze("search")
    assert analyze("news") != analyze("new")


def test_cjk_characters_are_one_term_each() -> None:
    assert analyze("搜索关键词") == ["搜", "索", "关", "键", "词"]
    assert analyze("bing搜索") == ["bing", "搜", "索"]


def test_options_turn_stemming_and_stop_words_off() -> None:
    assert analyze("the files", stem=False, stop=False) == ["the", "files"]


def test_punctuation_and_empty_text_yield_nothing() -> None:
    assert analyze("") == []
    assert analyze(" -- ... // ") == []


def test_english_stemmer_alone_stems_as_the_package_does() -> None:
    """The English stemmer loaded without the package's other languages (`english_stemmer`) is the
    package's own: the same stem for every word of the fixtures' tools and requests."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    import snowballstemmer

    from mcpctl.catalogue.analyze import english_stemmer

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    words = {w.lower() for p in fixtures.glob("*/*.jsonl") for w in re.findall(r"[A-Za-z]{2,}", p.read_text())}
    assert len(words) > 3000
    alone, package = english_stemmer(), snowballstemmer.stemmer("english")
    assert type(alone).__name__ == "EnglishStemmer" and type(alone) is not type(package)
    assert [alone.stemWord(w) for w in sorted(words)] == [package.stemWord(w) for w in sorted(words)]
    # a process that ranks loads the English module only, not the package's 38 other languages
    code = ("import sys; from mcpctl.catalogue.analyze import analyze; analyze('running files'); "
            "print(sorted(m for m in sys.modules if 'stemmer' in m))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['_mcpctl_snowball.basestemmer', '_mcpctl_snowball.english_stemmer']"
