"""`mcpctl eval` on datasets and on the project's own recorded traffic."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl import catalogue
from mcpctl.audit.log import SEARCH_TOOL_ID, CallRecord, InvocationLog
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.evaluation.metrics import METRIC_NAMES
from mcpctl.resources.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LIVE = str(FIXTURES / "livemcpbench_slice")
META = str(FIXTURES / "metatool_slice")


def test_eval_prints_every_metric_per_dataset(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "--dataset", LIVE, "--dataset", META, "-r", "bm25"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(m in lines[0] for m in METRIC_NAMES)
    assert lines[1].split()[:5] == ["livemcpbench_slice", "bm25", "test", "8", "182"]
    assert lines[2].split()[:5] == ["metatool_slice", "bm25", "test", "25", "30"]


def test_eval_json_output_is_a_stable_contract(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "-d", META, "--split", "dev", "-r", "bm25", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data) == 1
    row = data[0]
    assert set(row) == {"dataset", "ranker", "split", "queries", "tools", "learned", "metrics"}
    assert row["learned"] is None
    assert (row["dataset"], row["ranker"], row["split"], row["queries"]) == ("metatool_slice", "bm25", "dev", 25)
    assert list(row["metrics"]) == list(METRIC_NAMES)
    assert all(0.0 <= v <= 1.0 for v in row["metrics"].values())
    assert row["metrics"]["R@10"] >= row["metrics"]["R@5"] >= row["metrics"]["R@1"]


def test_eval_labels_a_fallback_ranker(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcpctl.catalogue.semantic", None)   # as without the extra
    monkeypatch.delattr(catalogue, "semantic", raising=False)
    result = runner.invoke(app, ["eval", "-d", META, "-r", "bm25", "-r", "semantic", "-r", "auto", "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["ranker"] for r in rows] == ["bm25", "semantic->bm25", "auto->bm25"]
    assert rows[0]["metrics"] == rows[1]["metrics"] == rows[2]["metrics"]
    assert "semantic search is not installed" in result.stderr
    result = runner.invoke(app, ["eval", "-d", META, "-o", "json"])          # auto is the default
    assert [r["ranker"] for r in json.loads(result.stdout)] == ["auto->bm25"]


def test_eval_without_input_explains_what_to_give(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval"])
    assert result.exit_code == 1
    assert "nothing to evaluate" in result.stderr and "--dataset DIR" in result.stderr


def test_eval_rejects_unknown_ranker_and_split(runner: CliRunner) -> None:
    assert runner.invoke(app, ["eval", "-d", META, "-r", "neural"]).exit_code == 2
    assert runner.invoke(app, ["eval", "-d", META, "--split", "train"]).exit_code == 2


def test_eval_dataset_without_dev_portion_is_skipped_with_a_warning(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "-d", LIVE, "--split", "dev"])
    assert result.exit_code == 1
    assert "has no dev queries" in result.stderr


def test_eval_missing_dataset_names_the_file(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "-d", str(tmp_path)])
    assert result.exit_code == 3
    assert "tools.jsonl not found" in result.stderr


def _project(name: str, servers: list[str], search: dict | None = None) -> None:
    for server in servers:      # registered (their tools come from the catalogue cache below)
        Store().put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                     "spec": {"command": "true"}})
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": name},
                 "spec": {"servers": servers, "tools": {"disabled": ["fs/delete_*"]},
                          "search": search or {}}})


FS_TOOLS = [
    {"name": "read_file", "description": "Read a file from disk",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "write_file", "description": "Write text to a file"},
    {"name": "delete_file", "description": "Delete a file"},
]
WEB_TOOLS = [{"name": "fetch", "description": "Fetch a URL from the internet and return its content"}]


def _record(project: str, pairs: list[tuple[str, str]]) -> None:
    t0 = time.time()
    recs = []
    for i, (query, tool) in enumerate(pairs):
        recs.append(CallRecord(t0 + 2 * i, 1.0, project, "search_tools", SEARCH_TOOL_ID, "ok",
                               session_id=f"s{i}", query=query))
        recs.append(CallRecord(t0 + 2 * i + 1, 1.0, project, tool.replace("/", "__"), tool, "ok",
                               session_id=f"s{i}"))
    with InvocationLog() as log:
        log.record_many(recs)


def test_eval_from_log_without_recorded_searches_says_how_to_turn_recording_on(runner: CliRunner) -> None:
    _project("p", ["fs"])
    result = runner.invoke(app, ["eval", "--from-log", "--project", "p"])
    assert result.exit_code == 1
    assert "no recorded searches" in result.stderr
    assert "recordQueries: true" in result.stderr


def test_eval_from_log_scores_the_current_ranker_on_recorded_pairs(runner: CliRunner) -> None:
    _project("p", ["fs", "web"], {"recordQueries": True, "ranker": "bm25"})
    FilesCache().write_server_tools("fs", FS_TOOLS)
    FilesCache().write_server_tools("web", WEB_TOOLS)
    _record("p", [("read the config file", "fs/read_file"),
                  ("download a web page", "web/fetch"),
                  ("remove a file", "fs/delete_file"),      # disabled now: left out
                  ("save notes to a file", "fs/write_file")])
    result = runner.invoke(app, ["eval", "--from-log", "-p", "p", "-o", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["dataset"], row["ranker"], row["split"], row["queries"], row["tools"]) == ("log:p", "bm25", "log", 3, 3)
    assert row["metrics"]["R@5"] == 1.0
    assert "1 of 4 recorded pairs" in result.stderr


def test_eval_from_log_needs_a_project(runner: CliRunner) -> None:
    assert runner.invoke(app, ["eval", "--from-log"]).exit_code == 2
    result = runner.invoke(app, ["eval", "--from-log", "-p", "nope"])
    assert result.exit_code == 3 and "project 'nope' not found" in result.stderr


def test_eval_from_log_split_time_learns_from_the_older_pairs_and_scores_the_newer(runner: CliRunner) -> None:
    """`--split time`: the newest third scored without and with what the older two thirds teach
    (here: "squirrel away" means writing a file, which no tool says)."""
    _project("p", ["fs", "web"], {"recordQueries": True, "ranker": "bm25"})
    FilesCache().write_server_tools("fs", FS_TOOLS)
    FilesCache().write_server_tools("web", WEB_TOOLS)
    _record("p", [("squirrel away my notes", "fs/write_file")] * 4 + [("squirrel away my list", "fs/write_file")] * 2)
    result = runner.invoke(app, ["eval", "--from-log", "-p", "p", "--split", "time", "-o", "json"])
    assert result.exit_code == 0, result.output
    before, after = json.loads(result.stdout)
    assert (before["split"], before["queries"], before["learned"]) == ("time", 2, "nothing")
    assert after["learned"].startswith("4 older pairs (4 uses of 1 tools)")
    assert before["metrics"]["R@1"] < after["metrics"]["R@1"] == 1.0


def test_eval_learn_scores_the_test_portion_after_learning_from_dev(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "-d", META, "-r", "bm25", "--learn", "3", "-o", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["split"] == "test" and row["learned"].startswith("3/tool from dev (next: ")
    plain = json.loads(runner.invoke(app, ["eval", "-d", META, "-r", "bm25", "-o", "json"]).stdout)[0]
    assert row["metrics"]["R@5"] >= plain["metrics"]["R@5"]
    bad = runner.invoke(app, ["eval", "-d", META, "--learn", "3", "--split", "dev"])
    assert bad.exit_code == 2 and "would score what it learned from" in bad.output
    bad = runner.invoke(app, ["eval", "-d", META, "--learn", "3", "--attach", "all"])
    assert bad.exit_code == 2
