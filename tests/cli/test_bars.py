"""Pictures where people would rather look than read (issue 32): a bar beside each row of the tables
of numbers — tokens per server (`surface`), calls per tool (`logs stats`, `favourites suggest`) and
calls per value (`logs --by`) — as long as the row's number is to the largest; plain text when piped.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from mcpctl.audit.log import InvocationLog
from mcpctl.audit.records import CallRecord
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.presentation.bars import WIDTH, bar

BAR = re.compile(r"[█▏▎▍▌▋▊▉]+")


def run(runner: CliRunner, *args: str) -> Any:
    r = runner.invoke(app, list(args), prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.stdout                   # piped: plain text, no colour codes
    return r.stdout


def eighths(line: str) -> int:
    """A bar's length in eighths of a character (0: no bar on the line)."""
    found = BAR.search(line)
    if not found:
        return 0
    text = found.group()
    return 8 * text.count("█") + sum(" ▏▎▍▌▋▊▉".index(c) for c in text if c != "█")


def test_a_bar_is_its_value_of_the_largest_in_eighths_of_a_character() -> None:
    assert bar(10, 10) == "█" * WIDTH
    assert bar(5, 10) == "█" * (WIDTH // 2)
    assert eighths(bar(1, 3)) == round(WIDTH * 8 / 3)
    assert bar(1, 10_000) == "▏"                   # something is never drawn as nothing
    assert bar(0, 10) == "" and bar(3, 0) == ""


@pytest.fixture
def used(runner: CliRunner) -> dict[str, int]:
    """Servers big (4 long tools) and small (1 short tool) in project p, and calls: a 12, b 6, c 3."""
    for name in ("big", "small"):
        assert runner.invoke(app, ["create", "server", name, "--no-check", "--", name]).exit_code == 0
    FilesCache().write_server_tools("big", [{"name": f"a{i}" if i else "a", "description": "Does a great deal " * 20,
                                      "inputSchema": {"type": "object"}} for i in range(4)])
    FilesCache().write_server_tools("small", [{"name": n, "description": "Small", "inputSchema": {"type": "object"}}
                                       for n in ("b", "c")])
    assert runner.invoke(app, ["create", "project", "p", "--server", "big", "--server", "small"]).exit_code == 0
    calls = {"big/a": 12, "small/b": 6, "small/c": 3}
    now = time.time() - 30
    with InvocationLog() as log:
        log.record_many([CallRecord(now + i, 1.0, "p", cid.replace("/", "__"), cid, "ok", session_id=f"s{i % 3}",
                                    credential=cid.split("/")[0])
                         for cid, n in calls.items() for i in range(n)])
    return calls


def _bars_by_first_word(text: str) -> dict[str, int]:
    return {line.split()[0]: eighths(line) for line in text.splitlines() if line.strip()}


def test_surface_draws_each_servers_tokens(runner: CliRunner, used: dict[str, int]) -> None:
    lines = _bars_by_first_word(run(runner, "surface", "--project", "p").split("\n\n", 2)[1])
    assert lines["big"] == WIDTH * 8 and 0 < lines["small"] < lines["big"] // 4, lines
    assert lines["TOTAL"] == 0 and lines["SERVER"] == 0


def test_logs_stats_and_logs_by_draw_each_rows_calls(runner: CliRunner, used: dict[str, int]) -> None:
    stats = _bars_by_first_word(run(runner, "logs", "stats", "--project", "p"))
    assert [stats[cid] for cid in used] == [WIDTH * 8, WIDTH * 4, WIDTH * 2], stats
    by = _bars_by_first_word(run(runner, "logs", "--by", "credential", "--project", "p"))
    assert (by["big"], by["small"]) == (WIDTH * 8, round(WIDTH * 8 * 9 / 12)), by


def test_favourites_suggest_draws_each_tools_calls(runner: CliRunner, used: dict[str, int]) -> None:
    text = run(runner, "favourites", "suggest", "--project", "p", "--min-calls", "1", "--min-sessions", "1")
    rows = {line.split()[1]: eighths(line) for line in text.splitlines()[2:5]}
    assert rows == {"big/a": WIDTH * 8, "small/b": WIDTH * 4, "small/c": WIDTH * 2}, text
