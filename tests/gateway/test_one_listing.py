"""One listing everywhere: the CLI lists an upstream the way the gateway connects to it (the same
era, client info and capabilities: `upstream.client`), so the npm everything server,
which adds its sampling, elicitation and roots tools only for a client that offers those
capabilities, has the same tools in `create server`, `tools list --refresh` and the gateway's
`tools/list`, whoever listed it last."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from gwkit import Kit, npm_bin, wait_tools
from typer.testing import CliRunner

from ci_support import skip_unless_ci
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.presentation.builtins import BUILTIN_NAMES as BUILTINS

pytestmark = [pytest.mark.npm]



def _everything() -> str:
    exe = npm_bin("mcp-server-everything")
    if exe is None:
        skip_unless_ci("npm reference server 'everything' not installed (run: npm install --prefix .npm-servers "
                       "@modelcontextprotocol/server-everything)")
    assert exe is not None
    return exe


def test_create_server_tools_list_and_the_gateway_count_the_same_everything_tools(
        kit: Kit, runner: CliRunner) -> None:
    exe = _everything()
    r = runner.invoke(app, ["create", "server", "everything", "--", exe])
    assert r.exit_code == 0, r.output
    said = re.search(r"listed: (\d+) tools", r.stderr)
    assert said, r.stderr
    created = {t["name"] for t in FilesCache().read_server_tools("everything") or []}
    assert int(said.group(1)) == len(created)
    # the tools a client offering sampling, elicitation and roots gets
    assert {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} <= created

    kit.project("p", ["everything"], names={"style": "bare"}, presentation="flat")
    r = runner.invoke(app, ["tools", "list", "--project", "p", "--refresh", "-o", "json"])
    assert r.exit_code == 0, r.output
    listed = {row["presentedName"] for row in json.loads(r.stdout)}
    assert listed == created

    async def gateway_lists() -> set[str]:
        async with kit.client("p") as c:
            await wait_tools(c, created, timeout=60)
            return {t.name for t in (await c.list_tools()).tools} - BUILTINS

    assert anyio.run(gateway_lists) == created
    assert {t["name"] for t in FilesCache().read_server_tools("everything") or []} == created   # the gateway's too
    assert kit.store.status("Server", "everything")["tools"] == len(created)
