"""The labelled poisoning corpus (`tests/fixtures/poisoning`) and what `catalogue.poison` finds in it:
the split is the one written down before tuning, and recall and false positives hold their gates on
what is in the repository (benchmarks/bench_poison.py prints the whole table, shared sets included)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
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
