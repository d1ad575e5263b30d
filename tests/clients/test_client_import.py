"""`mcpctl import FROM`: each client's real file becomes servers; secrets, variables, names, reasons."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from client_files import EXPECTED, HTTP_TOKEN, TOKEN, Env
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.clients.importer import dns_label, import_client
from mcpctl.errors import EXIT_NOT_FOUND, EXIT_USER
from mcpctl.resources.store import Store

CLIENTS = list(EXPECTED)


def run(*args: str):
    return CliRunner().invoke(app, list(args), prog_name="mcpctl")


def store_snapshot(mcpctl_home: Path) -> dict[str, bytes]:
    root = mcpctl_home / "config" / "resources"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.yaml"))} if root.exists() else {}


def secret_files(mcpctl_home: Path) -> dict[str, tuple[bytes, int]]:
    root = mcpctl_home / "state" / "secrets"
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("client", CLIENTS)
def test_import_turns_each_representable_entry_into_a_server_and_lists_the_rest_with_a_reason(
        env: Env, client: str) -> None:
    env.write(client)
    r = run("import", client, "--project", "work")
    assert r.exit_code == 0, r.output
    servers, skipped = EXPECTED[client]
    store = Store()
    assert sorted(store.names("Server")) == sorted(servers)
    for name, transport in servers.items():
        assert store.get("Server", name)["spec"]["transport"] == transport
        assert f"server/{name} created" in r.stdout
    assert store.get("Project", "work")["spec"]["servers"] == list(servers)
    assert "project/work created" in r.stdout
    not_imported = r.stdout.split("not imported:\n", 1)[1] if skipped else ""
    assert bool(not_imported) == ("not imported:" in r.stdout)
    for entry, why in skipped.items():
        line = next(line for line in not_imported.splitlines() if line.strip().startswith(repr(entry)))
        assert why in line, line
    report = json.loads(run("import", client, "-o", "json").stdout)
    assert {k["entry"] for k in report["skipped"]} == set(skipped)


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "vscode", "codex"])
def test_a_literal_token_moves_to_a_0600_file_referenced_from_the_store(env: Env, client: str) -> None:
    env.write(client)
    r = run("import", client)
    assert r.exit_code == 0, r.output
    spec = Store().get("Server", "github")["spec"]
    ref = spec["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert ref.startswith("${file:") and TOKEN not in json.dumps(spec)
    path = Path(ref[len("${file:"):-1])
    assert path.read_text().strip() == TOKEN
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert TOKEN not in "".join(p.read_text() for p in (env.mcpctl_home / "config").rglob("*.yaml"))
    assert f"env.GITHUB_PERSONAL_ACCESS_TOKEN: literal secret moved to {ref} (0600)" in r.stdout


def test_a_bearer_header_keeps_its_scheme_and_only_the_token_moves(env: Env) -> None:
    env.write("claude-code")
    assert run("import", "claude-code").exit_code == 0
    auth = Store().get("Server", "sentry")["spec"]["headers"]["Authorization"]
    assert auth.startswith("Bearer ${file:")
    assert Path(auth[len("Bearer ${file:"):-1]).read_text().strip() == HTTP_TOKEN


@pytest.mark.parametrize(("client", "server", "field", "expected"), [
    ("claude-code", "github", ("env", "GITHUB_PERSONAL_ACCESS_TOKEN"), "${env:GITHUB_TOKEN}"),
    ("claude-code", "calc", ("env", "CALC_MODE"), "${env:CALC_MODE}"),
    ("cursor", "remote", ("headers", "Authorization"), "Bearer ${env:REMOTE_TOKEN}"),
    ("vscode", "sentry", ("headers", "Authorization"), "Bearer ${env:SENTRY_TOKEN}"),
    ("codex", "calc", ("env", "CALC_MODE"), "${env:CALC_MODE}"),
    ("codex", "sentry", ("headers", "Authorization"), "Bearer ${env:SENTRY_TOKEN}"),
    ("mcp-json", "sentry", ("headers", "Authorization"), "Bearer ${env:SENTRY_TOKEN}"),
])
def test_each_clients_variable_syntax_becomes_an_env_reference(env: Env, client: str, server: str,
                                                                field: tuple[str, str], expected: str) -> None:
    env.write(client)
    r = run("import", client)
    assert r.exit_code == 0, r.output
    assert Store().get("Server", server)["spec"][field[0]][field[1]] == expected
    assert f"server/{server} {field[0]}.{field[1]}: stays {expected.removeprefix('Bearer ')}" in r.stdout


def test_client_notes_are_reported_defaults_inputs_and_home(env: Env) -> None:
    env.write("claude-code")
    out = run("import", "claude-code").stdout
    assert "the default of ${CALC_MODE:-…} is dropped" in out
    env.write("vscode")
    out = run("import", "vscode").stdout
    assert "${input:sentry-token} is prompted for by the client; mcpctl reads ${env:SENTRY_TOKEN} instead" in out
    env.write("cursor")
    run("import", "cursor")
    assert Store().get("Server", "notes")["spec"]["args"][-1] == f"{env.home}/notes"


def test_codex_timeouts_and_a_disabled_entry(env: Env) -> None:
    env.write("codex")
    run("import", "codex", "--project", "work")
    assert Store().get("Server", "calc")["spec"]["timeouts"] == {"connect": 20.0, "call": 90.0}
    assert "not_a_table" not in Store().names("Server")


def test_codex_sse_entries_become_sse_servers(env: Env) -> None:
    env.write("codex", '[mcp_servers.events]\nurl = "https://mcp.example.com/sse"\n'
                       '[mcp_servers.legacy]\nurl = "https://mcp.example.com/stream"\ntransport = "sse"\n'
                       'bearer_token_env_var = "EV_TOKEN"\n')
    r = run("import", "codex")
    assert r.exit_code == 0 and "not imported" not in r.stdout, r.output
    assert Store().get("Server", "events")["spec"]["transport"] == "sse"
    legacy = Store().get("Server", "legacy")["spec"]
    assert legacy["transport"] == "sse" and legacy["headers"] == {"Authorization": "Bearer ${env:EV_TOKEN}"}


@pytest.mark.parametrize("client", CLIENTS)
def test_importing_twice_changes_nothing(env: Env, client: str) -> None:
    env.write(client)
    first = run("import", client, "--project", "work")
    assert first.exit_code == 0, first.output
    store, secrets = store_snapshot(env.mcpctl_home), secret_files(env.mcpctl_home)
    records = (env.mcpctl_home / "state" / "clients" / "imports.json").read_bytes()
    second = run("import", client, "--project", "work")
    assert second.exit_code == 0, second.output
    assert "created" not in second.stdout and "configured" not in second.stdout
    assert all(line.split(" ")[1] == "unchanged" for line in second.stdout.splitlines()
               if line.startswith(("server/", "project/")))
    assert store_snapshot(env.mcpctl_home) == store
    assert secret_files(env.mcpctl_home) == secrets
    assert (env.mcpctl_home / "state" / "clients" / "imports.json").read_bytes() == records


def test_a_changed_entry_updates_its_server_on_the_next_import(env: Env) -> None:
    p = env.write("cursor")
    run("import", "cursor")
    p.write_text(p.read_text().replace('"calc"]', '"calc", "--precise"]'))
    r = run("import", "cursor")
    assert "server/calc configured" in r.stdout
    assert Store().get("Server", "calc")["spec"]["args"][-1] == "--precise"


def test_dry_run_writes_nothing(env: Env) -> None:
    env.write("claude-desktop")
    r = run("import", "claude-desktop", "--project", "work", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "server/github created (dry run)" in r.stdout and "literal secret would move to" in r.stdout
    assert store_snapshot(env.mcpctl_home) == {}
    assert secret_files(env.mcpctl_home) == {}
    assert not (env.mcpctl_home / "state" / "clients" / "imports.json").exists()


def test_names_become_dns_labels_and_collisions_get_a_suffix_shown_in_the_report(env: Env) -> None:
    assert dns_label("My Server (prod)") == "my-server-prod"
    assert dns_label("Ünïcode_Tools") == "unicode-tools"
    assert dns_label("___") == "server"
    assert len(dns_label("x" * 100)) == 63
    run("create", "server", "github", "--url", "http://127.0.0.1:1/mcp")   # a different server named github
    env.write("mcp-json", json.dumps({"mcpServers": {
        "GitHub": {"command": "mcpctl", "args": ["example-server", "notes"]},
        "My Tools": {"command": "mcpctl", "args": ["example-server", "calc"]},
        "my_tools": {"command": "mcpctl", "args": ["example-server", "textkit"]},
    }}))
    r = run("import", "mcp-json")
    assert r.exit_code == 0, r.output
    assert "server/github-2 created (from 'GitHub')" in r.stdout
    assert "server/my-tools created (from 'My Tools')" in r.stdout
    assert "server/my-tools-2 created (from 'my_tools')" in r.stdout
    assert Store().get("Server", "github")["spec"]["transport"] == "http"      # untouched
    again = run("import", "mcp-json")
    assert "server/github-2 unchanged (from 'GitHub')" in again.stdout
    assert "server/my-tools-2 unchanged (from 'my_tools')" in again.stdout


def test_an_identical_server_already_registered_is_reused(env: Env) -> None:
    run("create", "server", "calc", "--", "mcpctl", "example-server", "calc")
    env.write("cursor")
    r = run("import", "cursor")
    assert "server/calc unchanged" in r.stdout
    assert "calc-2" not in Store().names("Server")


def test_an_entry_the_schema_refuses_is_listed_and_the_others_are_imported(env: Env) -> None:
    env.write("mcp-json", json.dumps({"mcpServers": {
        "bad-env": {"command": "mcpctl", "env": {"NOT-A-VAR": "1"}},
        "calc": {"command": "mcpctl", "args": ["example-server", "calc"]},
    }}))
    r = run("import", "mcp-json")
    assert r.exit_code == 0, r.output
    assert "server/calc created" in r.stdout
    assert "'bad-env'" in r.stdout.split("not imported:")[1]
    assert Store().names("Server") == ["calc"]


def test_a_missing_file_is_not_found_and_a_malformed_one_names_the_line(env: Env) -> None:
    r = run("import", "cursor")
    assert r.exit_code == EXIT_NOT_FOUND
    assert "Cursor configuration not found" in r.stderr and "--file" in r.stderr
    env.write("cursor", '{\n  "mcpServers": {\n    "a": {"command": }\n  }\n}\n')
    r = run("import", "cursor")
    assert r.exit_code == EXIT_USER
    assert "mcp.json: line 3, column" in r.stderr


def test_an_unknown_client_is_a_usage_error_with_a_suggestion(env: Env) -> None:
    r = run("import", "claude")
    assert r.exit_code == 2
    assert "unknown client 'claude'" in r.stderr and "claude-code" in r.stderr


def test_file_option_reads_a_workspace_file_and_resolves_workspace_folder(env: Env) -> None:
    ws = env.work / ".vscode"
    ws.mkdir()
    (ws / "mcp.json").write_text('{"servers": {"files": {"type": "stdio", "command": "mcp-files", '
                                 '"args": ["${workspaceFolder}/src", "${workspaceFolderBasename}"]}}}')
    r = run("import", "vscode", "--file", str(ws / "mcp.json"))
    assert r.exit_code == 0, r.output
    assert Store().get("Server", "files")["spec"]["args"] == [f"{env.work}/src", env.work.name]


def test_core_report_carries_the_mapping_and_the_reasons(env: Env) -> None:
    env.write("claude-code")
    report = import_client("claude-code", project="work", store=Store())
    by_entry = {s.entry: s for s in report.servers}
    assert by_entry["calc"].scope == f"local {env.work}" and by_entry["calc"].server == "calc"
    assert by_entry["linear"].transport == "sse" and "linear" not in {k.name for k in report.skipped}
    assert report.project is not None and report.project.action == "created"
    assert os.environ["HOME"] == str(env.home)


# Every literal-secret shape a client file holds in practice (the first five were always moved);
# each value is unique, so a test can look for it anywhere mcpctl writes or prints.
SHAPES: dict[str, str] = {
    "token env": TOKEN,                                        # GITHUB_PERSONAL_ACCESS_TOKEN=ghp_…
    "bearer header": HTTP_TOKEN,                               # Authorization: Bearer sk-…
    "flag=value": "flagEqualsValue-0123456789",                # --token=…
    "token argument": "sk-positionalToken0123456789",          # a bare sk-… argument
    "query api_key": "queryKeyValue0123456789",                # https://…/mcp?api_key=…
    "url password argument": "pgArgPw",                        # postgresql://app:…@db/app
    "url password env": "envUrlPw",                            # DATABASE_URL=postgres://u:…@db/x
    "flag value pair": "hunter2",                              # --password hunter2
    "slack webhook": "T000/B000/slackHookSecret",              # hooks.slack.com/services/…
    "discord webhook": "123456789/discordHookSecret",          # discord.com/api/webhooks/…
    "server url password": "httpUrlPw",                        # http://alice:…@host/mcp
    "cookie header": "sid=cookieValue",                        # Cookie: …
    "short password env": "Pw7chrs",                           # DB_PASSWORD, 7 characters
    "api-key pair": "ak2short",                                # --api-key …
    "proxy authorization": "proxyCreds",                       # Proxy-Authorization: Basic …
    "query sig": "sigValue",                                   # ?sig=…
    "docker -e pair": "xoxb-dockerEnvToken",                   # -e SLACK_BOT_TOKEN=…
    "sse url key": "sseKeyValue",                              # an SSE server's https://…/sse?key=…
}
STDIO_ARGS = [
    "-y", "@modelcontextprotocol/server-postgres", f"postgresql://app:{SHAPES['url password argument']}@db:5432/app",
    "--password", SHAPES["flag value pair"], f"--token={SHAPES['flag=value']}", "--api-key", SHAPES["api-key pair"],
    SHAPES["token argument"], "-p", "8080", "--no-auth", "-e", f"SLACK_BOT_TOKEN={SHAPES['docker -e pair']}",
    f"https://hooks.slack.com/services/{SHAPES['slack webhook']}",
    f"https://discord.com/api/webhooks/{SHAPES['discord webhook']}",
]
STDIO_ENV = {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN, "DATABASE_URL": f"postgres://u:{SHAPES['url password env']}@db/x",
             "DB_PASSWORD": SHAPES["short password env"], "LOG_LEVEL": "debug", "AUTH_TYPE": "basic",
             "MAX_TOKENS": "4096", "TOKEN_LIMIT": "1000", "AUTH_ENABLED": "true", "KEY_FILE": "~/keys/a.pem"}
NOT_SECRET = ("LOG_LEVEL", "AUTH_TYPE", "MAX_TOKENS", "TOKEN_LIMIT", "AUTH_ENABLED", "KEY_FILE")
HTTP_URL = (f"http://alice:{SHAPES['server url password']}@mcp.example.com/mcp?api_key={SHAPES['query api_key']}"
            f"&region=eu&sig={SHAPES['query sig']}")
HTTP_HEADERS = {"Authorization": f"Bearer {HTTP_TOKEN}", "Cookie": SHAPES["cookie header"],
                "Proxy-Authorization": f"Basic {SHAPES['proxy authorization']}", "Accept": "application/json"}


def test_every_secret_shape_moves_to_0600_files_and_the_gateway_still_gets_the_original(env: Env) -> None:
    import sys

    from mcpctl.resources import secrets
    from mcpctl.resources.kinds import ServerSpec
    from mcpctl.upstream.transport import stdio_params

    env.write("mcp-json", json.dumps({"mcpServers": {
        "db": {"command": sys.executable, "args": STDIO_ARGS, "env": STDIO_ENV},
        "remote": {"type": "http", "url": HTTP_URL, "headers": HTTP_HEADERS},
        "events": {"url": f"https://mcp.example.com/sse?key={SHAPES['sse url key']}"},
    }}))
    r = run("import", "mcp-json")
    assert r.exit_code == 0, r.output
    printed = [r.stdout, *(run("get", "servers", "-o", o).stdout for o in ("yaml", "json")),
               *(run("describe", "server", s).stdout for s in ("db", "remote"))]
    config = "".join(p.read_text() for p in (env.mcpctl_home / "config").rglob("*") if p.is_file())
    for shape, secret in SHAPES.items():
        assert all(secret not in text for text in [config, *printed]), shape
    files = [p for p in (env.mcpctl_home / "state" / "secrets").rglob("*") if p.is_file()]
    assert sorted(p.read_text().strip() for p in files) == sorted(SHAPES.values())     # one file per secret
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    db = Store().get("Server", "db")
    assert db["spec"]["args"][9:12] == ["-p", "8080", "--no-auth"]
    assert {k: db["spec"]["env"][k] for k in NOT_SECRET} == {k: STDIO_ENV[k] for k in NOT_SECRET}
    assert "region=eu" in Store().get("Server", "remote")["spec"]["url"]
    events = ServerSpec.from_resource(Store().get("Server", "events"))    # /sse?key=…: an SSE server
    assert events.transport == "sse" and "not imported:" not in r.stdout
    assert secrets.resolve(events.url or "", where="url") == f"https://mcp.example.com/sse?key={SHAPES['sse url key']}"

    params = stdio_params(ServerSpec.from_resource(db))        # what the gateway starts the server with
    from mcpctl.upstream.transport import LOCATION_ENV  # mcpctl's own dirs pass through too

    assert params.args == STDIO_ARGS
    assert {k: v for k, v in (params.env or {}).items() if k not in LOCATION_ENV} == STDIO_ENV
    remote = ServerSpec.from_resource(Store().get("Server", "remote"))
    assert secrets.resolve(remote.url or "", where="url") == HTTP_URL
    assert secrets.resolve_map(remote.headers, where="headers") == HTTP_HEADERS

    store, moved = store_snapshot(env.mcpctl_home), secret_files(env.mcpctl_home)
    again = run("import", "mcp-json")
    assert again.exit_code == 0 and "server/db unchanged" in again.stdout and "server/remote unchanged" in again.stdout
    assert store_snapshot(env.mcpctl_home) == store and secret_files(env.mcpctl_home) == moved


def test_webhook_urls_in_env_values_move_whatever_their_host(env: Env) -> None:
    """Webhook URLs known by their shape, not only by a known host: Slack's `/services/T…/B…/…` on
    GovSlack or behind a proxy, a `hooks.*` host, Mattermost's `/hooks/<id>` (before: only
    hooks.slack.com and a few others moved; `https://hooks…/services/T0/B0/<secret>` stayed in clear)."""
    import sys

    from mcpctl.resources import secrets
    from mcpctl.resources.kinds import ServerSpec
    from mcpctl.upstream.transport import stdio_params

    hooks = {
        "SLACK_WEBHOOK_URL": "https://hooks.slack-gov.com/services/T0/B0/govSlackSecret",
        "ALERTS_WEBHOOK": "https://hooks.example.com/services/T0/B0/proxiedSlackSecret",
        "NOTIFY_URL": "https://relay.corp.example/services/T0ABC/B0XYZ/relayedSlackSecret",
        "MATTERMOST_HOOK": "https://chat.example.com/hooks/mattermostHookSecret0123",
        "TEAMS_URL": "https://hooks.corp.example/teams/hooksHostSecret",
    }
    plain = {"API_BASE": "https://api.example.com/services/data/v1", "REPO_HOOKS": "https://github.com/o/r/hooks/123"}
    env.write("mcp-json", json.dumps({"mcpServers": {"hooky": {"command": sys.executable, "args": [],
                                                                "env": {**hooks, **plain}}}}))
    r = run("import", "mcp-json")
    assert r.exit_code == 0, r.output
    stored = Store().get("Server", "hooky")
    printed = run("get", "server", "hooky", "-o", "yaml").stdout
    secrets_ = ["govSlackSecret", "proxiedSlackSecret", "relayedSlackSecret", "mattermostHookSecret0123",
                "hooksHostSecret"]
    for secret in secrets_:
        assert secret not in json.dumps(stored) and secret not in printed, secret
    assert {k: stored["spec"]["env"][k] for k in plain} == plain          # no secret there: kept as written
    got = stdio_params(ServerSpec.from_resource(stored)).env or {}
    assert {k: got[k] for k in hooks} == hooks                            # the gateway still gets the originals
    assert secrets.resolve(stored["spec"]["env"]["SLACK_WEBHOOK_URL"], where="t") == hooks["SLACK_WEBHOOK_URL"]
