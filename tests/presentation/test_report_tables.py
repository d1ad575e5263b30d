"""The CLI's tables and report lines built without the CLI (`presentation.tables` and the modules
that build on it): untrusted text shown escaped, bars as long as their share, what each report
says around its table, in the order the CLI prints it."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from mcpctl.audit.records import Breakdown, CallRecord, LogSummary, ToolStats
from mcpctl.catalogue.favourites import Candidate, Floor, Suggestions, ToolUse
from mcpctl.catalogue.tokens import ESTIMATE
from mcpctl.presentation import favourites_table, log_tables, search_table, tools_table
from mcpctl.presentation.bars import WIDTH
from mcpctl.presentation.catalogue import CachedCatalogue, Catalogue
from mcpctl.presentation.surface import surface_of
from mcpctl.presentation.surface_table import surface_parts
from mcpctl.presentation.tables import Part, cell, line
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.storage import Storage

HOSTILE = "evil[red]x\x1b[2J"


def printed(parts: Part | list[Part]) -> str:
    """What the CLI prints for `parts` (cli._common.show), piped: plain text."""
    buf = io.StringIO()
    console = Console(file=buf, width=250, soft_wrap=True, highlight=False, color_system=None)
    for part in parts if isinstance(parts, list) else [parts]:
        console.print(part, markup=False) if isinstance(part, str) else console.print(part)
    return buf.getvalue()


def test_a_cell_and_a_line_show_untrusted_text_as_text() -> None:
    assert line(HOSTILE) == "evil[red]x\\x1b[2J"
    assert cell(HOSTILE).startswith("evil\\[red]x\\x1b")                # [red] is text, not a colour
    assert "evil[red]x\\x1b[2J" in printed([line(HOSTILE), log_tables.breakdown_table("credential", [
        Breakdown(HOSTILE, 1, 0, 0.0)])])


def test_the_logs_tables_show_each_call_and_tool() -> None:
    calls = printed(log_tables.calls_table([CallRecord(0.0, 1.25, "p", "evil__x", HOSTILE, "tool_error",
                                                       error_class="Boom", client_name="cli")]))
    assert calls.split()[:2] == ["TIME", "PROJECT"] and "evil[red]x\\x1b[2J" in calls and "tool_error (Boom)" in calls
    stats = printed(log_tables.stats_table([ToolStats("a/x", 4, 1, 1.0, 2.0, 0.0, 0.0),
                                            ToolStats("a/y", 2, 0, 1.0, 2.0, 0.0, 0.0)]))
    rows = stats.splitlines()[1:]
    assert rows[0].count("█") == WIDTH and rows[1].count("█") == WIDTH // 2        # each tool's share of the calls
    status = printed(log_tables.status_table(LogSummary("/x/log.db", 3, 2048, None, None, ("0001",))))
    assert status.split("\n")[0].split() == ["Path", "/x/log.db"] and "Oldest      -" in status


def test_a_breakdown_section_is_its_headline_then_its_table_if_any() -> None:
    assert log_tables.breakdown_section("host", [], "in the last 7 days") == [
        "Calls by host in the last 7 days: 0 call(s), 0 value(s)"]
    parts = log_tables.breakdown_section("host", [Breakdown(None, 2, 1, 0.0)], "today")
    assert parts[0] == "Calls by host today: 2 call(s), 1 value(s)"
    assert printed(parts[1]).split()[:3] == ["HOST", "CALLS", "SHARE"]


def _suggestions() -> Suggestions:
    def c(cid: str, calls: int, **kw: Any) -> Candidate:
        return Candidate(ToolUse(cid, calls, 2, 0, 0.0), pinned=False, suggested=kw.pop("suggested", False),
                         flag=kw.pop("flag", None), below=kw.pop("below", None))

    return Suggestions([c("a/x", 9, suggested=True), c("a/y", 5, flag="mostly fails"), c("a/z", 1, below="few")],
                       ["a/x"], ["a/old"], 15, 3)


def test_suggest_shows_the_suggested_and_flagged_rows_and_collapses_the_rest() -> None:
    s = _suggestions()
    rows, below, beyond = favourites_table.shown_rows(s, top=5)
    assert [c.use.canonical_id for c in rows] == ["a/x", "a/y"] and [c.use.canonical_id for c in below] == ["a/z"]
    assert beyond == []
    parts = favourites_table.suggest_parts("p", s, "today", Floor(2, 2), top=5)
    assert str(parts[0]).startswith("Favourites for project p: 15 calls in 3 session(s) today; suggested from 2 calls")
    assert str(parts[2]).startswith("+ 1 tool(s) used below the floor of 2 calls in 2 sessions (1 calls in all)")
    assert parts[3] == "Pinned but not called in the window (dropped by the line below): a/old"
    assert "flagged: mostly fails" in printed(parts[1])
    tight = favourites_table.suggest_parts("p", s, "today", Floor(2, 2), top=1)
    assert "+ 1 more not shown (1 flagged): -o json lists them" in tight


def test_favourites_list_says_what_is_pinned_and_what_the_client_is_told() -> None:
    report = {"project": "p", "presentation": "favourite-index", "names": 3, "maxFavourites": 10, "gate": False,
              "favourites": [], "all": {"count": 0}, "instructions": "Use \x1b the favourites."}
    parts = favourites_table.list_parts(report)
    assert parts[0] == "project/p: favourite-index presentation, 3 names, 0 of at most 10 favourites pinned"
    assert str(parts[1]).startswith("No favourites pinned. Pin some with: mcpctl favourites add --project p")
    assert parts[-2:] == ["Instructions sent to the client:", "  Use \\x1b the favourites."]


def test_tools_tables_escape_names_and_say_states() -> None:
    row = {"server": "s", "canonicalId": "s/x", "presentedName": HOSTILE, "state": "enabled", "listed": False,
           "pinned": "changed", "flags": [{"kind": "k", "why": "w", "text": "t"}], "overridden": True,
           "favouriteName": None, "readOnly": True, "destructive": None,
           "effect": {"class": "reads", "source": "name"}, "description": "Reads x.\nMore."}
    text = printed(tools_table.tools_table([row], wide=True))
    assert "via search, changed (tools changes)" in text and "flagged, overridden" in text
    assert "evil[red]x\\x1b[2J" in text and "reads (name)" in text and "More." not in text
    assert [f.kind for f in tools_table.flagged([row])["s/x"]] == ["k"]


def test_search_tables_rank_and_explain() -> None:
    assert search_table.first_line("  one\ntwo") == "one" and search_table.first_line("x" * 100, 10) == "x" * 9 + "…"
    lines = search_table.no_match_lines("p", "q", [], deferred=False, why="", said="bm25")
    assert lines[0].startswith("This project has no tools to search yet")
    assert lines[-1] == "List the tools with: mcpctl tools list --project p"


def test_the_surface_report_reads_section_after_section() -> None:
    project = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {"servers": ["notes"]}})
    cat = Catalogue("p", project)
    cat.set_listings({"notes": {"tools": [{"name": "create_note", "description": "Create", "inputSchema": {}}]}})
    report = surface_of(CachedCatalogue(project, cat), Storage.in_memory().log, window_days=1, now=1_800_000_000.0,
                        counter=ESTIMATE)
    parts = surface_parts(report)
    text = printed(parts)
    assert str(parts[0]).startswith("Surface of project p:") and parts[1] == ""
    order = ["SERVER", "PRESENTATION", "Write reach:", "Name collisions: none", "Near-duplicate descriptions",
             "Use in the last 1 days", "The three numbers to know", "Recommendations"]
    assert [text.index(word) for word in order] == sorted(text.index(word) for word in order)
