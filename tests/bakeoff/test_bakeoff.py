"""The bake-off's whole path: the stand-in model (tests/servers/fake_llm.py) drives the real
gateway (`mcpctl serve` over stdio) on a 19-tool catalogue of 4 stub servers, 6 tasks, through
the CLI: one run, the three scripted policies as three models on the same four gateways.

What each scripted policy must produce:
- first-listed calls tools in listing order: under flat its first pick is a built-in (never
  correct) and it wanders; under favourite-index (with or without the instruction) and deferred
  the favourites come first, so its first pick is right exactly for the tasks whose correct tool
  is the first favourite (time/get_current_time: ur-032 and ur-086), and it wanders less.
- follow-instructions prefers a favourite that shares two words with the task only when the
  instruction names favourites (ur-046: a wrong favourite); without it, the best match of the list.
- search-first searches once, then calls the top result: the same picks under flat and deferred
  (the same ranker), through call_tool where the tool is not listed, for a fraction of the tokens.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ci_support import SLACK

HERE = Path(__file__).resolve().parent
CATALOGUE = HERE / "catalogue"
TASKS = HERE / "tasks.jsonl"
MCPCTL = str(Path(sys.executable).parent / "mcpctl")
MODELS = ("first-listed", "follow-instructions", "search-first")
PRESENTATIONS = ["flat", "favourite-index", "favourite-index-without-instruction", "deferred"]
FIRST_FAVOURITE_TASKS = {"ur-032", "ur-086"}


class Run:
    def __init__(self, save: Path, report: dict[str, Any], url: str) -> None:
        self.save, self.report, self.url = save, report, url
        self.rows = [json.loads(line) for line in save.read_text().splitlines()]

    def of(self, model: str, presentation: str) -> dict[str, dict[str, Any]]:
        return {r["task"]: r for r in self.rows if r["model"] == model and r["presentation"] == presentation}

    def summary(self, model: str, presentation: str) -> dict[str, Any]:
        return next(s for s in self.report["summaries"] if s["model"] == model and s["presentation"] == presentation)


@pytest.fixture(scope="module")
def run(fake_llm: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    home = tmp_path_factory.mktemp("home")
    save = home / "run.jsonl"
    r = subprocess.run([MCPCTL, "bakeoff", "--endpoint", fake_llm, "--model", ",".join(MODELS),
                        "--catalogue", str(CATALOGUE), "--tasks", str(TASKS), "--ranker", "bm25",
                        "--save", str(save), "-o", "json"], capture_output=True, text=True, timeout=180 * SLACK,
                       env={**__import__("os").environ, "MCPCTL_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    yield Run(save, json.loads(r.stdout), fake_llm)


def test_report_states_what_was_measured(run: Run) -> None:
    meta = run.report["runs"][0]
    assert meta["models"] == list(MODELS) and meta["endpoint"] == run.url
    assert meta["presentations"] == PRESENTATIONS and meta["trials"] == 1 and meta["seed"] == 0
    assert meta["favourites"] == ["time/get_current_time", "calc/convert_units", "notes/create_note"]
    assert meta["catalogue"] == str(CATALOGUE) and meta["tasks_file"] == str(TASKS) and meta["tasks"] == 6
    assert {"temperature", "mcpctl", "tokens", "max_turns", "started"} <= meta.keys()
    assert len(run.rows) == 6 * 4 * 3                  # one line per task x presentation x model (x trial)
    assert "Wilson" in run.report["intervals"]


def test_first_listed_first_pick_only_for_the_first_favourite_and_wanders_under_flat(run: Run) -> None:
    flat = run.of("first-listed", "flat")
    assert not any(r["first_pick"] for r in flat.values())
    assert all(r["wander"] >= 1 and r["calls"][0]["name"] == "search_tools" for r in flat.values())
    for p in PRESENTATIONS[1:]:
        got = run.of("first-listed", p)
        assert {t for t, r in got.items() if r["first_pick"]} == FIRST_FAVOURITE_TASKS, p
        assert sum(r["wander"] for r in got.values()) < sum(r["wander"] for r in flat.values()), p
    fi = run.of("first-listed", "favourite-index")
    assert fi["ur-053"]["wander"] == 1 and fi["ur-041"]["wander"] == 2    # the 2nd and 3rd favourites
    assert run.summary("first-listed", "flat")["first_pick"]["value"] == 0.0
    s = run.summary("first-listed", "favourite-index")["first_pick"]
    assert s["value"] == 2 / 6 and 0.0 < s["low"] < 2 / 6 < s["high"] < 1.0          # Wilson, n = 6


def test_follow_instructions_prefers_favourites_only_when_told(run: Run) -> None:
    told = run.of("follow-instructions", "favourite-index")
    untold = run.of("follow-instructions", "favourite-index-without-instruction")
    firsts = {t: (told[t]["calls"][0]["name"], untold[t]["calls"][0]["name"]) for t in told}
    # "change the title of my shopping note": the favourite create_note shares two words with it,
    # update_note three; told to prefer favourites, the policy takes the favourite (and is wrong)
    assert firsts["ur-046"] == ("favourite__create_note", "all__notes__update_note")
    assert not told["ur-046"]["first_pick"] and untold["ur-046"]["first_pick"]
    assert all(a == b for t, (a, b) in firsts.items() if t != "ur-046"), firsts


def test_search_first_same_picks_flat_and_deferred_for_fewer_tokens(run: Run) -> None:
    flat, deferred = run.of("search-first", "flat"), run.of("search-first", "deferred")
    for task in flat:
        assert flat[task]["searches"] == deferred[task]["searches"] == 1
        assert flat[task]["calls"][0]["name"] == "search_tools"
        assert [c["tool"] for c in flat[task]["calls"]] == [c["tool"] for c in deferred[task]["calls"]]
    assert any(c["name"] == "call_tool" for r in deferred.values() for c in r["calls"])
    assert not any(c["name"] == "call_tool" for r in flat.values() for c in r["calls"])
    assert sum(r["first_pick"] for r in flat.values()) >= 3
    assert run.summary("search-first", "deferred")["tool_def_tokens"] < \
        run.summary("search-first", "flat")["tool_def_tokens"] / 2


def test_report_redraws_and_compares_saved_runs(run: Run, runner: CliRunner) -> None:
    from mcpctl.cli import app  # in-process: redrawing a file starts nothing

    r = runner.invoke(app, ["bakeoff", "report", str(run.save), str(run.save), "-o", "markdown"])
    assert r.exit_code == 0, r.output
    run_id = run.report["runs"][0]["id"]
    assert f"models {', '.join(MODELS)} at {run.url}" in r.stdout
    assert f"| {run_id} | first-listed | favourite-index | 6 | 0.33 [" in r.stdout   # the file twice: once
    assert r.stdout.count(f"| {run_id} |") == 12
    table = runner.invoke(app, ["bakeoff", "report", str(run.save)])
    assert table.exit_code == 0 and "first pick" in table.stdout


def test_bad_input_is_named(fake_llm: str, tmp_path: Path, runner: CliRunner) -> None:
    from mcpctl.cli import app

    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": "x", "query": "hi", "relevant_groups": [["nowhere/tool"]]}\n')
    cases = [
        (["--catalogue", str(CATALOGUE), "--tasks", str(TASKS), "--presentations", "flat,sideways"], "sideways"),
        (["--catalogue", str(CATALOGUE), "--project", "p", "--tasks", str(TASKS)], "exactly one of"),
        (["--catalogue", str(CATALOGUE), "--tasks", str(bad)], "task 'x'"),
        (["--catalogue", str(HERE), "--tasks", str(TASKS)], "no tools.jsonl"),
        (["--project", "nope", "--tasks", str(TASKS)], "no such project"),
    ]
    for extra, needle in cases:
        r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "first-listed", *extra])
        assert r.exit_code != 0 and needle in r.output, (extra, r.output)
    with socket.socket() as held:          # bound, not listening: refused, and no one else's port
        held.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
        r = runner.invoke(app, ["bakeoff", "--endpoint", down, "--model", "m", "--catalogue", str(CATALOGUE),
                                "--tasks", str(TASKS)])
    assert r.exit_code != 0 and f"--endpoint {down}" in r.output and "running" in r.output, r.output
    r = runner.invoke(app, ["bakeoff", "report", str(bad)])
    assert r.exit_code != 0 and "not a bake-off result row" in r.output


def test_a_model_refused_mid_run_is_one_clear_error(fake_llm: str, tmp_path: Path, runner: CliRunner) -> None:
    """The endpoint refuses the model once the gateways (started in a task group) are up: the run stops
    with the endpoint's own words, not a task group's traceback, and the sessions close."""
    from mcpctl.cli import app

    cat = tmp_path / "cat"
    cat.mkdir()
    (cat / "tools.jsonl").write_text("".join(line + "\n" for line in (CATALOGUE / "tools.jsonl").read_text()
                                             .splitlines() if '"server": "time"' in line))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(TASKS.read_text().splitlines()[0] + "\n")
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "nobody", "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "deferred"])
    assert r.exit_code != 0
    assert f"--endpoint {fake_llm}" in r.output and "unknown model 'nobody'" in r.output, r.output
    assert "Traceback" not in r.output and "ExceptionGroup" not in r.output and "TaskGroup" not in r.output
