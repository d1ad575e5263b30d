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


def test_what_a_search_ranks_is_the_projects_view_and_the_log_is_opened_only_for_tools() -> None:
    import pytest

    from mcpctl.audit.records import AuditLog
    from mcpctl.errors import MCPCtlError
    from mcpctl.presentation.catalogue import CachedCatalogue, Catalogue
    from mcpctl.presentation.search_explain import searched
    from mcpctl.resources.kinds import ProjectSpec
    from mcpctl.storage import Storage

    storage = Storage.in_memory()
    opened: list[bool] = []

    def log() -> AuditLog:
        opened.append(True)
        return storage.log

    project = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {"servers": ["notes"]}})
    cat = Catalogue("p", project)
    with pytest.raises(MCPCtlError, match="project 'p' has no tools to search"):
        searched("p", CachedCatalogue(project, cat), storage.cache, log)
    assert not opened
    cat.set_listings({"notes": {"tools": [{"name": "create_note", "description": "Create", "inputSchema": {}}]}})
    found = searched("p", CachedCatalogue(project, cat), storage.cache, log)
    assert opened and [d.id for d in found.docs] == ["notes/create_note"] and list(found.tools) == ["notes/create_note"]
    assert found.present("notes/create_note") == found.view.present("notes/create_note") and found.present("x/y") == "x/y"
