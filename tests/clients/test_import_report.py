"""What `import` says, read from an `ImportReport` without the CLI (`mcpctl.clients.import_report`)."""

from __future__ import annotations

from pathlib import Path

from mcpctl.clients.base import Skipped
from mcpctl.clients.import_report import import_json, import_text
from mcpctl.clients.importer import ImportedServer, ImportReport
from mcpctl.clients.secretfile import SecretNote


def _report(dry_run: bool) -> ImportReport:
    gh = ImportedServer("GitHub", "", "github", "stdio", action="created", notes=["runs npx"],
                        secrets=[SecretNote("env.GITHUB_TOKEN", "moved", "${file:/s/github-token}", changed=True),
                                 SecretNote("env.HOME_DIR", "env", "${env:HOME_DIR}")])
    return ImportReport("cursor", Path("/c/mcp.json"), dry_run, servers=[gh],
                        skipped=[Skipped("odd", "no command or url", transport="?")])


def test_the_text_names_each_server_its_secrets_notes_and_what_was_skipped() -> None:
    assert import_text(_report(dry_run=True)).splitlines() == [
        "server/github created (dry run) (from 'GitHub')",
        "secrets:",
        "  server/github env.GITHUB_TOKEN: literal secret would move to ${file:/s/github-token} (0600)",
        "  server/github env.HOME_DIR: stays ${env:HOME_DIR} (the client's variable; set it where the gateway starts)",
        "notes:",
        "  server/github: runs npx",
        "not imported:",
        "  'odd': no command or url"]
    assert "literal secret moved to" in import_text(_report(dry_run=False))


def test_the_json_object() -> None:
    got = import_json(_report(dry_run=False))
    assert got["client"] == "cursor" and got["file"] == "/c/mcp.json" and got["project"] is None
    assert got["servers"][0]["secrets"][1] == {"field": "env.HOME_DIR", "kind": "env", "reference": "${env:HOME_DIR}"}
    assert got["skipped"] == [{"entry": "odd", "scope": "", "transport": "?", "reason": "no command or url"}]
