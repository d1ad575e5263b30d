"""The console-block language of docblocks.py: commands, comments, `...`, the named patterns."""

from __future__ import annotations

from pathlib import Path

import pytest
from docblocks import Command, matches, normalise, parse, report, strip_comment

DOC = """# Title

```bash
mcpctl serve --project p
```

```console
$ mcpctl create project work --server notes \\
    --favourite notes/create_note   # pinned
project/work created
$ mcpctl get tokens
NAME   AGE
agent  0s
```

<!-- docs-test: skip needs a client this machine lacks -->
```console
$ claude mcp list
```
"""


def test_parse_reads_console_blocks_commands_continuations_and_skip_markers() -> None:
    blocks = parse(Path("doc.md"), DOC)
    assert [(b.line, b.skip) for b in blocks] == [(7, None), (17, "needs a client this machine lacks")]
    create, tokens = blocks[0].commands
    assert create.line == 8
    assert create.text == "mcpctl create project work --server notes \\\n    --favourite notes/create_note"
    assert create.expected == ["project/work created"]
    assert (tokens.text, tokens.expected) == ("mcpctl get tokens", ["NAME   AGE", "agent  0s"])


def test_a_skip_marker_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        parse(Path("doc.md"), "<!-- docs-test: skip -->\n```console\n$ true\n```\n")


@pytest.mark.parametrize(("typed", "command"), [
    ("mcpctl get servers   # a comment", "mcpctl get servers"),
    ("mcpctl tools disable 'a # b'", "mcpctl tools disable 'a # b'"),
    ('echo "#not" x#y', 'echo "#not" x#y'),
    ("echo \\# kept # dropped", "echo \\# kept"),
    ("# only a comment", ""),
])
def test_only_unquoted_comments_that_start_a_word_are_stripped(typed: str, command: str) -> None:
    assert strip_comment(typed) == command


def test_named_patterns_hide_what_varies_and_nothing_else() -> None:
    assert normalise("mcpctl_vrvCxpATCWLDSs8FdKmuH-VBx8fGpkaKkWFh1TCS09c") == "<secret>"
    assert normalise("expires 2026-12-30T14:23:27Z, since 2026-10-31 12:32)") == \
        "expires <timestamp>, since <timestamp>)"
    assert normalise("backup-20261130T133835357760Z-mcp.json on 2026-12-30") == "backup-<timestamp>-mcp.json on <date>"
    assert normalise(" → 42  (12.7 ms)") == " → 42  (<duration>)"
    assert normalise("calc   up   5   24s   ") == "calc   up   5   <age>"
    assert normalise("6.54  Add two numbers; 5 of 12 tools") == "6.54  Add two numbers; 5 of 12 tools"
    assert normalise("listed: 9 tools (protocol 2025-11-25)") == "listed: 9 tools (protocol 2025-11-25)"
    assert normalise("mcpctl 0.1.0, Python 3.11.7 on 127.0.0.1") == "mcpctl <version>, Python <version> on 127.0.0.1"


def test_ellipsis_matches_any_number_of_lines_and_the_rest_must_match_exactly() -> None:
    assert matches(["a", "...", "z"], ["a", "z"])
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert matches(["...", "c", "..."], ["a", "b", "c", "d"])
    assert not matches(["a", "...", "z"], ["a", "b"])
    assert not matches(["a", "z"], ["a", "b", "z"])
    assert not matches(["up  9  24s"], ["up  10  24s"])
    assert matches(["agent  0s"], ["agent  13s   "])


def test_a_mismatch_report_names_the_document_line_command_and_the_difference() -> None:
    text = report("README.md", Command(42, "mcpctl get tokens", ["NAME", "agent"]), ["NAME", "other"], 0)
    assert text.startswith("README.md:42: $ mcpctl get tokens\n")
    assert "-agent" in text and "+other" in text
    failed = report("README.md", Command(7, "mcpctl nope", []), ["error: no such command"], 2)
    assert "exited 2" in failed and "error: no such command" in failed
