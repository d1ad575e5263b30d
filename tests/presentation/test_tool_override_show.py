"""`presentation.tool_override`: a tool's override stored and compared, without the CLI."""

from __future__ import annotations

from pathlib import Path

from mcpctl.catalogue.cache import FilesCache
from mcpctl.presentation.tool_override import comparison_rows, input_properties, set_override, shown
from mcpctl.resources.overrides import OverrideEdit
from mcpctl.resources.store import Store


def test_an_override_is_stored_and_shown_beside_the_servers_definition(tmp_path: Path) -> None:
    store = Store(tmp_path / "resources")
    store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "notes"},
               "spec": {"transport": "stdio", "command": "notes-server"}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"}, "spec": {"servers": ["notes"]}})
    FilesCache().write_server_tools("notes", [{"name": "create_note", "description": "Create a note",
                                        "inputSchema": {"type": "object", "properties": {
                                            "title": {"type": "string"}, "tags": {"type": "array"}},
                                            "required": ["title"]}}])
    assert set(input_properties("notes/create_note", FilesCache())) == {"title", "tags"}
    edit = OverrideEdit(None, None, "Write a note down", None, {"tags": ["inbox"]}, {}, {}, (), False)
    assert set_override(store, FilesCache(), "p", "notes/create_note", edit) == (True, [])
    data = shown(store, FilesCache(), "p", "notes/create_note")
    assert data["override"]["description"] == "Write a note down"
    rows = {r[0]: r[1:] for r in comparison_rows(data)}
    assert rows["description"] == ("Create a note", "Write a note down", "Write a note down")
    assert rows["parameter tags"] == ("array", 'hidden, sent as ["inbox"]', "(hidden)")
    assert rows["parameter title"][0] == "string, required"
