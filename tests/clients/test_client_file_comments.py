"""`connect --replace-imported` removes entries and nothing else: the comments around a removed
entry (above it, on its line, after its closing) stay; only those inside its value go with it.
`disconnect` then gives the original bytes back."""

from __future__ import annotations

import pytest
from client_files import Env
from typer.testing import CliRunner

from mcpctl.cli import app

VSCODE = """{
\t"servers": {
\t\t// above github
\t\t"github": { "type": "stdio", "command": "npx", "args": ["gh"] }, // on github's line
\t\t/* above calc */
\t\t"calc": {
\t\t\t"type": "stdio",
\t\t\t"command": "calc" // inside calc
\t\t} // after calc's closing
\t}
}
"""

CODEX = """model = "o3"

# above github
[mcp_servers.github] # on github's line
command = "npx" # inside github
args = ["gh"]

[mcp_servers.github.env]
# inside github's env
MODE = "fast"
# after github

# above calc
[mcp_servers.calc]
command = "calc"
"""

KEPT = ["above github", "on github's line", "above calc", "after calc's closing", "after github"]
GONE = ["inside calc", "inside github", "inside github's env"]


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


@pytest.mark.parametrize(("client", "text"), [("vscode", VSCODE), ("codex", CODEX)])
def test_replace_imported_keeps_the_comments_outside_the_removed_entries(env: Env, client: str, text: str) -> None:
    path = env.write(client, text)
    assert run("import", client, "--project", "work").exit_code == 0
    r = run("connect", client, "--project", "work", "--replace-imported")
    assert r.exit_code == 0, r.output
    assert "'github'" in r.stdout and "'calc'" in r.stdout         # both removed
    after = path.read_text()
    kept = [c for c in KEPT if c in text]
    assert [c for c in kept if c not in after] == []
    assert [c for c in GONE if c in after] == []
    assert run("disconnect", client).exit_code == 0
    assert path.read_text() == text
