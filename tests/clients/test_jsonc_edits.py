"""The JSONC editor: positions, comments, layouts, and edits that change one member only."""

from __future__ import annotations

import json
import re

import pytest

from mcpctl.clients import jsonc

ENTRY = {"command": "/bin/mcpctl", "args": ["serve", "--project", "p"], "env": {"A": "1"}}

LAYOUTS = {
    "two-space": '{\n  "mcpServers": {\n    "a": {"command": "x"},\n    "b": {\n      "command": "y"\n    }\n  },\n'
                 '  "other": [1, 2, {"k": null}]\n}\n',
    "tabs": '{\n\t"servers": {\n\t\t"a": {\n\t\t\t"type": "stdio"\n\t\t}\n\t}\n}',
    "comments": '// head\n{\n  /* block */ "mcpServers": { // open\n    "a": 1, // A\n    /* before b */\n'
                '    "b": 2 // B\n  }, // after\n  "x": "// not a comment /* */"\n}\n',
    "trailing-commas": '{\n  "mcpServers": {\n    "a": {"command": "x",},\n    "b": 2,\n  },\n}\n',
    "inline": '{"mcpServers": {"a": {"command": "x"}, "b": 2}, "z": true}',
    "crlf": '{\r\n  "mcpServers": {\r\n    "a": 1\r\n  }\r\n}\r\n',
    "empty-container": '{\n  "mcpServers": {}\n}\n',
    "empty-with-comment": '{\n  "mcpServers": { // none yet\n  }\n}\n',
    "unicode": '{\n  "mcpServers": {\n    "é": "ü \\u00e9 \\"q\\""\n  }\n}\n',
}


def container(text: str) -> str:
    return "servers" if '"servers"' in text else "mcpServers"


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adding_then_removing_a_member_gives_the_text_back(name: str) -> None:
    text = LAYOUTS[name]
    key = container(text)
    added = jsonc.set_member(text, [key], "mcpctl", ENTRY)
    assert jsonc.loads(added)[key]["mcpctl"] == ENTRY
    before = jsonc.loads(text)
    after = jsonc.loads(added)
    after[key].pop("mcpctl")
    assert after == before
    assert jsonc.remove_member(added, [key], "mcpctl") == text


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_removing_and_reinserting_a_member_keeps_its_source_text(name: str) -> None:
    text = LAYOUTS[name]
    key = container(text)
    first = next(iter(jsonc.loads(text)[key]), None)
    if first is None:
        return
    raw = jsonc.member_text(text, [key], first)
    assert raw is not None
    removed = jsonc.remove_member(text, [key], first)
    assert first not in jsonc.loads(removed)[key]
    back = jsonc.insert_raw_member(removed, [key], first, raw)
    assert jsonc.loads(back) == jsonc.loads(text)
    assert raw[0] in back


def test_indentation_and_line_endings_follow_the_file() -> None:
    tabs = jsonc.set_member(LAYOUTS["tabs"], ["servers"], "mcpctl", {"k": [1]})
    assert '\n\t\t"mcpctl": {\n\t\t\t"k": [\n\t\t\t\t1\n\t\t\t]\n\t\t}' in tabs
    crlf = jsonc.set_member(LAYOUTS["crlf"], ["mcpServers"], "mcpctl", {"k": 1})
    assert "\n" not in crlf.replace("\r\n", "")
    inline = jsonc.set_member(LAYOUTS["inline"], ["mcpServers"], "mcpctl", {"k": 1})
    assert inline == '{"mcpServers": {"a": {"command": "x"}, "b": 2, "mcpctl": {"k": 1}}, "z": true}'


def test_a_member_goes_after_the_last_ones_same_line_comment_and_takes_the_files_trailing_comma() -> None:
    added = jsonc.set_member(LAYOUTS["comments"], ["mcpServers"], "c", 3)
    assert '"b": 2, // B\n    "c": 3\n  }, // after' in added
    added = jsonc.set_member(LAYOUTS["trailing-commas"], ["mcpServers"], "c", 3)
    assert '"b": 2,\n    "c": 3,\n  },' in added


def test_missing_containers_are_created_and_an_empty_file_becomes_a_document() -> None:
    text = '{\n  "theme": "dark"\n}\n'
    added = jsonc.set_member(text, ["projects", "/x", "mcpServers"], "a", 1)
    assert jsonc.loads(added) == {"theme": "dark", "projects": {"/x": {"mcpServers": {"a": 1}}}}
    assert json.loads(jsonc.set_member("", ["mcpServers"], "a", 1)) == {"mcpServers": {"a": 1}}


def test_setting_an_existing_member_replaces_only_its_value() -> None:
    text = LAYOUTS["comments"]
    changed = jsonc.set_member(text, ["mcpServers"], "a", {"new": True})
    assert changed.replace('{\n      "new": true\n    }', "1", 1) == text
    assert jsonc.set_member(text, ["mcpServers"], "a", 1) == text


def test_removing_the_only_member_leaves_an_empty_object() -> None:
    text = '{\n  "mcpServers": {\n    "a": 1\n  },\n  "b": 2\n}\n'
    assert jsonc.remove_member(text, ["mcpServers"], "a") == '{\n  "mcpServers": {},\n  "b": 2\n}\n'
    assert jsonc.remove_member(text, ["mcpServers"], "missing") == text


@pytest.mark.parametrize(("bad", "where"), [
    ('{\n  "a": 1,\n  "b": \n}', "line 4"),
    ('{"a": 1} trailing', "line 1"),
    ('{"a": "unterminated}', "unterminated string"),
    ('/* never closed {"a": 1}', "unterminated /* comment"),
    ('{"a" 1}', "expected ':'"),
])
def test_malformed_text_is_reported_with_its_position(bad: str, where: str) -> None:
    with pytest.raises(jsonc.JsoncError, match=re.escape(where)):
        jsonc.loads(bad)


def test_a_container_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(jsonc.JsoncError, match="not an object"):
        jsonc.set_member('{"mcpServers": []}', ["mcpServers"], "a", 1)
    with pytest.raises(jsonc.JsoncError, match="already exists"):
        jsonc.insert_raw_member('{"m": {"a": 1}}', ["m"], "a", ("2", ""))
