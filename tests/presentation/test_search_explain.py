"""`presentation.search_explain` and `catalogue.semantic_setup`, without the CLI."""

from __future__ import annotations

from types import SimpleNamespace

from mcpctl.catalogue.learn import NOTHING
from mcpctl.catalogue.semantic_setup import install_argv
from mcpctl.catalogue.tool import CatalogueTool
from mcpctl.presentation.search_explain import explain_header, hits_json, learned_docs


def test_the_request_is_said_as_read_and_hits_keep_search_tools_shape() -> None:
    header = explain_header("delete the file /tmp/x.txt", NOTHING)
    assert header.startswith("request: action ") and "a file" in header
    tool = CatalogueTool("notes/create_note", "notes", "create_note",
                         {"name": "create_note", "description": "Create", "inputSchema": {"type": "object"}})
    data = hits_json([("notes/create_note", 0.123456)], {"notes/create_note": tool}, lambda cid: "notes__x", 3)
    assert data == {"tools": [{"name": "notes__x", "id": "notes/create_note", "description": "Create",
                               "inputSchema": {"type": "object"}, "score": 0.1235}], "total_searched": 3}


def test_a_project_that_does_not_learn_ranks_its_docs_as_they_are() -> None:
    spec = SimpleNamespace(search=SimpleNamespace(learns=False))
    docs: list[object] = []
    assert learned_docs("p", spec, docs, log=None) == (docs, NOTHING)     # type: ignore[arg-type]
    assert install_argv("/opt/py/bin/python")[:4] == ["/opt/py/bin/python", "-m", "pip", "install"]
