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


def test_cleanup_deletes_what_the_demo_registered_and_home_is_restored(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from mcpctl.demo import at_home, unregister_demo

    store = Store(tmp_path / "resources")
    register_demo(store)
    unregister_demo(store)
    unregister_demo(store)                                  # what is already gone is skipped
    assert store.names("Server") == [] and store.names("Project") == []
    monkeypatch.setenv("MCPCTL_HOME", "/before")
    with at_home(tmp_path / "demo"):
        assert os.environ["MCPCTL_HOME"] == str(tmp_path / "demo")
    assert os.environ["MCPCTL_HOME"] == "/before"


def test_a_failed_session_names_the_innermost_error_and_the_gateways_stderr(tmp_path: Path) -> None:
    from mcpctl.demo import gateway_failed

    errlog = tmp_path / "demo-gateway.stderr"
    e = gateway_failed(ExceptionGroup("outer", [ExceptionGroup("inner", [TimeoutError()])]), errlog)
    assert e.message == "the demo gateway failed: timed out" and e.hint == f"see {errlog}"
    errlog.write_text("Traceback …\nboom\n")
    e = gateway_failed(ExceptionGroup("outer", [RuntimeError("no tools")]), errlog)
    assert e.message == "the demo gateway failed: RuntimeError: no tools"
    assert e.hint == f"gateway stderr ({errlog}):\nTraceback …\nboom"
