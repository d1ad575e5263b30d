"""`ask` over a reference server's resources (the npm server-everything's documents) beside the
notes server: through the real gateway, and from the CLI (`mcpctl ask`), issue 23."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gwkit import Kit, npm_bin, text_of, wait_tools
from typer.testing import CliRunner

from ci_support import skip_unless_ci
from mcpctl.cli import app
from mcpctl.examples.notes import NoteStore

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
EVERYTHING = npm_bin("mcp-server-everything")
DOC = "demo://resource/static/document/"


def _project(kit: Kit, tmp_path: Path, **spec: object) -> str:
    if EVERYTHING is None:
        skip_unless_ci("the npm reference servers are not installed (npm install --prefix .npm-servers "
                       "@modelcontextprotocol/server-everything)")
    d = tmp_path / "notes"
    NoteStore(d).create("Release train", "The release train leaves every Thursday at 14:00 UTC.", [])
    kit.server("notes", "-m", "mcpctl.examples.notes", "--dir", str(d), command=sys.executable)
    kit.server("everything", command=str(EVERYTHING), connect=30)
    return kit.project("p", ["notes", "everything"], names={"style": "bare"}, ask={"enabled": True, "topK": 3},
                       **spec)


async def test_the_gateway_finds_a_reference_servers_document_and_cites_its_uri(kit: Kit, tmp_path: Path) -> None:
    _project(kit, tmp_path, presentation="deferred")
    async with kit.client("p") as c:
        tools = {tl.name: tl for tl in await wait_tools(c, {"ask", "search_tools", "call_tool"})}
        assert (tools["ask"].meta or {}).get("anthropic/alwaysLoad") is True      # deferred: kept loaded
        r = await c.call_tool("ask", {"question": "How do I add a new tool to the everything server?"})
        assert not r.is_error, text_of(r)
        got = r.structured_content
        r = await c.call_tool("ask", {"question": "When does the release train leave?", "top_k": 1})
        notes = r.structured_content
    assert got["passages"][0]["uri"] == DOC + "extension.md" and got["passages"][0]["server"] == "everything"
    assert "registerTool" in got["passages"][0]["text"]
    assert notes["passages"][0]["uri"] == "notes://1"


def test_mcpctl_ask_shows_the_same_passages_without_a_model(kit: Kit, tmp_path: Path, runner: CliRunner) -> None:
    _project(kit, tmp_path, profiles={"no-notes": {"deny": ["notes/*"]}})
    r = runner.invoke(app, ["ask", "--project", "p", "How do I add a new tool to the everything server?",
                            "-o", "json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["passages"][0]["uri"] == DOC + "extension.md" and "answer" not in got
    assert got["resources"] >= 8                      # 7 documents and the note
    r = runner.invoke(app, ["ask", "--project", "p", "release train Thursday", "--profile", "no-notes",
                            "-o", "json"])
    assert r.exit_code == 0, r.output
    assert all(p["server"] == "everything" for p in json.loads(r.stdout)["passages"])
    r = runner.invoke(app, ["ask", "--project", "p", "anything", "--profile", "nope"])
    assert r.exit_code != 0 and "no profile 'nope'" in r.output
