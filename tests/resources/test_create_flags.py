"""`resources.flags`: the manifests `mcpctl create` builds from its flags, and the line back."""

from __future__ import annotations

import pytest

from mcpctl.errors import InvalidResource
from mcpctl.resources.flags import flag_message, project_command, project_document, server_document

NO_SERVER_FLAGS: dict[str, None] = dict.fromkeys(
    ("transport", "header", "env", "cwd", "description", "connect_timeout", "call_timeout", "label"))


def test_a_stdio_server_takes_its_command_env_and_labels_and_refuses_a_header() -> None:
    doc = server_document("notes", command=["npx", "-y", "notes"], url=None,
                          **{**NO_SERVER_FLAGS, "env": ["KEY=${env:KEY}"], "label": ["team=a"], "call_timeout": 5.0})
    assert doc["metadata"] == {"name": "notes", "labels": {"team": "a"}}
    assert doc["spec"] == {"transport": "stdio", "command": "npx", "args": ["-y", "notes"],
                           "env": {"KEY": "${env:KEY}"}, "timeouts": {"call": 5.0}}
    with pytest.raises(InvalidResource, match="--header is for HTTP servers"):
        server_document("notes", command=["x"], url=None, **{**NO_SERVER_FLAGS, "header": ["A=b"]})
    with pytest.raises(InvalidResource, match="either a command"):
        server_document("notes", command=["x"], url="http://127.0.0.1:1/mcp", **NO_SERVER_FLAGS)
    with pytest.raises(InvalidResource, match="expected KEY=VALUE"):
        server_document("notes", command=["x"], url=None, **{**NO_SERVER_FLAGS, "env": ["KEY"]})


def test_a_remote_server_reads_both_header_forms() -> None:
    doc = server_document("web", command=None, url="http://127.0.0.1:1/mcp",
                          **{**NO_SERVER_FLAGS, "header": ["A=1", "B: two"]})
    assert doc["spec"] == {"transport": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "1", "B": "two"}}


def test_project_command_is_the_inverse_of_project_document() -> None:
    doc = project_document("p", servers=["a", "b"], favourites=["a/x"], disable=["b/delete_*"],
                           settings={"gate": {"enabled": True, "instructions": None}, "search": {"topK": 7}},
                           label=["team=a"])
    assert doc["spec"]["favouriteIndex"] == {"tools": ["a/x"], "enabled": True}
    assert project_command(doc, force=False) == [
        "mcpctl", "create", "project", "p", "--server", "a", "--server", "b", "--disable", "b/delete_*",
        "--favourite-index", "--favourite", "a/x", "--gate", "--top-k", "7", "--label", "team=a"]


def test_validation_messages_speak_in_flags() -> None:
    assert flag_message("mcpctl create project, document 1, spec.search.topK: must be at most 20",
                        "mcpctl create project") == "--top-k: must be at most 20"
