"""`evaluation.runs` without the CLI: datasets scored, a project's pairs scored, what is said."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcpctl.catalogue.rank import ToolDoc
from mcpctl.errors import MCPCtlError
from mcpctl.evaluation.runs import score_datasets, score_log

META = Path(__file__).resolve().parent.parent / "fixtures" / "metatool_slice"


class Said:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.progress_totals: list[int] = []

    def indexing(self, text: str) -> AbstractContextManager[object]:
        return nullcontext()

    @contextmanager
    def progress(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        self.progress_totals.append(total)
        yield lambda n: None

    def note(self, message: str) -> None:
        self.warnings.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def test_a_dataset_is_scored_per_ranker_and_a_missing_portion_is_said() -> None:
    said = Said()
    [result] = score_datasets([META], ["bm25"], "test", report=said)
    assert (result.dataset, result.ranker, result.portion, result.queries) == ("metatool_slice", "bm25", "test", 25)
    assert said.progress_totals == [25]
    with pytest.raises(MCPCtlError, match="nothing to evaluate"):
        score_datasets([], ["bm25"], "test")


def test_log_pairs_naming_gone_tools_are_left_out_and_said() -> None:
    spec: Any = SimpleNamespace(search=SimpleNamespace(record_queries=True, ranker="bm25"))
    docs = [ToolDoc.from_wire("notes", {"name": "create_note", "description": "Create a note"}, "", "notes/create_note"),
            ToolDoc.from_wire("calc", {"name": "add", "description": "Add two numbers"}, "", "calc/add")]
    evidence = [SimpleNamespace(query="write a note", tool="notes/create_note"),
                SimpleNamespace(query="sum", tool="old/gone")]
    said = Said()
    [result] = score_log("p", spec, lambda: docs, evidence, None, report=said)
    assert (result.ranker, result.queries, result.tools) == ("bm25", 1, 2)
    assert said.warnings == ["1 of 2 recorded pairs name a tool no longer in the catalogue; left out"]
    with pytest.raises(MCPCtlError, match="query recording is on"):
        score_log("p", spec, lambda: docs, [], None)


def test_a_projects_log_is_scored_on_its_successful_searches_only() -> None:
    from mcpctl.audit.records import SearchEvidence
    from mcpctl.evaluation.report import results_table
    from mcpctl.evaluation.runs import score_project_log
    from mcpctl.resources.memstore import MemoryStore

    store = MemoryStore()
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
               "spec": {"servers": [], "search": {"ranker": "bm25"}}})
    docs = [ToolDoc.from_wire("notes", {"name": "create_note", "description": "Create a note"}, "", "notes/create_note")]
    asked: list[str] = []

    def searches(project: str) -> list[SearchEvidence]:
        asked.append(project)
        return [SearchEvidence("write a note", "notes/create_note", "s1", 1.0, True),
                SearchEvidence("write a note", "notes/create_note", "s2", 2.0, False)]

    [result] = score_project_log("p", store, searches, lambda: docs, None)
    assert asked == ["p"] and (result.dataset, result.ranker, result.queries) == ("log:p", "bm25", 1)
    with pytest.raises(MCPCtlError, match="gone"):
        score_project_log("gone", store, searches, lambda: docs, None)
    columns = [c.header for c in results_table([result]).columns]
    assert columns[:5] == ["DATASET", "RANKER", "SPLIT", "QUERIES", "TOOLS"]     # no LEARNED when nothing learned
