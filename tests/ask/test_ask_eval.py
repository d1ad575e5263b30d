"""`mcpctl eval --dataset tests/fixtures/ask`: ask's retrieval scored on the fixed questions."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.evaluation.ask import load_ask_dataset

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "ask"


def test_the_dataset_loads_and_every_answer_is_a_resource_of_it() -> None:
    ds = load_ask_dataset(DATA)
    assert len(ds.queries) == 30 and len(ds.resources) == 19
    assert {r.server for r in ds.resources} == {"notes", "everything"}


def test_eval_scores_ask_retrieval_with_bm25(tmp_home: Path, runner: CliRunner) -> None:
    r = runner.invoke(app, ["eval", "--dataset", str(DATA), "--ranker", "bm25", "-o", "json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["dataset"] == "ask:ask" and row["ranker"] == "bm25" and row["queries"] == 30
    assert 0.5 <= row["metrics"]["R@5"] <= 1.0          # measured 0.833 (docs/ask.md)


def test_a_question_naming_an_unknown_resource_is_refused_with_its_line(tmp_path: Path, runner: CliRunner) -> None:
    (tmp_path / "r.jsonl").write_text(json.dumps({"server": "s", "uri": "s://1", "name": "one", "text": "x"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"id": "q", "text": "what?", "uris": ["s://2"]}) + "\n")
    r = runner.invoke(app, ["eval", "--dataset", str(tmp_path), "--ranker", "bm25"])
    assert r.exit_code != 0 and "queries.jsonl:1" in r.output and "s://2" in r.output
