"""The content stage without a gateway: cutting at natural boundaries, joining back exactly, the store."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from mcpctl.catalogue.tokens import chars_estimate
from mcpctl.presentation.sections import (
    JSON,
    TEXT,
    SectionError,
    Sections,
    SectionStore,
    cheap_fits,
    cut_text,
    section_text,
)


def join(kind: str, sections: list[str]) -> str:
    """The documented rule: plain sections concatenate; JSON sections lose the closing bracket of
    one and the opening bracket of the next, with a comma between them."""
    if kind == TEXT or len(sections) == 1:
        return "".join(sections)
    inner = [s[:-1] if i == 0 else s[1:] if i == len(sections) - 1 else s[1:-1] for i, s in enumerate(sections)]
    return ",".join(inner)


def _all(text: str, n: int) -> tuple[str, list[str]]:
    cut = cut_text(text, n, chars_estimate)
    return cut.kind, [section_text(text, cut, i) for i in range(len(cut.bounds))]


def _paragraphs(seed: int, size: int) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "délta", "εψιλον", "zeta\r\n", "eta\n", "theta\n\n", "🙂"]
    out: list[str] = []
    while sum(map(len, out)) < size:
        out.append(rng.choice(words) + " ")
    return "".join(out)


@pytest.mark.parametrize("seed", range(5))
def test_text_is_cut_under_the_limit_and_joins_back_exactly(seed: int) -> None:
    text = _paragraphs(seed, 50_000)
    kind, sections = _all(text, 500)
    assert kind == TEXT and len(sections) > 1
    assert all(chars_estimate(s) <= 500 for s in sections)
    assert join(kind, sections) == text
    assert all(s.endswith("\n") for s in sections[:-1])        # at line or paragraph breaks


def test_text_without_breaks_is_cut_between_characters() -> None:
    text = "x" * 10_001
    kind, sections = _all(text, 100)
    assert kind == TEXT and {len(s) for s in sections[:-1]} == {400} and join(kind, sections) == text


@pytest.mark.parametrize("value", [
    [{"id": i, "name": f"item {i}", "tags": ["a", "b"] * (i % 5)} for i in range(3000)],
    {f"key {i}": {"v": [i] * (i % 7), "s": "x, y]}"} for i in range(3000)},
])
@pytest.mark.parametrize("indent", [None, 2])
def test_json_is_cut_between_members_every_section_parses_and_joins_back(value: Any, indent: int | None) -> None:
    text = "\n " + json.dumps(value, indent=indent) + "\n"
    kind, sections = _all(text, 1000)
    assert kind == JSON and len(sections) > 1
    assert all(chars_estimate(s) <= 1000 for s in sections)
    parts = [json.loads(s) for s in sections]
    if isinstance(value, list):
        assert [x for p in parts for x in p] == value
    else:
        assert {k: v for p in parts for k, v in p.items()} == value
    assert join(kind, sections) == text


@pytest.mark.parametrize("text", ['[1, 2, "' + "y" * 5000 + '", 3]', "[1, 2" + ", 3" * 3000, "{} " + "[1]" * 2000])
def test_json_with_an_element_over_the_limit_or_not_json_is_cut_as_text(text: str) -> None:
    kind, sections = _all(text, 300)
    assert kind == TEXT and join(kind, sections) == text


def test_cheap_check_never_says_fits_for_a_text_over_the_limit() -> None:
    assert cheap_fits("a" * 100, 100) and not cheap_fits("a" * 101, 100)
    assert not cheap_fits("é" * 100, 100)                   # 200 bytes: may be 200 cl100k tokens
    assert cheap_fits("é" * 25, 100)


def _stage(max_tokens: int = 100, **store: Any) -> Sections:
    return Sections(max_tokens, SectionStore(**store), lambda: chars_estimate)


def test_stage_cuts_text_blocks_only_and_leaves_other_blocks_and_structured_content() -> None:
    image = {"type": "image", "data": "A" * 5000, "mimeType": "image/png"}
    resource = {"type": "resource", "resource": {"uri": "x:/a", "text": "r" * 5000}}
    result = {"content": [{"type": "text", "text": "line\n" * 1000}, image, resource],
              "structuredContent": {"big": "s" * 5000}, "isError": False}
    outcome = _stage().apply(("s1", None), result)
    assert outcome.sections == 13 and outcome.chars == 10_000
    assert result["content"][1] is image and result["content"][2] is resource
    assert result["structuredContent"] == {"big": "s" * 5000}
    assert len(result["content"][0]["text"]) <= 400
    assert "read_result(result_id=" in result["content"][3]["text"]


def test_under_the_limit_or_turned_off_nothing_changes() -> None:
    small = {"content": [{"type": "text", "text": "x" * 400}]}
    assert _stage().apply(("s", None), small).sections == 0 and small["content"][0]["text"] == "x" * 400
    big = {"content": [{"type": "text", "text": "x" * 40_000}]}
    assert _stage(0).apply(("s", None), big).sections == 0 and len(big["content"]) == 1


def test_store_reads_only_for_its_owner_and_says_evicted_only_to_the_owner() -> None:
    now = [0.0]
    store = SectionStore(max_bytes=3000, ttl=60.0, clock=lambda: now[0])
    text = "x" * 2000
    cut = cut_text(text, 100, chars_estimate)
    rid = store.put(("s1", "cred"), text, cut)
    assert rid is not None
    assert store.read(("s1", "cred"), rid, 2) == ("x" * 400, 5)
    unknown = _error(store, ("s1", "cred"), "r-nope", 1)
    for other in (("s2", "cred"), ("s1", "other"), ("s1", None)):
        assert _error(store, other, rid, 1) == unknown.replace("'r-nope'", repr(rid))
    assert "sections 1 to 5" in _error(store, ("s1", "cred"), rid, 6)
    rid2 = store.put(("s1", "cred"), "y" * 2000, cut)          # over the cap together: the oldest goes
    assert rid2 is not None and "evicted" in _error(store, ("s1", "cred"), rid, 1)
    assert _error(store, ("s2", "cred"), rid, 1) == unknown.replace("'r-nope'", repr(rid))
    now[0] = 61.0
    assert "expired" in _error(store, ("s1", "cred"), rid2, 1)
    assert store.used == 0
    assert store.put(("s1", None), "z" * 5000, cut) is None     # alone over the cap: not kept


def _error(store: SectionStore, owner: tuple[str, str | None], rid: str, section: int) -> str:
    with pytest.raises(SectionError) as e:
        store.read(owner, rid, section)
    return str(e.value)


@pytest.mark.parametrize("value", [
    [f'x", "{i}' for i in range(4000)],                                  # the separator inside strings
    [{"a": [{"b": i}, {"c": [i, {"d": "}, {"}]}]} for i in range(1500)],   # and inside members
    [[i, [i, i], {"k": ", ["}] for i in range(2500)],
])
def test_a_separator_that_also_occurs_inside_members_still_cuts_only_between_them(value: Any) -> None:
    text = json.dumps(value)
    kind, sections = _all(text, 700)
    assert kind == JSON and len(sections) > 1 and all(chars_estimate(s) <= 700 for s in sections)
    assert [x for s in sections for x in json.loads(s)] == value
    assert join(kind, sections) == text


def test_one_credentials_results_never_evict_those_of_a_credential_holding_less() -> None:
    """keepMegabytes is shared by credentials: a credential flooding the store evicts its own
    oldest results once it holds most; another's kept sections stay readable (before: one pool,
    oldest first, so the flood evicted everybody's)."""
    store = SectionStore(max_bytes=100_000, ttl=600.0)
    cut = cut_text("x" * 2000, 100, chars_estimate)
    mine = [store.put(("s1", "alice"), f"{i}" + "a" * 9_000, cut) for i in range(3)]
    flood = [store.put(("s2", "mallory"), f"{i}" + "m" * 9_000, cut) for i in range(200)]
    assert all(rid is not None for rid in mine + flood)
    for rid in mine:
        assert rid is not None and store.read(("s1", "alice"), rid, 1)[0].startswith(f"{mine.index(rid)}")
    assert store.held("alice") < store.held("mallory") <= 100_000 - store.held("alice")
    assert "evicted to make room for newer results" in _error(store, ("s2", "mallory"), str(flood[0]), 1)
    bob = store.put(("s3", "bob"), "b" * 30_000, cut)           # a third credential takes its room from mallory
    assert bob is not None and store.held("bob") > 30_000 and store.held("alice") > 27_000
    assert store.used <= 100_000
    late = store.put(("s1", "alice"), "a" * 40_000, cut)       # now alice holds most: her own oldest go
    assert late is not None and store.held("bob") > 30_000
    assert "evicted to make room for newer results" in _error(store, ("s1", "alice"), str(mine[0]), 1)
