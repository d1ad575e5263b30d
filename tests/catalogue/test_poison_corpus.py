"""The labelled poisoning corpus (`tests/fixtures/poisoning`) and what `catalogue.poison` finds in it:
the split is the one written down before tuning, and recall and false positives hold their gates on
what is in the repository (benchmarks/bench_poison.py prints the whole table, shared sets included)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from mcpctl.catalogue.poison import scan_definition
from mcpctl.catalogue.poison.hidden import normalised
from mcpctl.catalogue.poison.schema import walk
from mcpctl.catalogue.poison.text import instructions, name_words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"      # ../shared/data beside the checkout
CORPUS = FIXTURES / "poisoning" / "corpus.jsonl"
README = FIXTURES / "poisoning" / "README.md"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_split_is_the_rule_written_before_tuning() -> None:
    seen: Counter[str] = Counter()
    for item in _rows(CORPUS):
        seen[item["technique"]] += 1
        k = seen[item["technique"]]
        assert item["split"] == ("dev" if k % 2 else "test"), item["id"]
        assert item["id"] == f"{item['technique']}-{k:02d}"


def test_every_technique_has_both_splits_and_every_source_is_listed() -> None:
    corpus = _rows(CORPUS)
    readme = README.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| ([a-z0-9-]+) \|", readme, re.MULTILINE))
    splits: dict[str, set[str]] = defaultdict(set)
    for item in corpus:
        splits[item["technique"]].add(item["split"])
        assert item["source"] in listed, item["id"]
        assert item["technique"] in listed, item["id"]
    assert all(s == {"dev", "test"} for s in splits.values()), splits
    assert len(corpus) == len({i["id"] for i in corpus}) >= 150
    assert CORPUS.read_bytes().isascii()


def _found(item: dict[str, Any]) -> bool:
    return bool(scan_definition(f"{item['server']}/{item['name']}", item))


@pytest.mark.parametrize("split", ["dev", "test"])
def test_recall_on_each_split_is_at_least_ninety_percent(split: str) -> None:
    items = [i for i in _rows(CORPUS) if i["split"] == split]
    missed = [i["id"] for i in items if not _found(i)]
    assert len(missed) <= 0.1 * len(items), missed


def test_every_technique_is_found_in_most_of_its_definitions() -> None:
    by_technique: dict[str, list[bool]] = defaultdict(list)
    for item in _rows(CORPUS):
        by_technique[item["technique"]].append(_found(item))
    weak = {t: f"{sum(hits)}/{len(hits)}" for t, hits in by_technique.items() if sum(hits) < 0.75 * len(hits)}
    assert not weak, weak


BENIGN = [("vendored", FIXTURES / name / "tools.jsonl") for name in ("user_requests", "livemcpbench_slice",
                                                                      "metatool_slice")]
BENIGN += [("vendored", Path(__file__).resolve().parents[2] / "src" / "mcpctl" / "bakeoff" / "data"
            / "user-requests-145" / "tools.jsonl")]
BENIGN += [("shared", SHARED / name / "tools.jsonl") for name in ("livemcpbench", "metatool", "toollens")]


@pytest.mark.parametrize(("where", "path"), BENIGN, ids=[p.parent.name for _, p in BENIGN])
def test_at_most_one_percent_of_real_tools_is_flagged(where: str, path: Path) -> None:
    if not path.exists():
        assert where == "shared", path
        pytest.skip(f"{path} absent (the shared datasets are read in place, never vendored)")
    tools = _rows(path)
    flagged = [f"{t['server']}/{t['name']}: {f.why}" for t in tools for f in scan_definition(t["name"], t)[:1]]
    assert len(flagged) <= 0.01 * len(tools), flagged


def _texts() -> list[str]:
    """Every text and name of the corpus and the vendored real tools, as written and as normalised."""
    out: list[str] = []
    for path in [CORPUS] + [p for w, p in BENIGN if w == "vendored"]:
        for row in _rows(path):
            found = walk(row.get("inputSchema"))
            out += [row.get("description") or "", row.get("title") or "", name_words(str(row.get("name")))]
            out += [t for _, _, t in found.texts] + [name_words(n) for _, _, n in found.names]
    return out + [normalised(t)[0] for t in out]


def test_the_word_gate_drops_no_match() -> None:
    """`marks.Rule` gates each pattern on the words a text holds, for speed: it must never hide a match."""
    for text in _texts():
        assert {w for w, _ in instructions(text)} == {w for w, _ in instructions(text, gate=False)}, text
