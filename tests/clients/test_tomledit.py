"""The TOML table editor: headers found as TOML sees them, tables cut and added with their comments."""

from __future__ import annotations

import tomllib

import pytest

from mcpctl.clients import tomledit

CONFIG = '''# top comment
model = "o3"
text = """
[mcp_servers.fake]
"""
literal = \'\'\'
[[also_not]]
\'\'\'
nested = [
  ["x"],
  { a = 1 },
]

# about github
[mcp_servers.github]
command = "npx" # why npx
args = ["-y", "[not-a-header]"]

[mcp_servers.github.env]
TOKEN = "t"

# about the profile
[profiles."my profile"]
model = "o4-mini"

[[hooks]]
name = "a"
'''


def test_headers_are_found_outside_strings_and_arrays() -> None:
    keys = [t.key for t in tomledit.find_tables(CONFIG)]
    assert keys == [("mcp_servers", "github"), ("mcp_servers", "github", "env"), ("profiles", "my profile"),
                    ("hooks",)]
    assert tomledit.find_tables(CONFIG)[-1].array


def test_removing_a_table_takes_its_subtables_and_keeps_the_comments_outside_it() -> None:
    removed = tomledit.remove_table(CONFIG, ["mcp_servers", "github"])
    assert "[mcp_servers.github" not in removed and "why npx" not in removed and "TOKEN" not in removed
    assert "# about github\n\n# about the profile" in removed
    assert "# about the profile\n[profiles.\"my profile\"]" in removed
    doc = tomllib.loads(CONFIG)
    doc.pop("mcp_servers")
    assert tomllib.loads(removed) == doc


def test_raw_text_of_a_table_comes_back_verbatim() -> None:
    raw = tomledit.table_text(CONFIG, ["mcp_servers", "github"])
    assert raw is not None and raw.startswith("[mcp_servers.github]\n") and "# why npx" in raw
    back = tomledit.insert_raw_table(tomledit.remove_table(CONFIG, ["mcp_servers", "github"]),
                                     ["mcp_servers", "github"], raw)
    assert tomllib.loads(back) == tomllib.loads(CONFIG)
    assert "command = \"npx\" # why npx" in back


def test_appending_then_removing_a_table_gives_the_text_back() -> None:
    values = {"command": "/bin/mcpctl", "args": ["serve", "--project", "p"], "env": {"MCPCTL_HOME": "/h"},
              "env_vars": ["A"], "enabled": True, "startup_timeout_sec": 20}
    for text in (CONFIG, "", "model = 1", "model = 1\n\n", 'a = 1\r\n[b]\r\nc = 2\r\n'):
        added = tomledit.append_table(text, ["mcp_servers", "mcpctl"], values)
        assert tomllib.loads(added)["mcp_servers"]["mcpctl"] == values
        back = tomledit.remove_table(added, ["mcp_servers", "mcpctl"])
        assert tomllib.loads(back) == tomllib.loads(text)
        if text.endswith("\n") or not text:
            assert back == text


def test_values_are_written_as_toml() -> None:
    assert tomledit.format_value('quote " and \\ and \n') == '"quote \\" and \\\\ and \\n"'
    assert tomledit.format_value({"a b": 1, "c": [True, 2.5]}) == '{ "a b" = 1, c = [true, 2.5] }'
    assert tomledit.dump_table(["mcp_servers", "my.server"], {"url": "u"}) == '[mcp_servers."my.server"]\nurl = "u"\n'


def test_an_inline_table_cannot_be_cut_and_a_defined_one_cannot_be_added_again() -> None:
    text = 'mcp_servers.a = { command = "x" }\n'
    with pytest.raises(tomledit.TomlEditError, match="table of its own"):
        tomledit.remove_table(text, ["mcp_servers", "a"])
    with pytest.raises(tomledit.TomlEditError, match="already defined"):
        tomledit.append_table(text, ["mcp_servers", "a"], {"command": "y"})
    with pytest.raises(tomledit.TomlEditError):
        tomledit.loads("[broken")
