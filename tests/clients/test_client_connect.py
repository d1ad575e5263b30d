"""`mcpctl connect` / `disconnect` on each client's real file: the gateway entry, every other byte
kept, the imported entries replaced and put back, the original restored byte for byte."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from client_files import EXPECTED, Env
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.clients import jsonc
from mcpctl.errors import EXIT_CONFLICT, EXIT_NOT_FOUND, EXIT_USER

CLIENTS = list(EXPECTED)
HTTP_CLIENTS = [c for c in CLIENTS if c != "claude-desktop"]
CONTAINER = {"claude-desktop": ("mcpServers",), "claude-code": ("mcpServers",), "cursor": ("mcpServers",),
             "vscode": ("servers",), "codex": ("mcp_servers",), "mcp-json": ("mcpServers",)}
# Comments that must survive connect (only a comment inside a removed entry's value goes with it).
COMMENTS = {"cursor": ["// Cursor: MCP servers for every workspace", "/* the calculator from mcpctl's examples */"],
            "vscode": ["// VS Code user MCP configuration", "// stdio, with a literal token"],
            "codex": ["# Codex configuration", "theme = \"dark\" # trailing comment", "[mcp_servers.not_a_table]",
                      "# GitHub, with its token in clear"]}


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


def parse(client: str, text: str) -> Any:
    if client == "codex":
        return tomllib.loads(text)
    if client in ("claude-desktop", "claude-code", "mcp-json"):
        return json.loads(text)                 # these clients read strict JSON
    return jsonc.loads(text)


def entries(client: str, doc: Any) -> dict[str, Any]:
    cur = doc
    for k in CONTAINER[client]:
        cur = cur.get(k, {})
    return cur


def without_entries(client: str, doc: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    cur = doc
    for k in CONTAINER[client][:-1]:
        cur = cur[k]
    cur.pop(CONTAINER[client][-1], None)
    if client == "claude-code":
        for settings in doc.get("projects", {}).values():
            settings.pop("mcpServers", None)
    return doc


@pytest.mark.parametrize("client", CLIENTS)
def test_import_connect_disconnect_leaves_the_file_byte_identical(env: Env, client: str) -> None:
    path = env.write(client)
    original = path.read_bytes()
    assert run("import", client, "--project", "work").exit_code == 0
    r = run("connect", client, "--project", "work", "--replace-imported")
    assert r.exit_code == 0, r.output
    text = path.read_text()
    doc = parse(client, text)
    gateway = entries(client, doc)["mcpctl"]
    assert gateway["args"][-3:] == ["serve", "--project", "work"]
    assert os.path.isabs(gateway["command"]) and Path(gateway["command"]).name == "mcpctl"
    assert gateway["env"]["MCPCTL_HOME"] == str(env.mcpctl_home)
    _, skipped = EXPECTED[client]
    left = set(entries(client, doc))
    assert left == {"mcpctl"} | ({n for n, why in skipped.items() if "local to" not in why} - {"ws-files"}) \
        | ({"ws-files"} if client == "vscode" else set())
    if client == "claude-code":
        assert "mcpServers" not in json.dumps(doc["projects"][str(env.work)]) or \
            doc["projects"][str(env.work)]["mcpServers"] == {}
        assert doc["projects"]["/somewhere/else"]["mcpServers"] == {"other": {"command": "other-server"}}
    assert without_entries(client, doc) == without_entries(client, parse(client, original.decode()))
    for comment in COMMENTS.get(client, []):
        assert comment in text
    assert "backup: " in r.stdout
    backup = Path(r.stdout.split("backup: ", 1)[1].split("\n", 1)[0])
    assert backup.read_bytes() == original and stat.S_IMODE(backup.stat().st_mode) == 0o600
    r = run("disconnect", client)
    assert r.exit_code == 0, r.output
    assert "original entries restored" in r.stdout
    assert path.read_bytes() == original


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_connect_http_writes_the_url_and_a_token_reference_never_the_token(env: Env, client: str) -> None:
    path = env.write(client)
    original = path.read_bytes()
    run("import", client, "--project", "work")
    r = run("connect", client, "--project", "work", "--transport", "http", "--port", "9876")
    assert r.exit_code == 0, r.output
    token_file = env.mcpctl_home / "state" / "tokens" / "work.token"
    token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    text = path.read_text()
    assert token not in text
    gateway = entries(client, parse(client, text))["mcpctl"]
    assert gateway["url"] == "http://127.0.0.1:9876/mcp"
    reference = {"claude-code": ("headersHelper", f"$(cat {token_file})"),
                 "codex": ("bearer_token_env_var", "MCPCTL_TOKEN"),
                 "mcp-json": ("headers", "Bearer ${MCPCTL_TOKEN}"),
                 "cursor": ("headers", "Bearer ${env:MCPCTL_TOKEN}"),
                 "vscode": ("headers", "Bearer ${env:MCPCTL_TOKEN}")}[client]
    assert reference[1] in json.dumps(gateway[reference[0]]) or reference[1] == gateway[reference[0]]
    assert "mcpctl serve --project work --transport http --port 9876" in r.stderr
    assert run("disconnect", client).exit_code == 0
    assert path.read_bytes() == original


def test_claude_desktop_has_no_http_entries(env: Env) -> None:
    env.write("claude-desktop")
    r = run("connect", "claude-desktop", "--project", "work", "--transport", "http")
    assert r.exit_code == EXIT_NOT_FOUND           # the project does not exist yet
    run("create", "project", "work")
    r = run("connect", "claude-desktop", "--project", "work", "--transport", "http")
    assert r.exit_code == EXIT_USER and "over stdio" in r.stderr


@pytest.mark.parametrize(("client", "expected"), [
    ("cursor", {"REMOTE_TOKEN": "${env:REMOTE_TOKEN}"}),
    ("claude-code", {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "CALC_MODE": "${CALC_MODE}"}),
    ("vscode", {"SENTRY_TOKEN": "${env:SENTRY_TOKEN}"}),
])
def test_the_entry_passes_through_the_variables_the_projects_servers_reference(env: Env, client: str,
                                                                               expected: dict[str, str]) -> None:
    path = env.write(client)
    run("import", client, "--project", "work")
    r = run("connect", client, "--project", "work")
    assert r.exit_code == 0, r.output
    gateway = entries(client, parse(client, path.read_text()))["mcpctl"]
    assert {k: v for k, v in gateway["env"].items() if k != "MCPCTL_HOME"} == expected
    assert "through to the gateway" in r.stderr


def test_codex_passes_variables_with_env_vars(env: Env) -> None:
    path = env.write("codex")
    run("import", "codex", "--project", "work")
    run("connect", "codex", "--project", "work")
    gateway = tomllib.loads(path.read_text())["mcp_servers"]["mcpctl"]
    assert gateway["env_vars"] == ["CALC_MODE", "SENTRY_TOKEN"]
    assert gateway["env"] == {"MCPCTL_HOME": str(env.mcpctl_home)}


def test_claude_desktop_warns_that_it_cannot_pass_variables(env: Env) -> None:
    env.write("claude-desktop")
    run("create", "server", "gh", "--env", "TOKEN=${env:GH_TOKEN}", "--", "mcpctl", "example-server", "notes")
    run("create", "project", "work", "--server", "gh")
    r = run("connect", "claude-desktop", "--project", "work")
    assert r.exit_code == 0
    assert "cannot pass environment variables through" in r.stderr and "GH_TOKEN" in r.stderr


def test_an_entry_named_mcpctl_that_mcpctl_did_not_write_is_a_conflict(env: Env) -> None:
    path = env.write("mcp-json", json.dumps({"mcpServers": {"mcpctl": {"command": "something-else"}}}))
    before = path.read_bytes()
    run("create", "project", "work")
    r = run("connect", "mcp-json", "--project", "work")
    assert r.exit_code == EXIT_CONFLICT and "--name" in r.stderr
    assert path.read_bytes() == before
    assert run("connect", "mcp-json", "--project", "work", "--name", "gateway").exit_code == 0
    assert set(json.loads(path.read_text())["mcpServers"]) == {"mcpctl", "gateway"}
    assert run("disconnect", "mcp-json", "--name", "gateway").exit_code == 0
    assert path.read_bytes() == before


@pytest.mark.parametrize("client", ["cursor", "vscode", "codex", "claude-code"])
def test_disconnect_after_the_user_edited_the_file_keeps_the_edit_and_restores_the_entries(
        env: Env, client: str) -> None:
    path = env.write(client)
    original_doc = parse(client, path.read_text())
    run("import", client, "--project", "work")
    assert run("connect", client, "--project", "work", "--replace-imported").exit_code == 0
    text = path.read_text()
    if client == "codex":
        edited = text + '\n[mcp_servers.added-later]\ncommand = "later"\n'
    else:
        edited = text.replace('"mcpctl": {', '"added-later": {"command": "later"},\n    "mcpctl": {', 1)
    path.write_text(edited)
    r = run("disconnect", client)
    assert r.exit_code == 0, r.output
    assert "changed since mcpctl connect" in r.stderr
    doc = parse(client, path.read_text())
    assert entries(client, doc) == {**entries(client, original_doc), "added-later": {"command": "later"}}
    if client == "claude-code":
        assert doc["projects"] == original_doc["projects"]


def test_connecting_again_with_another_project_reconfigures_and_disconnect_still_restores(env: Env) -> None:
    path = env.write("cursor")
    original = path.read_bytes()
    run("import", "cursor", "--project", "work")
    run("create", "project", "other", "--server", "calc")
    assert "created" in run("connect", "cursor", "--project", "work", "--replace-imported").stdout
    assert "unchanged" in run("connect", "cursor", "--project", "work").stdout
    r = run("connect", "cursor", "--project", "other")
    assert "entry 'mcpctl' configured" in r.stdout
    assert jsonc.loads(path.read_text())["mcpServers"]["mcpctl"]["args"][-1] == "other"
    assert run("disconnect", "cursor").exit_code == 0
    assert path.read_bytes() == original


def test_connect_creates_a_missing_file_and_disconnect_removes_it(env: Env) -> None:
    run("create", "project", "work")
    path = env.path("vscode")
    assert not path.exists()
    r = run("connect", "vscode", "--project", "work")
    assert r.exit_code == 0, r.output
    assert jsonc.loads(path.read_text())["servers"]["mcpctl"]["type"] == "stdio"
    assert run("disconnect", "vscode").exit_code == 0
    assert not path.exists()


def test_dry_run_changes_nothing(env: Env) -> None:
    path = env.write("codex")
    original = path.read_bytes()
    run("import", "codex", "--project", "work")
    r = run("connect", "codex", "--project", "work", "--replace-imported", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "created (dry run)" in r.stdout and "would remove" in r.stdout
    assert path.read_bytes() == original
    assert not (env.mcpctl_home / "state" / "clients" / "connections.json").exists()
    assert not (env.mcpctl_home / "state" / "clients" / "backups").exists()


def test_a_symlinked_file_stays_a_link_and_keeps_its_mode(env: Env, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{\n  "mcpServers": {}\n}\n')
    real.chmod(0o640)
    link = env.path("cursor")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    run("create", "project", "work")
    assert run("connect", "cursor", "--project", "work").exit_code == 0
    assert link.is_symlink() and "mcpctl" in jsonc.loads(real.read_text())["mcpServers"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert run("disconnect", "cursor").exit_code == 0
    assert real.read_text() == '{\n  "mcpServers": {}\n}\n' and link.is_symlink()


def test_disconnect_without_an_entry_is_not_found(env: Env) -> None:
    env.write("cursor")
    r = run("disconnect", "cursor")
    assert r.exit_code == EXIT_NOT_FOUND and "no mcpctl entry" in r.stderr


def test_connect_json_output_pins_the_keys(env: Env) -> None:
    env.write("cursor")
    run("import", "cursor", "--project", "work")
    r = run("connect", "cursor", "--project", "work", "-o", "json")
    data = json.loads(r.stdout)
    assert set(data) == {"client", "file", "name", "action", "method", "project", "transport", "entry", "dryRun",
                         "backup", "removed", "kept", "commands", "warnings"}
    assert data["action"] == "created" and data["method"] == "file"
