"""The resource verbs as a user runs them: round trips, apply outcomes, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.errors import EXIT_CONFLICT, EXIT_NOT_FOUND, EXIT_USER

SERVERS = """\
apiVersion: mcpctl/v1
kind: Server
metadata:
  name: memory
  labels: {team: infra}
spec:
  command: npx
  args: ["-y", "@modelcontextprotocol/server-memory"]
  env: {API_KEY: "${env:MEMORY_KEY}"}
---
apiVersion: mcpctl/v1
kind: Server
metadata: {name: remote}
spec:
  transport: http
  url: http://127.0.0.1:9999/mcp
  headers: {Authorization: "Bearer ${file:~/.tokens/remote}"}
  timeouts: {connect: 5, call: 60}
"""

PROJECT = """\
apiVersion: mcpctl/v1
kind: Project
metadata: {name: web}
spec:
  servers: [memory, remote]
  tools:
    disabled: ["memory/delete_*"]
  favouriteIndex:
    enabled: true
    tools: [memory/read_graph]
    maxFavourites: 10
  presentation: favourite-index
"""


def run(runner: CliRunner, *args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input, prog_name="mcpctl")


def store_snapshot(home: Path) -> dict[str, str]:
    root = home / "config" / "resources"
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.yaml"))}


@pytest.fixture
def applied(runner: CliRunner, tmp_path: Path) -> Path:
    f = tmp_path / "all.yaml"
    f.write_text(SERVERS + "---\n" + PROJECT)
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == 0, r.output
    assert r.stdout == "server/memory created\nserver/remote created\nproject/web created\n"
    return f


def test_apply_same_manifest_twice_reports_unchanged(runner, applied):
    r = run(runner, "apply", "-f", str(applied))
    assert r.exit_code == 0
    assert r.stdout == "server/memory unchanged\nserver/remote unchanged\nproject/web unchanged\n"


def test_apply_changed_spec_reports_configured_and_bumps_generation(runner, applied, tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(PROJECT.replace("maxFavourites: 10", "maxFavourites: 12"))
    r = run(runner, "apply", "-f", str(f))
    assert r.stdout == "project/web configured\n"
    got = json.loads(run(runner, "get", "project", "web", "-o", "json").stdout)
    assert got["spec"]["favouriteIndex"]["maxFavourites"] == 12
    assert got["metadata"]["generation"] == 2
    assert got["metadata"]["resourceVersion"] == "2"


@pytest.mark.parametrize("kind", ["server", "servers", "srv", "project", "projects", "proj"])
def test_get_yaml_round_trips_through_apply_for_every_kind(runner, applied, tmp_home, kind):
    before = store_snapshot(tmp_home)
    got = run(runner, "get", kind, "-o", "yaml").stdout
    r = run(runner, "apply", "-f", "-", input=got)
    assert r.exit_code == 0, r.output
    assert r.stdout and all(line.endswith(" unchanged") for line in r.stdout.splitlines())
    assert store_snapshot(tmp_home) == before


def test_get_single_object_yaml_round_trip_prints_unchanged(runner, applied, tmp_home):
    before = store_snapshot(tmp_home)
    got = run(runner, "get", "project", "web", "-o", "yaml").stdout
    assert got.startswith("apiVersion: mcpctl/v1\nkind: Project\nmetadata:\n  name: web\n")
    assert run(runner, "apply", "-f", "-", input=got).stdout == "project/web unchanged\n"
    json_out = run(runner, "get", "project", "web", "-o", "json").stdout
    assert run(runner, "apply", "-f", "-", input=json_out).stdout == "project/web unchanged\n"
    assert store_snapshot(tmp_home) == before


def test_get_yaml_is_byte_stable_across_runs(runner, applied):
    a = run(runner, "get", "servers", "-o", "yaml").stdout
    b = run(runner, "get", "servers", "-o", "yaml").stdout
    assert a == b
    assert a.index("apiVersion") < a.index("kind: List")


def test_get_with_status_still_round_trips(runner, applied, tmp_home):
    from mcpctl.resources.store import Store

    Store().set_status("Server", "memory", {"state": "up", "tools": 9, "protocolVersion": "2025-11-25"})
    got = run(runner, "get", "server", "memory", "-o", "yaml").stdout
    assert "status:\n" in got and "tools: 9" in got
    assert run(runner, "apply", "-f", "-", input=got).stdout == "server/memory unchanged\n"
    table = run(runner, "get", "servers").stdout
    assert "memory" in table and "up" in table and "9" in table


def test_get_never_prints_resolved_secrets(runner, applied, monkeypatch):
    monkeypatch.setenv("MEMORY_KEY", "s3cr3t-value-never-shown")
    for fmt in ("yaml", "json", "wide"):
        assert "s3cr3t" not in run(runner, "get", "servers", "-o", fmt).stdout
    assert "${env:MEMORY_KEY}" in run(runner, "get", "server", "memory", "-o", "yaml").stdout


def test_get_name_output(runner, applied):
    assert run(runner, "get", "srv", "-o", "name").stdout == "server/memory\nserver/remote\n"


def test_dry_run_writes_nothing(runner, tmp_home, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SERVERS)
    r = run(runner, "apply", "-f", str(f), "--dry-run")
    assert r.stdout == "server/memory created (dry run)\nserver/remote created (dry run)\n"
    assert store_snapshot(tmp_home) == {}


def test_apply_directory_and_json(runner, tmp_path):
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "a-servers.yaml").write_text(SERVERS)
    (d / "b-project.json").write_text(json.dumps({"apiVersion": "mcpctl/v1", "kind": "Project",
                                                  "metadata": {"name": "j"}, "spec": {"servers": ["memory"]}}))
    r = run(runner, "apply", "-f", str(d))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["server/memory created", "server/remote created", "project/j created"]


def test_create_then_create_again_is_already_exists_and_force_replaces(runner):
    assert run(runner, "create", "server", "echo", "--", "python", "-m", "x").stdout == "server/echo created\n"
    r = run(runner, "create", "server", "echo", "--", "python", "-m", "y")
    assert r.exit_code == EXIT_CONFLICT
    assert "server/echo already exists" in r.stderr and "--force" in r.stderr
    r = run(runner, "create", "server", "echo", "--force", "--", "python", "-m", "y")
    assert r.exit_code == 0 and r.stdout == "server/echo replaced\n"
    spec = json.loads(run(runner, "get", "server", "echo", "-o", "json").stdout)["spec"]
    assert spec["args"] == ["-m", "y"]


def test_create_http_server_and_project_with_flags(runner):
    r = run(runner, "create", "server", "web", "--url", "http://127.0.0.1:8080/mcp",
            "--header", "Authorization=Bearer ${env:WEB_TOKEN}", "--description", "A web server")
    assert r.exit_code == 0, r.output
    r = run(runner, "create", "project", "p", "--server", "web", "--favourite", "web/search",
            "--max-favourites", "5", "--disable", "web/delete_*", "--presentation", "deferred")
    assert r.exit_code == 0, r.output
    spec = json.loads(run(runner, "get", "project", "p", "-o", "json").stdout)["spec"]
    assert spec["favouriteIndex"] == {"tools": ["web/search"], "maxFavourites": 5}   # --presentation decides
    assert spec["tools"] == {"disabled": ["web/delete_*"]}
    assert spec["presentation"] == "deferred"


def test_literal_token_is_accepted_with_a_warning(runner):
    r = run(runner, "create", "server", "gh", "--env", "GITHUB_TOKEN=ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "--", "npx", "server-github")
    assert r.exit_code == 0
    assert "looks like a literal secret" in r.stderr and "${env:GITHUB_TOKEN}" in r.stderr


def test_delete_refuses_server_in_use_unless_forced(runner, applied):
    r = run(runner, "delete", "server", "memory")
    assert r.exit_code == EXIT_CONFLICT
    assert "used by project(s): web" in r.stderr
    assert run(runner, "get", "server", "memory").exit_code == 0
    r = run(runner, "delete", "project", "web")
    assert r.stdout == "project/web deleted\n"
    assert run(runner, "delete", "server", "memory").stdout == "server/memory deleted\n"


def test_delete_from_file_removes_projects_before_servers(runner, applied):
    r = run(runner, "delete", "-f", str(applied))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "project/web deleted"
    assert run(runner, "get", "servers", "-o", "name").stdout == ""


def test_diff_exit_codes(runner, applied, tmp_path):
    assert run(runner, "diff", "-f", str(applied)).exit_code == 0
    f = tmp_path / "p.yaml"
    f.write_text(PROJECT.replace("presentation: favourite-index", "presentation: deferred"))
    r = run(runner, "diff", "-f", str(f))
    assert r.exit_code == 1
    assert "-  presentation: favourite-index" in r.stdout and "+  presentation: deferred" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [")
    assert run(runner, "diff", "-f", str(bad)).exit_code >= 2


def test_describe_project_and_server(runner, applied):
    r = run(runner, "describe", "project", "web")
    assert r.exit_code == 0
    assert "★ memory/read_graph" in r.stdout and "favourite-index" in r.stdout
    r = run(runner, "describe", "srv", "remote")
    assert "http://127.0.0.1:9999/mcp" in r.stdout and "Used by:" in r.stdout and "web" in r.stdout


def test_edit_applies_the_saved_file(runner, applied, tmp_path, monkeypatch):
    script = tmp_path / "ed.py"
    script.write_text("import sys,pathlib\np=pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('presentation: favourite-index','presentation: deferred'))\n")
    import sys

    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    r = run(runner, "edit", "project", "web")
    assert r.exit_code == 0, r.output
    assert r.stdout == "project/web edited\n"
    assert json.loads(run(runner, "get", "project", "web", "-o", "json").stdout)["spec"]["presentation"] == "deferred"


def test_mcpctl_home_isolates_everything(runner, applied, tmp_home, tmp_path, monkeypatch):
    assert (tmp_home / "config" / "resources" / "servers" / "memory.yaml").exists()
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "other"))
    assert run(runner, "get", "servers", "-o", "name").stdout == ""


# -- bad input: one clear message, documented exit code, store unchanged ---------------------------

BAD_FILES = {
    "malformed": ("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: x\nspec: {}\n", "invalid YAML", "line"),
    "tabs": ("apiVersion: mcpctl/v1\nkind: Server\nmetadata:\n\tname: x\n", "invalid YAML", "tab characters"),
    "missing-kind": ("apiVersion: mcpctl/v1\nmetadata: {name: x}\nspec: {command: a}\n", "missing 'kind'", "kind: one of Server, Project"),
    "unknown-kind": ("apiVersion: mcpctl/v1\nkind: Servr\nmetadata: {name: x}\n", "unknown kind 'Servr'", "did you mean: Server?"),
    "bad-api": ("apiVersion: v1\nkind: Server\nmetadata: {name: x}\n", "unknown apiVersion 'v1'", "mcpctl/v1"),
    "typo-field": (PROJECT.replace("favouriteIndex", "favoriteIndex"), "unknown field 'spec.favoriteIndex'", "did you mean: favouriteIndex?"),
    "bad-bool": (PROJECT.replace("enabled: true", "enabled: yes"), "must be a boolean", "true or false"),
    "no-command": ("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: x}\nspec: {args: [a]}\n", "has no spec.command", "spec.command"),
    "bad-name": ("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: My Server}\nspec: {command: a}\n", "not a valid name", None),
    "bad-favourite": (PROJECT.replace("[memory/read_graph]", "[read_graph]"), "not a tool id", None),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_manifest_is_one_clear_error_and_changes_nothing(runner, applied, tmp_home, tmp_path, case):
    text, message, hint = BAD_FILES[case]
    before = store_snapshot(tmp_home)
    f = tmp_path / f"{case}.yaml"
    # a good document first: all-or-nothing means it must not be written either
    f.write_text("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: newcomer}\nspec: {command: a}\n---\n" + text)
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == EXIT_USER, r.output
    assert r.stdout == ""
    assert str(f) in r.stderr and message in r.stderr
    if case not in ("malformed", "tabs"):
        assert "document 2" in r.stderr
    if hint:
        assert hint in r.stderr
    assert store_snapshot(tmp_home) == before


def test_error_points_at_the_line_of_the_field(runner, tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(PROJECT.replace("maxFavourites: 10", "maxFavourites: -1"))
    r = run(runner, "apply", "-f", str(f), "--allow-missing")
    assert r.exit_code == EXIT_USER
    assert f"{f}, document 1, line 11: spec.favouriteIndex.maxFavourites: must be between 1 and 200, got -1" in r.stderr


def test_project_naming_unregistered_server_fails_unless_allow_missing(runner, tmp_home, tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(PROJECT)
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == EXIT_USER
    assert "names server 'memory', which is not registered" in r.stderr and "--allow-missing" in r.stderr
    assert store_snapshot(tmp_home) == {}
    r = run(runner, "apply", "-f", str(f), "--allow-missing")
    assert r.exit_code == 0 and r.stdout == "project/web created\n"
    assert "not registered" in r.stderr


def test_duplicate_documents_are_rejected(runner, tmp_path, tmp_home):
    f = tmp_path / "dup.yaml"
    f.write_text(SERVERS + "---\n" + SERVERS.split("---\n")[0])
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == EXIT_USER and "declared twice" in r.stderr
    assert store_snapshot(tmp_home) == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create", "project", "p", "--max-favourites", "-1"], "--max-favourites: must be between 1 and 200, got -1"),
        (["create", "project", "p", "--favourite", "read_graph"], "'read_graph' is not a tool id: write it as server/tool"),
        (["create", "server", "my server", "--", "npx", "x"], "'my server' is not a valid name"),
        (["create", "server", "x"], "needs a command or a URL"),
        (["create", "server", "x", "--url", "ftp://h"], "is not an http:// or https:// URL"),
        (["create", "server", "x", "--env", "NOVALUE", "--", "a"], "--env 'NOVALUE': expected KEY=VALUE"),
        (["create", "project", "p", "--presentation", "flatt"], "'flatt' is not one of"),
    ],
)
def test_bad_create_flags_name_the_flag(runner, tmp_home, args, message):
    r = run(runner, *args)
    # a value outside a flag's fixed choices is a usage error (2), like a bad -o
    assert r.exit_code == (2 if "--presentation" in args else EXIT_USER), r.output
    assert message in r.stderr
    assert store_snapshot(tmp_home) == {}


def test_empty_stdin_is_a_clear_error(runner, tmp_home):
    r = run(runner, "apply", "-f", "-", input="")
    assert r.exit_code == EXIT_USER
    assert "no input on stdin" in r.stderr


def test_directory_skips_files_that_are_not_manifests_and_says_so(runner, tmp_path, tmp_home):
    d = tmp_path / "m"
    d.mkdir()
    (d / "s.yaml").write_text(SERVERS)
    (d / "README.md").write_text("# servers\n")
    (d / "notes.txt").write_text("hello")
    r = run(runner, "apply", "-f", str(d))
    assert r.exit_code == 0, r.output
    assert r.stdout == "server/memory created\nserver/remote created\n"
    assert "skipped 2 files that are not .yaml, .yml or .json" in r.stderr
    assert "README.md" in r.stderr and "notes.txt" in r.stderr
    # a malformed manifest among them is still refused, and nothing is written
    (d / "p.yaml").write_text(PROJECT.replace("servers: [memory, remote]", "servers: [memory, remote"))
    before = store_snapshot(tmp_home)
    r = run(runner, "diff", "-f", str(d))
    assert r.exit_code == 2 and "p.yaml" in r.stderr and "invalid YAML" in r.stderr
    r = run(runner, "apply", "-f", str(d))
    assert r.exit_code == EXIT_USER and "p.yaml" in r.stderr and "invalid YAML" in r.stderr
    assert store_snapshot(tmp_home) == before
    # a directory of nothing but non-manifests is still an error
    (e := tmp_path / "docs").mkdir()
    (e / "README.md").write_text("x")
    r = run(runner, "apply", "-f", str(e))
    assert r.exit_code == EXIT_USER and "no .yaml, .yml or .json files" in r.stderr


def _names_project(style: str, max_length: int) -> str:
    return (f"apiVersion: mcpctl/v1\nkind: Project\nmetadata: {{name: n}}\nspec:\n"
            f"  names: {{style: {style}, maxLength: {max_length}}}\n")


def test_portable_names_max_length_is_capped_by_claudes_budget(runner, tmp_path, tmp_home):
    f = tmp_path / "p.yaml"
    f.write_text(_names_project("portable", 52))
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == EXIT_USER, r.output
    assert f"{f}, document 1, line 5: spec.names.maxLength: 52 is too long for portable names" in r.stderr
    assert "mcp__mcpctl__" in r.stderr and "64" in r.stderr and "51" in r.stderr
    assert store_snapshot(tmp_home) == {}
    r = run(runner, "create", "project", "q", "--max-name-length", "100")
    assert r.exit_code == EXIT_USER and "--max-name-length: 100 is too long" in r.stderr
    f.write_text(_names_project("portable", 51))
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == 0 and r.stderr == "", r.output
    f.write_text(_names_project("bare", 52))      # bare names are client-safe names too
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == EXIT_USER and "52 is too long for bare names" in r.stderr, r.output


def test_spec_names_may_be_longer_but_warn_about_client_limits(runner, tmp_path, tmp_home):
    f = tmp_path / "p.yaml"
    f.write_text(_names_project("spec", 128))
    r = run(runner, "apply", "-f", str(f))
    assert r.exit_code == 0, r.output
    assert "spec.names.maxLength" in r.stderr and "Claude" in r.stderr and "Codex" in r.stderr
    f.write_text(_names_project("spec", 129))
    assert run(runner, "apply", "-f", str(f)).exit_code == EXIT_USER


def test_missing_file_and_unknown_kind_on_the_command_line(runner, tmp_path):
    r = run(runner, "apply", "-f", str(tmp_path / "nope.yaml"))
    assert r.exit_code == EXIT_USER and "no such file or directory" in r.stderr
    r = run(runner, "get", "serverz")
    assert r.exit_code == EXIT_USER and "unknown resource kind 'serverz'" in r.stderr and "servers" in r.stderr


def test_get_missing_name_suggests_close_names(runner, applied):
    r = run(runner, "get", "server", "memroy")
    assert r.exit_code == EXIT_NOT_FOUND
    assert "server 'memroy' not found" in r.stderr and "did you mean: memory?" in r.stderr
    r = run(runner, "get", "server", "zzz")
    assert "mcpctl get servers" in r.stderr


def test_bad_output_format_is_a_usage_error(runner, applied):
    r = run(runner, "get", "servers", "-o", "xml")
    assert r.exit_code == 2 and "xml" in r.output
