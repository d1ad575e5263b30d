"""`presentation.resources`: what `get` and `describe` show of stored objects, without the CLI."""

from __future__ import annotations

import datetime
from pathlib import Path

from mcpctl.presentation.resources import NOT_REGISTERED, ROWS, age, describe_fields, live_view
from mcpctl.resources.store import Store


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "resources")
    store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "notes"},
               "spec": {"transport": "stdio", "command": "notes-server", "args": ["--dir", "/n"]}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
               "spec": {"servers": ["notes", "gone"], "favouriteIndex": {"enabled": True, "tools": ["notes/read"]}}})
    return store


def test_age_says_the_largest_whole_unit() -> None:
    now = datetime.datetime(2026, 1, 3, 12, 0, 0, tzinfo=datetime.UTC)
    assert age("2026-01-01T12:00:00Z", now) == "2d"
    assert age("2026-01-03T11:59:20Z", now) == "40s"
    assert age(None, now) == "-" and age("yesterday", now) == "-"


def test_live_view_and_table_rows(tmp_path: Path) -> None:
    store = _store(tmp_path)
    view = live_view(store, store.get("Server", "notes"))
    assert list(view) == ["apiVersion", "kind", "metadata", "spec"]          # no status: never served
    row = ROWS["Server"]([view], True)[0]
    assert row[:5] == ["notes", "stdio", "notes-server --dir /n", "unknown", "-"]
    assert row[6:] == ["-", "-", "-", "-"]                                  # protocol, sign-in, error, description
    project = ROWS["Project"]([live_view(store, store.get("Project", "p"))], False)[0]
    assert project[:5] == ["p", "notes,gone", "favourite-index", "1", "0"]


def test_describe_fields_of_a_project_and_a_server(tmp_path: Path) -> None:
    store = _store(tmp_path)
    fields = dict(describe_fields(store, "Project", store.get("Project", "p")))
    assert fields["Servers"] == "notes, gone" + NOT_REGISTERED
    assert fields[None] == "  ★ notes/read" and fields["Favourites"].startswith("on, max ")
    server = describe_fields(store, "Server", store.get("Server", "notes"))
    assert server[:2] == [("Transport", "stdio"), ("Command", "notes-server --dir /n")]
    assert ("Used by", "p") in server and server[-1] == ("State", "unknown (never served)")
