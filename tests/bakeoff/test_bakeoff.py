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
    assert f"| {run_id} | first-listed | favourite-index | 6 | 0 | 0.33 [" in r.stdout   # the file twice: once
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


def _small(tmp_path: Path, n_tasks: int = 2) -> tuple[Path, Path]:
    """The time server's tools alone, and `n_tasks` tasks that need one of them."""
    cat = tmp_path / f"cat{n_tasks}"
    cat.mkdir()
    (cat / "tools.jsonl").write_text("".join(line + "\n" for line in (CATALOGUE / "tools.jsonl").read_text()
                                             .splitlines() if '"server": "time"' in line))
    tasks = tmp_path / f"tasks{n_tasks}.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "query": f"what time is it in city {i}",
                                         "relevant_groups": [["time/get_current_time"]]}) + "\n"
                             for i in range(n_tasks)))
    return cat, tasks


def test_an_answer_asking_500_calls_runs_only_max_calls_per_turn(fake_llm: str, tmp_path: Path,
                                                                   runner: CliRunner) -> None:
    """One answer asking for 500 tool calls: 8 are run (--max-calls-per-turn), the other 492 are
    answered "not run" and counted as skipped, not picks (before: all 500 reached the upstream,
    2,008 real calls for 2 tasks)."""
    from mcpctl.cli import app

    cat, tasks = _small(tmp_path)
    save = tmp_path / "run.jsonl"
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "many-calls", "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "flat", "--max-turns", "2", "--save", str(save)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in save.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert len(row["calls"]) <= 2 * 8 and row["skipped"] == row["turns"] * 492, row
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "many-calls", "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "flat", "--max-turns", "1",
                            "--max-calls-per-turn", "3", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "many-calls", "--catalogue", str(cat),
                               "--tasks", str(tasks), "--max-calls-per-turn", "0"]).exit_code == 2


def test_a_hung_endpoint_is_reported_while_waited_for_and_stops_the_run(fake_llm: str, tmp_path: Path,
                                                                        runner: CliRunner,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the endpoint never answers: said on stderr while it waits (every HEARTBEAT_S), given
    up at --request-timeout, and a second timeout in a row stops the run with one clear error
    (before: up to 600 s per request, silently, task after task)."""
    import time

    from mcpctl.bakeoff import llm
    from mcpctl.cli import app

    monkeypatch.setattr(llm, "HEARTBEAT_S", 0.5)
    cat, tasks = _small(tmp_path, 3)
    started = time.monotonic()
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "hang", "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "flat", "--request-timeout", "2"])
    took = time.monotonic() - started
    assert r.exit_code == 5, r.output
    assert "waiting for the model for 1 s (it gives up at 2 s: --request-timeout)" in r.stderr, r.stderr
    assert "no answer within 2 s (--request-timeout" in r.stderr and "2 request(s) in a row failed" in r.stderr
    assert "Traceback" not in r.output
    assert took < 60, took


@pytest.mark.parametrize(("model", "said"), [
    ("html", "not a chat-completions answer (200, text/html): <!doctype html><html><head><title>Welcome"),
    ("bad-json", "not a chat-completions answer (200, application/json): {\"id\": \"chatcmpl-1\""),
])
def test_an_endpoint_that_is_not_chat_completions_is_an_error_not_a_model(fake_llm: str, tmp_path: Path,
                                                                         runner: CliRunner, model: str,
                                                                         said: str) -> None:
    """An endpoint answering a web page or JSON cut short: the run stops at its first answer with
    what it said (before: scored as a model with 0.00 first pick and no error in the table)."""
    from mcpctl.cli import app

    cat, tasks = _small(tmp_path)
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", model, "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "flat"])
    assert r.exit_code != 0 and said in r.stderr, r.output
    assert "first pick" not in r.stdout and "Traceback" not in r.output


def test_tasks_that_end_in_an_endpoint_error_are_counted_not_scored(fake_llm: str, tmp_path: Path,
                                                                    runner: CliRunner) -> None:
    """A 500 on every request: each task is an error, the table says so in its errors column with
    no rate (before: 0.00 first pick, 0.00 success), and the run exits 5; three in a row stop it."""
    from mcpctl.bakeoff.report import load, render
    from mcpctl.cli import app

    cat, tasks = _small(tmp_path)
    save = tmp_path / "run.jsonl"
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "error-500", "--catalogue", str(cat),
                            "--tasks", str(tasks), "--presentations", "flat", "--save", str(save)])
    assert r.exit_code == 5, r.output
    assert "every task ended in an error, nothing was measured" in r.stderr and "answered 500" in r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["run", "model"])
    header, cells = lines[at], lines[at + 1].split()
    assert header.split()[3:5] == ["n", "errors"] and cells[3:7] == ["2", "2", "-", "-"], r.stdout
    summary = json.loads(render(load([save]), "json"))["summaries"][0]
    assert summary["errors"] == 2 and summary["first_pick"]["value"] != summary["first_pick"]["value"]   # NaN
    cat3, tasks3 = _small(tmp_path, 3)
    r = runner.invoke(app, ["bakeoff", "--endpoint", fake_llm, "--model", "error-500", "--catalogue", str(cat3),
                            "--tasks", str(tasks3), "--presentations", "flat"])
    assert r.exit_code == 5 and "3 request(s) in a row failed: the run stops" in r.stderr, r.output
