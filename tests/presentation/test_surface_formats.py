"""`mcpctl surface`'s report read from a log and written as JSON and markdown
(`presentation.surface.surface_of`, `presentation.surface_formats`), without the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpctl.audit.log import CallRecord, InvocationLog
from mcpctl.catalogue.tokens import ESTIMATE
from mcpctl.presentation import surface_formats as sf
from mcpctl.presentation.catalogue import CachedCatalogue, Catalogue
from mcpctl.presentation.surface import surface_of
from mcpctl.resources.kinds import ProjectSpec

NOW = 1_800_000_000.0


def _cached() -> CachedCatalogue:
    project = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {"servers": ["notes", "gone"]}})
    cat = Catalogue("p", project)
    obj: dict[str, Any] = {"type": "object"}
    cat.set_listings({"notes": {"tools": [
        {"name": "create_note", "description": "Create a note | with a title", "inputSchema": obj},
        {"name": "list_notes", "description": "List notes", "inputSchema": obj,
         "annotations": {"readOnlyHint": True}}]}})
    return CachedCatalogue(project, cat, missing={"gone": "not registered"})


def test_the_report_counts_the_windows_calls_and_reads_as_json_and_markdown(tmp_path: Path) -> None:
    with InvocationLog(tmp_path / "log.db") as log:
        log.record_many([CallRecord(NOW - 100 + i, 5.0, "p", "notes__create_note", "notes/create_note", "ok",
                                    session_id="s") for i in range(3)]
                        + [CallRecord(NOW - 3 * 86400, 5.0, "p", "notes__list_notes", "notes/list_notes", "ok")])
        report = surface_of(_cached(), log, window_days=1, now=NOW, counter=ESTIMATE)
    assert report.calls == 3 and report.since == NOW - 86400           # the older call is outside the window
    data = sf.report_json(report)
    assert data["use"]["neverCalled"] == ["notes/list_notes"]
    assert data["writeReach"]["tools"] == ["notes/create_note"]
    assert (data["servers"][0]["name"], data["servers"][0]["status"]) == ("notes", "listed")
    text = sf.render_markdown(report)
    assert text.startswith("### Tool surface: project `p`\n") and text.endswith("\n")
    assert sf.md("a|b\nc") == "a\\|b c"                                # one table cell
    assert "| `notes/create_note` | 3 | 0 | 0 |" in text
    assert sf.pct(None) == "-" and sf.pct(0.004) == "<1%" and sf.pct(0.5) == "50%"
    assert sf.one_line("a\n  b " * 100, 10) == "a b a b a…"
    assert sf.headline(report).startswith("Surface of project p: flat presentation, 2 tools on 2 server(s), 2 enabled; "
                                       "calls from the last 1 days (since ")
    assert sf.headline(report).endswith("Tokens counted as characters / 4 (approximate).")
