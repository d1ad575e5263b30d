"""`mcpctl tools list|enable|disable` and `mcpctl serve --help` (no `mcp` import at CLI load)."""

from __future__ import annotations

import json
import subprocess
import sys

from gwkit import Kit
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app


def _cache(kit: Kit) -> None:
    kit.server("alpha")
    kit.server("beta")
    kit.project("p", ["alpha", "beta"], tools={"disabled": ["alpha/delete_*"]})
    FilesCache().write_server_tools("alpha", [
        {"name": "echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "delete_all", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
        {"name": "odd.name/x", "inputSchema": {"type": "object"}},
    ])
    FilesCache().write_server_tools("beta", [{"name": "echo", "inputSchema": {"type": "object"}}])


def test_tools_list_from_cache(kit: Kit, runner: CliRunner) -> None:
    _cache(kit)
    r = runner.invoke(app, ["tools", "list", "--project", "p", "-o", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(x["canonicalId"], x["presentedName"], x["state"]) for x in rows] == [
        ("alpha/echo", "alpha__echo", "enabled"),
        ("alpha/delete_all", "alpha__delete_all", "disabled"),
        ("alpha/odd.name/x", rows[2]["presentedName"], "enabled"),
        ("beta/echo", "beta__echo", "enabled"),
    ]
    assert rows[0]["readOnly"] is True and rows[1]["destructive"] is True
    assert set(rows[0]) == {"server", "canonicalId", "presentedName", "state", "listed", "favouriteName", "pinned",
                            "readOnly", "destructive", "effect", "description", "flags",
                            "overridden"}
    assert rows[0]["effect"]["class"] == "reads" and rows[0]["effect"]["source"] == "annotations"
    assert rows[1]["effect"]["class"] == "deletes"
    r = runner.invoke(app, ["tools", "list", "--project", "p"])
    assert r.exit_code == 0 and "alpha__delete_all" in r.stdout and "disabled" in r.stdout
    r = runner.invoke(app, ["tools", "list", "--project", "p", "-o", "name"])
    assert r.stdout.splitlines() == ["alpha/echo", "alpha/delete_all", "alpha/odd.name/x", "beta/echo"]
    r = runner.invoke(app, ["tools", "list", "--project", "nope"])
    assert r.exit_code == 3


def test_tools_enable_disable_edit_the_project(kit: Kit, runner: CliRunner) -> None:
    _cache(kit)
    before = kit.store.get("Project", "p")["metadata"]
    r = runner.invoke(app, ["tools", "enable", "--project", "p", "alpha/delete_all"])
    assert r.exit_code == 0, r.output
    res = kit.store.get("Project", "p")
    assert res["spec"]["tools"] == {"disabled": ["alpha/delete_*"], "enabled": ["alpha/delete_all"]}
    assert int(res["metadata"]["resourceVersion"]) == int(before.get("resourceVersion") or 0) + 1
    assert res["metadata"]["generation"] == int(before.get("generation") or 0) + 1
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "alpha/delete_all", "beta/*"])
    assert r.exit_code == 0
    assert kit.store.get("Project", "p")["spec"]["tools"] == {"disabled": ["alpha/delete_*", "beta/*"]}
    r = runner.invoke(app, ["tools", "enable", "--project", "p", "alpha/delete_*"])
    assert kit.store.get("Project", "p")["spec"].get("tools") == {"disabled": ["beta/*"]}
    version = kit.store.get("Project", "p")["metadata"]["resourceVersion"]
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "beta/*"])
    assert "unchanged" in r.stdout
    assert kit.store.get("Project", "p")["metadata"]["resourceVersion"] == version
    rows = json.loads(runner.invoke(app, ["tools", "list", "--project", "p", "-o", "json"]).stdout)
    assert {x["canonicalId"]: x["state"] for x in rows}["beta/echo"] == "disabled"


def test_tools_disable_rejects_a_bad_id_and_changes_nothing(kit: Kit, runner: CliRunner) -> None:
    _cache(kit)
    before = kit.store.get("Project", "p")
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "beta/echo", "echo"])
    assert r.exit_code == 1
    assert "'echo' is not a tool id: write it as server/tool" in r.stderr
    assert kit.store.get("Project", "p") == before
    live = runner.invoke(app, ["get", "project", "p", "-o", "yaml"]).stdout
    assert runner.invoke(app, ["apply", "-f", "-"], input=live).stdout == "project/p unchanged\n"


def test_tools_list_refresh_connects(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.server("ghost", command="definitely-not-a-command-mcpctl")
    kit.project("p", ["alpha", "ghost"])
    r = runner.invoke(app, ["tools", "list", "--project", "p", "--refresh", "-o", "json"])
    assert r.exit_code == 5, r.output           # a server failed: the listing says so, and so does the exit
    ids = [x["canonicalId"] for x in json.loads(r.stdout)]
    assert "alpha/echo" in ids and "alpha/crash" in ids
    assert "ghost" in r.stderr and "command not found" in r.stderr
    assert r.stderr.count("command not found") == 1       # each failure reported once
    assert FilesCache().read_server_tools("alpha") is not None
    # the observed status is recorded, as `get servers` shows it
    assert kit.store.status("Server", "alpha")["state"] == "up"
    assert kit.store.status("Server", "ghost")["state"] == "down"
    assert kit.leftovers() == []


def test_tools_list_lists_a_never_listed_project_by_itself(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    r = runner.invoke(app, ["tools", "list", "--project", "p", "-o", "name"])
    assert r.exit_code == 0, r.output
    assert "alpha/echo" in r.stdout.split()
    r = runner.invoke(app, ["tools", "search", "--project", "p", "echo text", "-o", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["tools"][0]["id"] == "alpha/echo"
    assert kit.leftovers() == []


def test_cli_does_not_import_mcp() -> None:
    code = ("import sys; from mcpctl.cli import app; "
            "assert 'mcp' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mcp'))")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_create_server_checks_what_it_can_and_lists_the_server(kit: Kit, runner: CliRunner) -> None:
    import sys as _sys

    from gwkit import FAULT_SERVER

    env = {"MCPCTL_TEST_MARK": kit.mark}
    r = runner.invoke(app, ["create", "server", "ok", "--env", f"MCPCTL_TEST_MARK={kit.mark}", "--",
                            _sys.executable, str(FAULT_SERVER), "--name", "ok"], env=env)
    assert r.exit_code == 0 and r.stdout == "server/ok created\n", r.output
    assert "listed: 14 tools" in r.stderr
    assert kit.store.status("Server", "ok")["state"] == "up"
    r = runner.invoke(app, ["create", "server", "gone", "--", "definitely-not-a-command-mcpctl"])
    assert r.exit_code == 0 and r.stdout == "server/gone created\n"
    assert r.stderr.count("not on PATH") == 1                     # said once, not re-said by a listing
    r = runner.invoke(app, ["create", "server", "abs", "--no-check", "--", "/nonexistent/bin/thing"])
    assert r.exit_code == 0 and "the command '/nonexistent/bin/thing' does not exist" in r.stderr, r.output
    assert "PATH" not in r.stderr
    r = runner.invoke(app, ["create", "server", "rel", "--strict", "--", "./bin/server"])
    assert r.exit_code == 1 and "relative path" in r.stderr and r.stdout == ""
    r = runner.invoke(app, ["create", "server", "sec", "--strict", "-e", "K=${env:MCPCTL_NOT_SET_X}", "--", "true"])
    assert r.exit_code == 1 and "${env:MCPCTL_NOT_SET_X} is not set" in r.stderr
    assert kit.store.find("Server", "rel") is None and kit.store.find("Server", "sec") is None
    r = runner.invoke(app, ["create", "server", "quiet", "--no-check", "--", "true"])
    assert r.exit_code == 0 and "listed" not in r.stderr
    assert kit.leftovers() == []


def test_a_forced_server_delete_leaves_the_store_round_trippable_and_the_catalogue_current(
        kit: Kit, runner: CliRunner) -> None:
    _cache(kit)
    r = runner.invoke(app, ["delete", "server", "beta", "--force"])
    assert r.exit_code == 0 and "still name server 'beta'" in r.stderr, r.output
    assert FilesCache().read_server_tools("beta") is None
    live = runner.invoke(app, ["get", "project", "p", "-o", "yaml"]).stdout
    r = runner.invoke(app, ["apply", "-f", "-"], input=live)
    assert r.exit_code == 0 and r.stdout == "project/p unchanged\n", r.output
    assert "not registered" in r.stderr
    # a new reference to a missing server is still refused
    r = runner.invoke(app, ["apply", "-f", "-"], input=live.replace("- beta", "- gamma"))
    assert r.exit_code == 1 and "gamma" in r.stderr
    r = runner.invoke(app, ["tools", "list", "--project", "p", "-o", "name"])
    assert "beta/echo" not in r.stdout.split() and "alpha/echo" in r.stdout.split()
    assert r.exit_code == 5 and "server 'beta' cannot be listed" in r.stderr


def test_a_glob_or_id_that_matches_nothing_is_refused_unless_forced(kit: Kit, runner: CliRunner) -> None:
    """`tools disable 'alpah/*'` used to warn and store the glob anyway (issue 17): refused, store
    unchanged, with what was meant; --force stores it; removing such an entry always works."""
    _cache(kit)
    before = kit.store.get("Project", "p")
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "alpah/*"])
    assert r.exit_code == 1 and "'alpah/*': no server 'alpah' in project 'p' (its servers: alpha, beta)" in r.stderr, r.output
    assert "did you mean: alpha?" in r.stderr and "--force" in r.stderr
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "alpha/delete_al"])
    assert r.exit_code == 1 and "did you mean: alpha/delete_all?" in r.stderr, r.output
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "alpha/nothing_*"])
    assert r.exit_code == 1 and "'alpha/nothing_*' matches no tool of server 'alpha'" in r.stderr, r.output
    assert kit.store.get("Project", "p") == before
    r = runner.invoke(app, ["tools", "disable", "--project", "p", "--force", "alpha/nothing_*"])
    assert r.exit_code == 0 and "warning" in r.stderr and "project/p configured" in r.stdout, r.output
    r = runner.invoke(app, ["tools", "enable", "--project", "p", "alpha/nothing_*"])   # an exact entry: removed
    assert r.exit_code == 0 and "project/p configured" in r.stdout, r.output
    assert kit.store.get("Project", "p")["spec"]["tools"] == before["spec"]["tools"]


def test_create_project_warns_of_a_misspelt_favourite_and_strict_refuses_it(kit: Kit, runner: CliRunner) -> None:
    """`create project --favourite alpha/delete_al` was accepted silently while `favourites add`
    warned (issue 17): both say what was meant; `--strict` stores nothing."""
    _cache(kit)
    r = runner.invoke(app, ["create", "project", "q", "--server", "alpha", "--favourite", "alpha/delete_al",
                            "--strict"])
    assert r.exit_code == 1 and "--favourite 'alpha/delete_al' is not a tool of server 'alpha'" in r.stderr, r.output
    assert "did you mean: alpha/delete_all?" in r.stderr and kit.store.find("Project", "q") is None
    r = runner.invoke(app, ["create", "project", "q", "--server", "alpha", "--server", "ghost", "--allow-missing",
                            "--favourite", "alpha/delete_al", "--favourite", "ghost/x", "--disable", "alpah/*"])
    assert r.exit_code == 0 and r.stdout == "project/q created\n", r.output
    assert "did you mean: alpha/delete_all?" in r.stderr
    assert "'ghost/x': server 'ghost' has not been listed yet" in r.stderr          # unchecked, not refused
    assert "--disable 'alpah/*': no server 'alpah' in project 'q'" in r.stderr
    r = runner.invoke(app, ["favourites", "add", "--project", "q", "alpha/ech"])
    assert r.exit_code == 0 and "did you mean: alpha/echo?" in r.stderr, r.output


def test_long_commands_say_on_a_terminal_what_they_are_doing(kit: Kit) -> None:
    """`surface` and `tools list` on a large catalogue take a while: on a terminal, a transient
    status line on stderr says what they are doing (issue 17); stdout keeps only the data."""
    import os
    import pty
    import subprocess

    from gwkit import MCPCTL

    _cache(kit)
    for argv, stages in ((["surface", "-p", "p", "-o", "json"],
                          ["reading project p's catalogue", "pricing 4 tools in 3 presentations",
                           "comparing 3 descriptions for near-duplicates"]),
                         (["tools", "list", "-p", "p", "-o", "json"], ["reading project p's catalogue"])):
        primary, secondary = pty.openpty()
        try:
            done = subprocess.run([MCPCTL, *argv], stdout=subprocess.PIPE, stderr=secondary, stdin=subprocess.DEVNULL,
                                  env={**os.environ, "MCPCTL_HOME": str(kit.home), "TERM": "xterm"}, timeout=60 * SLACK)
            os.close(secondary)
            screen = b""
            while True:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:                 # EIO: the other end is closed and drained
                    break
                if not chunk:
                    break
                screen += chunk
        finally:
            os.close(primary)
        assert done.returncode == 0, screen
        assert json.loads(done.stdout)                                   # the data, untouched
        text = screen.decode("utf-8", "replace")
        for stage in stages:
            assert stage in text, (stage, text)
