"""`spec.auth` of a Server: validated with clear errors, round-trips unchanged, never a token in
output; the token file's state as the CLI shows it; import of client entries that sign in."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.cli import app

BASE = """\
apiVersion: mcpctl/v1
kind: Server
metadata: {name: remote}
spec:
  transport: http
  url: https://mcp.example.com/mcp
"""


def _apply(runner: CliRunner, text: str) -> object:
    return runner.invoke(app, ["apply", "-f", "-"], input=text)


def test_oauth_server_round_trips_unchanged(runner: CliRunner) -> None:
    text = BASE + "  auth: {type: oauth, scopes: [read, write], clientId: mcpctl-123, clientSecret: '${env:SECRET}'}\n"
    r = _apply(runner, text)
    assert r.exit_code == 0, r.output
    got = runner.invoke(app, ["get", "server", "remote", "-o", "yaml"])
    assert "clientSecret: ${env:SECRET}" in got.output
    again = runner.invoke(app, ["apply", "-f", "-"], input=got.output)
    assert "server/remote unchanged" in again.output


def test_a_server_without_auth_gains_no_auth_field(runner: CliRunner) -> None:
    assert _apply(runner, BASE).exit_code == 0
    got = runner.invoke(app, ["get", "server", "remote", "-o", "json"])
    assert "auth" not in json.loads(got.output)["spec"]


@pytest.mark.parametrize(("auth", "message"), [
    ("{type: basic}", "spec.auth.type: 'basic' is not one of: oauth"),
    ("{scopes: [a]}", "spec.auth.type is required"),
    ("{type: oauth, clientSecret: hunter22}", "spec.auth.clientSecret: must be a reference"),
    ("{type: oauth, clientSecret: '${env:S}'}", "spec.auth.clientSecret is given without spec.auth.clientId"),
    ("{type: oauth, clientMetadataUrl: 'http://x.example/c.json'}", "is not an https:// URL with a path"),
    ("{type: oauth, clientId: a, clientMetadataUrl: 'https://x.example/c.json'}", "give one"),
    ("{type: oauth, scope: [a]}", "unknown field 'spec.auth.scope'"),
])
def test_bad_auth_is_refused_naming_the_field(runner: CliRunner, auth: str, message: str) -> None:
    r = _apply(runner, BASE + f"  auth: {auth}\n")
    assert r.exit_code != 0
    assert message in r.output


def test_auth_on_a_stdio_server_is_refused(runner: CliRunner) -> None:
    text = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: s}\nspec: {command: a, auth: {type: oauth}}\n"
    r = _apply(runner, text)
    assert r.exit_code != 0 and "spec.auth is for transport: http or sse" in r.output


def test_auth_and_a_static_authorization_header_are_refused(runner: CliRunner) -> None:
    r = _apply(runner, BASE + "  headers: {Authorization: 'Bearer ${env:T}'}\n  auth: {type: oauth}\n")
    assert r.exit_code != 0 and "also sends a static Authorization header" in r.output


def test_sign_in_state_shows_expiry_never_a_token(runner: CliRunner, tmp_home: Path) -> None:
    import anyio
    from mcp.shared.auth import OAuthToken

    from mcpctl.auth.storage import FileTokenStorage, token_path

    assert _apply(runner, BASE + "  auth: {type: oauth}\n").exit_code == 0
    wide = runner.invoke(app, ["get", "servers", "-o", "wide"])
    assert "signed-out" in wide.output
    store = FileTokenStorage("remote", "https://mcp.example.com/mcp")
    anyio.run(store.set_tokens, OAuthToken(access_token="AT-SECRET-1", refresh_token="RT-SECRET-2", expires_in=600))
    assert stat.S_IMODE(os.stat(token_path("remote")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(token_path("remote").parent).st_mode) == 0o700
    outputs = [runner.invoke(app, args).output for args in (
        ["get", "servers", "-o", "wide"], ["describe", "server", "remote"], ["get", "server", "remote", "-o", "yaml"],
        ["doctor", "--no-connect"])]
    assert "signed-in (until" in outputs[0] and "renews" in outputs[0]
    assert "signed in (access token expires" in outputs[1]
    expected = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() + 600))
    assert expected in outputs[1]
    assert all("SECRET" not in o for o in outputs)
    assert "SECRET" not in "".join(p.read_text() for p in tmp_home.rglob("*.yaml"))
    out = runner.invoke(app, ["logout", "remote"])
    assert out.exit_code == 0 and "signed out" in out.output
    assert not token_path("remote").exists()


def test_tokens_for_another_url_are_not_used(tmp_home: Path) -> None:
    import anyio
    from mcp.shared.auth import OAuthToken

    from mcpctl.auth.storage import FileTokenStorage, sign_in_state

    anyio.run(FileTokenStorage("remote", "https://old.example/mcp").set_tokens, OAuthToken(access_token="x"))
    assert sign_in_state("remote", "https://new.example/mcp").state == "signed-out"
    assert anyio.run(FileTokenStorage("remote", "https://new.example/mcp").get_tokens) is None


def test_import_marks_oauth_entries_and_says_to_log_in(runner: CliRunner, tmp_path: Path) -> None:
    cfg = tmp_path / ".mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "linear": {"type": "http", "url": "https://mcp.linear.example/mcp", "oauth": {"clientId": "abc", "callbackPort": 8123}},
        "legacy": {"type": "sse", "url": "https://legacy.example/sse"},
    }}))
    r = runner.invoke(app, ["import", "claude-code", "--file", str(cfg)])
    assert r.exit_code == 0, r.output
    assert "server/linear: signs in with OAuth: run mcpctl login linear" in r.output
    assert "mcpctl login --port 8123" in r.output
    got = json.loads(runner.invoke(app, ["get", "server", "linear", "-o", "json"]).output)
    assert got["spec"]["auth"] == {"type": "oauth", "clientId": "abc"}
    legacy = json.loads(runner.invoke(app, ["get", "server", "legacy", "-o", "json"]).output)
    assert legacy["spec"]["transport"] == "sse" and "auth" not in legacy["spec"]


@pytest.mark.parametrize(("auth", "client_id", "named"), [
    ("{type: oauth}", "dyn-4f1c", True),                                         # registered dynamically
    ("{type: oauth, clientId: pre-registered}", "pre-registered", False),
    ("{type: oauth, clientMetadataUrl: 'https://example.com/mcpctl.json'}", "https://example.com/mcpctl.json", False),
    ("{type: oauth}", None, False),                                              # never signed in
])
def test_doctor_names_dynamic_registration_deprecated_only_where_it_was_used(
        runner: CliRunner, auth: str, client_id: str | None, named: bool) -> None:
    import json

    import anyio
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from mcpctl.auth.storage import FileTokenStorage

    assert _apply(runner, BASE + f"  auth: {auth}\n").exit_code == 0
    store = FileTokenStorage("remote", "https://mcp.example.com/mcp")
    if client_id:
        anyio.run(store.set_client_info, OAuthClientInformationFull(
            client_id=client_id, redirect_uris=["http://127.0.0.1:33418/callback"]))
        anyio.run(store.set_tokens, OAuthToken(access_token="AT", expires_in=600))
    data = json.loads(runner.invoke(app, ["doctor", "--no-connect", "-o", "json"]).stdout)
    found = [c for c in data["checks"] if c["scope"] == "server/remote" and c["check"] == "registration"]
    if not named:
        assert found == [], found
        return
    [check] = found
    assert check["status"] == "info" and "registered dynamically" in check["message"], check
    assert "deprecates" in check["message"] and "spec.auth.clientMetadataUrl" in check["hint"], check
