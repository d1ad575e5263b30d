"""`resources.apply.delete_objects`: what `mcpctl delete` does to the store, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpctl.errors import Conflict, NotFound
from mcpctl.resources.apply import delete_objects
from mcpctl.resources.store import Store


def test_a_server_goes_with_its_last_project_and_missing_names_change_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "resources")
    store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "notes"},
               "spec": {"transport": "stdio", "command": "notes-server"}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"}, "spec": {"servers": ["notes"]}})
    with pytest.raises(Conflict, match="used by project"):
        delete_objects(store, [("Server", "notes")])
    with pytest.raises(NotFound):
        delete_objects(store, [("Project", "p"), ("Server", "nope")])
    assert store.names("Project") == ["p"]                    # all or nothing
    deleted, warnings = delete_objects(store, [("Project", "p"), ("Server", "notes"), ("Server", "nope")],
                                       ignore_not_found=True)
    assert deleted == [("Project", "p"), ("Server", "notes")] and warnings == []
    assert store.names("Server") == []
