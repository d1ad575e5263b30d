"""`mcpctl.demo` without the CLI: registering the demo objects, and finding the tools it calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpctl.demo import demo_documents, register_demo, resolve_name
from mcpctl.errors import Conflict
from mcpctl.resources.store import Store


def test_registering_twice_changes_nothing_and_a_foreign_object_is_left_alone(tmp_path: Path) -> None:
    store = Store(tmp_path / "resources")
    changes, warnings = register_demo(store)
    assert changes == [f"{d['kind'].lower()}/{d['metadata']['name']} created" for d in demo_documents()]
    assert warnings == []
    again, _ = register_demo(store)
    assert all(line.endswith(" unchanged") for line in again)
    other = Store(tmp_path / "other")
    other.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "notes"},
               "spec": {"transport": "stdio", "command": "mine"}})
    with pytest.raises(Conflict, match="server/notes already exists and was not created by mcpctl demo"):
        register_demo(other)


def test_resolve_name_finds_a_tool_whatever_the_presentation() -> None:
    assert resolve_name(["favourite__add", "all__calc__add"], "calc/add") == "favourite__add"
    assert resolve_name(["all__notes__create_note"], "notes/create_note") == "all__notes__create_note"
    assert resolve_name(["x_calc_add_long", "calc_add"], "calc/add") == "calc_add"
    assert resolve_name([], "calc/add") == "calc/add"
