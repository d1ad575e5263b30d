"""`presentation.favourites`: pinning, unpinning and suggesting favourites without the CLI."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mcpctl.audit.log import CallRecord, InvocationLog
from mcpctl.catalogue.cache import FilesCache
from mcpctl.catalogue.favourites import Floor
from mcpctl.errors import InvalidResource
from mcpctl.presentation import favourites as fav
from mcpctl.resources.store import Store

NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "resources")
    s.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "notes"},
           "spec": {"transport": "stdio", "command": "notes-server"}})
    s.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
           "spec": {"servers": ["notes"], "presentation": "flat"}})
    FilesCache().write_server_tools("notes", [{"name": n, "description": f"{n} a note", "inputSchema": {"type": "object"}}
                                       for n in ("create_note", "list_notes")])
    return s


def test_pin_on_a_flat_project_says_the_index_is_off_and_unpin_names_what_was_not_pinned(store: Store) -> None:
    result, notes = fav.pin(store, "p", ["notes/create_note"])
    assert result.changed and "favourite index is off" in notes[0]
    again, notes = fav.pin(store, "p", ["notes/create_note"])
    assert not again.changed and notes == []
    result, not_pinned = fav.unpin(store, "p", ["notes/create_note", "notes/list_notes"])
    assert result.changed and not_pinned == ["notes/list_notes"]
    with pytest.raises(InvalidResource, match="SERVER/TOOL"):
        fav.pin(store, "p", ["no-slash"])
    assert fav.unknown_ids(store, FilesCache(), "p", ["notes/create_note"]) == []
    assert len(fav.unknown_ids(store, FilesCache(), "p", ["notes/nope"])) == 1


def test_suggestions_rank_the_logs_calls_and_their_line_sets_exactly_them(store: Store, tmp_path: Path) -> None:
    with InvocationLog(tmp_path / "log.db") as log:
        log.record_many([CallRecord(NOW + i, 5.0, "p", "notes__list_notes", "notes/list_notes", "ok",
                                    session_id=f"s{i % 2}") for i in range(4)])
        s, cached, ever = fav.suggestions("p", store, FilesCache(), log, 5, NOW - 60, Floor(1, 1))
    assert s.suggested == ["notes/list_notes"] and ever == -1 and list(cached.project.servers) == ["notes"]
    line = fav.set_command("p", s.suggested)
    assert shlex.split(line) == ["mcpctl", "favourites", "set", "--project", "p", "notes/list_notes"]
    result = fav.set_favourites_of(store, "p", s.suggested)
    assert result.after["spec"]["favouriteIndex"]["tools"] == ["notes/list_notes"]
    assert "+  favouriteIndex:" in fav.spec_diff(result.before, result.after, "project/p")
    assert fav.suggest_json("p", s, 1.0, NOW - 60, line)["command"] == line


def test_the_cost_of_a_change_is_said_and_favourites_costing_more_than_flat_are_warned_about(store: Store) -> None:
    from mcpctl.presentation.catalogue import cached_catalogue

    before = cached_catalogue("p", store, FilesCache())
    said, warning = fav.cost_change("p", before, before)
    assert said.startswith("flat list: 4 tools ≈") and warning is None          # with the built-ins
    fav.set_favourites_of(store, "p", ["notes/create_note", "notes/list_notes"])
    said, warning = fav.cost_change("p", before, cached_catalogue("p", store, FilesCache()))
    assert said.startswith("favourite-index list: ")
    assert warning is not None and warning.startswith("the favourites now cost more than they save: the favourite-index")
