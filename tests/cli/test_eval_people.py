"""The two people-phrased sets, scored by `mcpctl eval` as a user would run it (issue 31): what
search reaches on requests as people phrase them, held as a floor in CI.

The floors are the measured test-portion figures of issue 31 less a query's worth (1/66 and 1/72):
a change that costs a request fails here. With the model (CI installs it) `auto` is the hybrid
ranker; BM25F is held too. docs/ranking.md has the figures and how they were measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ci_support import skip_unless_ci
from mcpctl.catalogue.rank import semantic_status
from mcpctl.cli import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# dataset -> ranker -> metric -> floor (test portion)
FLOORS = {   # measured (the twelfth pass): people bm25 .818 / .909, hybrid .864 / .970; user bm25 .736 / .903, hybrid .882 / .972
    "people_requests": {"bm25": {"R@1": 0.80, "R@5": 0.89}, "auto->hybrid": {"R@1": 0.84, "R@5": 0.95}},
    "user_requests": {"bm25": {"R@1": 0.72, "R@5": 0.88}, "auto->hybrid": {"R@1": 0.86, "R@5": 0.95}},
}


@pytest.mark.timeout(900)          # embeds the 60 tools where the model is installed (once per cache)
def test_people_phrased_requests_find_the_tool_they_mean(runner: CliRunner) -> None:
    if not semantic_status()[0]:
        skip_unless_ci("the packaged MiniLM weights are not installed (mcpctl tools install-semantic)")
    r = runner.invoke(app, ["eval", "-d", str(FIXTURES / "people_requests"), "-d", str(FIXTURES / "user_requests"),
                            "-r", "bm25", "-r", "auto", "-o", "json"])
    assert r.exit_code == 0, r.output
    got = {(row["dataset"], row["ranker"]): row for row in json.loads(r.stdout)}
    assert {k[0] for k in got} == set(FLOORS)
    for dataset, rankers in FLOORS.items():
        for ranker, floors in rankers.items():
            row = got[(dataset, ranker)]
            assert row["split"] == "test" and row["queries"] in (66, 72)
            for metric, floor in floors.items():
                assert row["metrics"][metric] >= floor, (dataset, ranker, metric, row["metrics"])
