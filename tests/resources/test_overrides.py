"""`tools.overrides` as a resource: checked on their own and against the tool's real schema at
`apply` (with did-you-mean), stored canonically so that `get -o yaml | apply -f -` is unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.errors import EXIT_USER

SERVER = """\
apiVersion: mcpctl/v1
kind: Server
metadata: {name: fs}
spec: {command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]}
"""
TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file. " * 40,
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "root": {"type": "string"},
                                                      "mode": {"type": "string", "enum": ["text", "bytes"]}},
                     "required": ["path", "root"]}},
    {"name": "write_file", "description": "Write a file.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
]


def project(overrides: str) -> str:
    return ("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec:\n  servers: [fs]\n"
            "  tools:\n    overrides:\n" + overrides)


@pytest.fixture
def runner(tmp_home: Path) -> CliRunner:
    r = CliRunner()
    assert r.invoke(app, ["apply", "-f", "-"], input=SERVER).exit_code == 0
    FilesCache().write_server_entry("fs", {"tools": TOOLS})
    return r


GOOD = """\
      fs/read_file:
        name: read
        description: Read a text file under the project root.
        annotations: {readOnlyHint: true}
        parameters:
          root: {hide: true, value: /srv/app}
          mode: {default: text, description: text or bytes}
"""


def test_an_override_is_stored_and_round_trips_unchanged(runner: CliRunner) -> None:
    r = runner.invoke(app, ["apply", "-f", "-"], input=project(GOOD))
    assert r.exit_code == 0, r.output
    assert r.stdout == "project/p created\n"
    got = runner.invoke(app, ["get", "project", "p", "-o", "yaml"])
    assert "hide: true" in got.stdout and "value: /srv/app" in got.stdout
    again = runner.invoke(app, ["apply", "-f", "-"], input=got.stdout)
    assert again.exit_code == 0 and again.stdout == "project/p unchanged\n", again.output


def test_an_override_of_an_unknown_parameter_is_refused_with_did_you_mean(runner: CliRunner) -> None:
    r = runner.invoke(app, ["apply", "-f", "-"], input=project("      fs/read_file:\n        parameters:\n"
                                                               "          rot: {hide: true, value: /srv}\n"))
    assert r.exit_code == EXIT_USER
    assert "line 10: spec.tools.overrides.fs/read_file.parameters.rot: " in r.stderr, r.stderr
    assert "fs/read_file has no parameter 'rot'" in r.stderr and "did you mean: root?" in r.stderr
    assert runner.invoke(app, ["get", "project", "p"]).exit_code != 0       # nothing stored


@pytest.mark.parametrize(("overrides", "said"), [
    ("      fs/read_fil:\n        description: x\n", "server 'fs' lists no tool 'read_fil'"),
    ("      fs/read_file:\n        parameters:\n          mode: {hide: true, value: words}\n",
     "value of parameter 'mode' of fs/read_file is 'words', not one of 'text', 'bytes'"),
    ("      fs/read_file:\n        parameters:\n          root: {hide: true}\n",
     "parameter 'root' of fs/read_file is hidden but has no value to send"),
    ("      fs/read_file:\n        parameters:\n          root: {value: /srv}\n",
     "has a fixed value but is not hidden"),
    ("      fs/read_file:\n        name: write_file\n", "fs/write_file is presented by that name"),
    ("      fs/read_file:\n        name: get/file\n", "is not a client-safe tool name"),
    ("      fs/read_*:\n        description: x\n", "is a glob; an override is of one tool"),
    ("      fs/read_file:\n        name: same\n      fs/write_file:\n        name: same\n",
     "are both presented as 'same'"),
])
def test_an_override_that_does_not_fit_is_refused_and_nothing_changes(runner: CliRunner, overrides: str,
                                                                      said: str) -> None:
    r = runner.invoke(app, ["apply", "-f", "-"], input=project(overrides))
    assert r.exit_code == EXIT_USER, r.output
    assert said in r.stderr, r.stderr
    assert runner.invoke(app, ["get", "project", "p"]).exit_code != 0


def test_a_stored_override_the_server_no_longer_fits_still_round_trips(runner: CliRunner) -> None:
    assert runner.invoke(app, ["apply", "-f", "-"], input=project(GOOD)).exit_code == 0
    FilesCache().write_server_entry("fs", {"tools": [TOOLS[1]]})          # the server dropped read_file
    got = runner.invoke(app, ["get", "project", "p", "-o", "yaml"])
    again = runner.invoke(app, ["apply", "-f", "-"], input=got.stdout)
    assert again.exit_code == 0 and again.stdout == "project/p unchanged\n"
    assert "lists no tool 'read_file' (stored before" in again.stderr


def test_overrides_of_a_server_never_listed_are_checked_only_for_their_shape(tmp_home: Path) -> None:
    r = CliRunner()
    assert r.invoke(app, ["apply", "-f", "-"], input=SERVER).exit_code == 0
    ok = r.invoke(app, ["apply", "-f", "-"], input=project("      fs/anything:\n        parameters:\n"
                                                          "          x: {hide: true, value: 1}\n"))
    assert ok.exit_code == 0, ok.output
