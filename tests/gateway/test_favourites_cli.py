"""`mcpctl favourites list|add|remove|suggest` and `create project` flags, on a real gateway's log.

`suggest` is tested on an invocation log written by the gateway while the SDK client calls
through it under several presented forms of one tool, not on rows inserted by hand: the gateway
in-process (`inproc`, with `mcpctl serve`'s recorder), and in one burst the real `mcpctl serve`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from gwkit import MCPCTL, Kit, wait_tools
from inproc import Harness
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.resources.validate import canonical_spec

pytestmark = pytest.mark.anyio


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, list(args), prog_name="mcpctl")


def _rows(project: str, at_least: int) -> list[Any]:
    """The log rows of `project`, once the gateway's background writer has written them all."""
    from mcpctl.audit.log import InvocationLog

    deadline = time.monotonic() + 15 * SLACK
    while True:
        with InvocationLog() as log:
            rows = log.query(project=project)
        if len(rows) >= at_least or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


async def _calls(gw: Harness | Kit, project: str, calls: list[tuple[str, dict[str, Any]]],
                 mode: str = "legacy") -> None:
    """Make these calls through the gateway: in-process (`gw`), or `mcpctl serve` (a `Kit`)."""
    client = gw.client(project, mode, log=True) if isinstance(gw, Harness) else gw.client(project, mode=mode)
    async with client as c:
        await wait_tools(c, {"favourite__echo"})
        for name, args in calls:
            await c.session.call_tool(name, args)


async def test_suggest_counts_every_presented_form_once_and_its_line_changes_only_favourites(
        kit: Kit, gw: Harness, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit.server("alpha")
    kit.server("beta")
    kit.project("p", ["alpha", "beta"], favouriteIndex={"enabled": True, "tools": ["alpha/echo", "alpha/add"]},
                tools={"disabled": ["alpha/delete_*"]}, search={"topK": 3, "recordQueries": True},
                description="favourites test")
    echo = {"text": "x"}
    # an older burst, outside the window measured below
    await _calls(gw, "p", [("all__beta__echo", echo)] * 5)
    old_rows = _rows("p", 5)
    assert len(old_rows) == 5
    t_mid = time.time()
    assert all(r.ts < t_mid for r in old_rows)
    # in the window: alpha/echo under four forms in two sessions (two eras), a tool that mostly fails,
    # a disabled tool, and beta/add
    await _calls(gw, "p", [("favourite__echo", echo), ("all__alpha__echo", echo), ("alpha/echo", echo),
                            ("alpha__echo", echo), ("all__alpha__fail", {}), ("all__alpha__fail", {}),
                            ("all__alpha__delete_all", {}), ("all__beta__add", {"a": 1, "b": 2})])
    await _calls(kit, "p", [("favourite/echo", echo), ("all__alpha__fail", {})], mode="auto")   # mcpctl serve
    rows = _rows("p", 15)
    assert len(rows) == 15 and all(r.ts > t_mid for r in rows[5:])
    assert {r.presented_name for r in rows if r.canonical_id == "alpha/echo"} == {
        "favourite__echo", "all__alpha__echo", "alpha/echo", "alpha__echo", "favourite/echo"}

    window = 1.0
    monkeypatch.setattr("mcpctl.cli.favourites._now", lambda: t_mid + window * 86400.0)
    r = run(runner, "favourites", "suggest", "-p", "p", "--window", str(window), "-o", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    tools = {t["id"]: t for t in report["tools"]}
    assert "beta/echo" not in tools                        # before the window
    assert tools["alpha/echo"]["calls"] == 5 and tools["alpha/echo"]["sessions"] == 2
    assert tools["alpha/echo"]["pinned"] is True and tools["alpha/echo"]["suggested"] is True
    assert tools["alpha/fail"]["calls"] == 3 and tools["alpha/fail"]["flag"].startswith("mostly fails")
    assert tools["alpha/delete_all"]["flag"] == "disabled in the project"
    # the floor (3 calls in 2 sessions by default): beta/add, called once, is not worth its definition
    assert report["suggested"] == ["alpha/echo"]
    assert tools["beta/add"]["belowFloor"] == ("below the floor: 1 call(s) in 1 session(s) "
                                               "(--min-calls 3, --min-sessions 2)")
    assert report["pinnedUnused"] == ["alpha/add"]
    assert report["calls"] == 10 and report["sessions"] == 2

    table = run(runner, "favourites", "suggest", "-p", "p", "--window", str(window), "--min-calls", "1",
                "--min-sessions", "1")
    assert table.exit_code == 0, table.output
    star_line = next(line for line in table.stdout.splitlines() if "alpha/echo" in line)
    assert "★" in star_line and "beta/add" in table.stdout
    line = table.stdout.strip().splitlines()[-1]
    assert line == "mcpctl favourites set --project p alpha/echo beta/add"

    # run the printed line for real: only favouriteIndex changes
    env = {**os.environ, "MCPCTL_HOME": str(kit.home)}
    before = tmp_path / "before.yaml"
    before.write_text(subprocess.run([MCPCTL, "get", "project", "p", "-o", "yaml"], env=env, check=True,
                                     capture_output=True, text=True).stdout)
    argv = shlex.split(line)
    done = subprocess.run([MCPCTL, *argv[1:]], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "project/p configured\n", done.stderr
    diff = subprocess.run([MCPCTL, "diff", "-f", str(before)], env=env, capture_output=True, text=True)
    assert diff.returncode == 1
    changed = [ln for ln in diff.stdout.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert sorted(changed) == sorted(["-    - beta/add", "+    - alpha/add"]), diff.stdout   # live vs before

    # an empty window says so and suggests nothing
    monkeypatch.setattr("mcpctl.cli.favourites._now", lambda: t_mid + 10 * 86400.0)
    r = run(runner, "favourites", "suggest", "-p", "p", "--window", "1")
    assert r.exit_code == 0 and r.stdout == ""
    assert "Nothing to suggest" in r.stderr and "15 older call(s)" in r.stderr


async def test_suggest_apply_shows_the_diff_and_writes_it(kit: Kit, gw: Harness, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.project("q", ["alpha"], favouriteIndex={"enabled": True, "tools": ["alpha/echo"]})
    r = run(runner, "favourites", "suggest", "-p", "q")
    assert r.exit_code == 0 and "the invocation log has no calls for project 'q' yet" in r.stderr
    await _calls(gw, "q", [("all__alpha__add", {"a": 1, "b": 2})] * 2 + [("favourite__echo", {"text": "y"})])
    _rows("q", 3)
    r = run(runner, "favourites", "suggest", "-p", "q", "--top", "1", "--apply")
    assert r.exit_code == 0 and "No tool qualifies" in r.stderr, r.output       # 2 calls in 1 session
    assert kit.store.get("Project", "q")["spec"]["favouriteIndex"]["tools"] == ["alpha/echo"]
    r = run(runner, "favourites", "suggest", "-p", "q", "--top", "1", "--apply", "--min-calls", "2",
            "--min-sessions", "1")
    assert r.exit_code == 0, r.output
    assert "-    - alpha/echo" in r.stderr and "+    - alpha/add" in r.stderr
    # the list's size before and after, against flat; one favourite on a 14-tool server (and 2 built-ins) costs more
    assert "favourite-index list: 17 tools ≈" in r.stderr and "(flat: 16 tools ≈" in r.stderr, r.stderr
    assert "the favourites now cost more than they save" in r.stderr
    assert r.stdout.strip().endswith("project/q configured")
    spec = kit.store.get("Project", "q")["spec"]
    assert spec["favouriteIndex"]["tools"] == ["alpha/add"]


async def test_the_suggested_line_run_by_a_shell_keeps_profiles_and_does_what_apply_does(
        kit: Kit, gw: Harness, runner: CliRunner) -> None:
    kit.server("alpha", "--extra-tool", "get pods")         # an upstream tool name with a space
    spec: dict[str, Any] = {
        "favouriteIndex": {"enabled": True, "tools": ["alpha/echo"], "maxFavourites": 4},
        "profiles": {"read-only": {"readOnly": True, "deny": ["alpha/get pods"]},
                     "ops": {"description": "on call", "allow": ["alpha/get pods", "alpha/add"]}},
        "tools": {"disabled": ["alpha/delete_*"]}, "gate": {"instructions": "Say hi."},
        "names": {"style": "portable", "maxLength": 40}, "search": {"ranker": "bm25", "topK": 3},
        "description": "keeps its profiles"}
    kit.project("p", ["alpha"], **spec)
    original = canonical_spec("Project", kit.store.get("Project", "p")["spec"])
    await _calls(gw, "p", [("alpha/get pods", {})] * 3 + [("all__alpha__add", {"a": 1, "b": 2})] * 2)
    _rows("p", 5)

    table = run(runner, "favourites", "suggest", "-p", "p", "--min-sessions", "1", "--min-calls", "2")
    assert table.exit_code == 0, table.output
    line = table.stdout.strip().splitlines()[-1]
    assert line == "mcpctl favourites set --project p 'alpha/get pods' alpha/add"
    shell_env = {**os.environ, "MCPCTL_HOME": str(kit.home), "PATH": f"{Path(MCPCTL).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", line], env=shell_env, capture_output=True, text=True, timeout=60 * SLACK)
    assert done.returncode == 0 and done.stdout == "project/p configured\n", done.stderr
    by_line = canonical_spec("Project", kit.store.get("Project", "p")["spec"])
    assert by_line["favouriteIndex"] == {"enabled": True, "tools": ["alpha/get pods", "alpha/add"], "maxFavourites": 4}
    assert {k: v for k, v in by_line.items() if k != "favouriteIndex"} == \
        {k: v for k, v in original.items() if k != "favouriteIndex"}

    kit.project("p", ["alpha"], **spec)                      # back to the start, then --apply
    assert canonical_spec("Project", kit.store.get("Project", "p")["spec"]) == original
    r = run(runner, "favourites", "suggest", "-p", "p", "--apply", "--min-sessions", "1", "--min-calls", "2")
    assert r.exit_code == 0 and r.stdout.endswith("project/p configured\n"), r.output
    assert canonical_spec("Project", kit.store.get("Project", "p")["spec"]) == by_line


def test_favourites_add_remove_list(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.server("beta")
    kit.project("p", ["alpha", "beta"], tools={"disabled": ["alpha/delete_*"]})
    FilesCache().write_server_tools("alpha", [{"name": n, "inputSchema": {"type": "object"}, "description": f"{n} it"}
                                       for n in ("echo", "add", "delete_all")])
    FilesCache().write_server_tools("beta", [{"name": "echo", "inputSchema": {"type": "object"}}])

    r = run(runner, "favourites", "add", "-p", "p", "alpha/echo", "beta/echo", "alpha/delete_all", "alpha/nope")
    assert r.exit_code == 0, r.output
    assert r.stdout == "project/p configured\n"
    assert "favourite index turned on" in r.stderr and "'alpha/nope' is not a tool of server 'alpha' as last listed" in r.stderr
    spec = kit.store.get("Project", "p")["spec"]
    assert spec["favouriteIndex"] == {"enabled": True, "tools": ["alpha/echo", "beta/echo", "alpha/delete_all",
                                                                 "alpha/nope"], "maxFavourites": 15}
    assert run(runner, "favourites", "add", "-p", "p", "alpha/echo").stdout == "project/p unchanged\n"

    r = run(runner, "favourites", "list", "-p", "p", "-o", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["presentation"] == "favourite-index"
    favs = {f["id"]: f for f in report["favourites"]}
    # same tool name on two servers: both listed, names qualified by server
    assert (favs["alpha/echo"]["name"], favs["beta/echo"]["name"]) == ("favourite__alpha__echo", "favourite__beta__echo")
    assert favs["alpha/echo"]["state"] == "listed"
    assert favs["alpha/delete_all"]["state"] == "not listed" and "tools.disabled" in favs["alpha/delete_all"]["reason"]
    assert favs["alpha/nope"]["state"] == "not listed" and favs["alpha/nope"]["name"] is None
    assert report["all"] == {"count": 3, "pattern": "all__<server>__<tool>", "listed": True}
    assert "PREFER favourite__<tool> when one fits; use all__<server>__<tool> only if nothing in favourites fits" \
        in report["instructions"]
    table = run(runner, "favourites", "list", "-p", "p")
    assert table.exit_code == 0 and "favourite__alpha__echo" in table.stdout and "★" in table.stdout

    # bad input changes nothing
    before = kit.store.get("Project", "p")
    for bad in (["alpha/*"], ["nope"], ["-p", "missing", "alpha/echo"]):
        args = ["favourites", "add", *(bad if bad[0] == "-p" else ["-p", "p", *bad])]
        r = run(runner, *args)
        assert r.exit_code in (1, 3), r.output
    r = run(runner, "favourites", "add", "-p", "p", "alpha/add", "--max-favourites", "4")
    assert r.exit_code == 1 and "maxFavourites" in r.stderr and "5" in r.stderr, r.stderr
    assert kit.store.get("Project", "p") == before

    r = run(runner, "favourites", "remove", "-p", "p", "alpha/nope", "alpha/delete_all", "gamma/x")
    assert r.exit_code == 0 and "'gamma/x' is not pinned" in r.stderr
    assert kit.store.get("Project", "p")["spec"]["favouriteIndex"]["tools"] == ["alpha/echo", "beta/echo"]


CASES: list[dict[str, Any]] = [
    {"servers": ["alpha"]},
    {"servers": ["alpha", "beta"], "tools": {"disabled": ["alpha/*"], "enabled": ["alpha/echo"]},
     "favouriteIndex": {"enabled": True, "tools": ["alpha/echo"], "maxFavourites": 3}, "presentation": "deferred",
     "gate": {"enabled": True, "instructions": "Say 'hi' first; then work."}, "names": {"style": "spec", "maxLength": 64},
     "search": {"ranker": "hybrid", "topK": 7, "recordQueries": True}, "description": "all of it"},
    {"servers": ["beta"], "favouriteIndex": {"enabled": False, "tools": ["beta/echo"]}, "search": {"enabled": False}},
    {"servers": ["alpha"], "favouriteIndex": {"tools": ["alpha/add"]}, "presentation": "favourite-index"},
]


@pytest.mark.parametrize("spec", CASES)
def test_project_command_recreates_the_project(kit: Kit, runner: CliRunner, spec: dict[str, Any]) -> None:
    from mcpctl.resources.apply import apply_documents
    from mcpctl.resources.flags import project_command
    from mcpctl.resources.yamlio import Document

    kit.server("alpha")
    kit.server("beta")

    doc = {"apiVersion": "mcpctl/v1", "kind": "Project",
           "metadata": {"name": "rt", "labels": {"team": "a b"}, "annotations": {"note": "x=y"}}, "spec": spec}
    apply_documents([Document("test", 1, doc)], kit.store)
    live = kit.store.get("Project", "rt")
    # favouriteIndex, presentation and gate round-trip through get -o yaml | apply -f -
    yaml_text = run(runner, "get", "project", "rt", "-o", "yaml").stdout
    r = runner.invoke(app, ["apply", "-f", "-"], input=yaml_text, prog_name="mcpctl")
    assert r.exit_code == 0 and r.stdout == "project/rt unchanged\n", r.output
    argv = project_command(live)
    r = run(runner, *argv[1:])
    assert r.exit_code == 0, (argv, r.output)
    assert r.stdout == "project/rt unchanged\n", argv
    # and with other favourites, only favouriteIndex (and an explicit flat presentation) changes
    argv = project_command(live, favourites=["alpha/echo"], max_favourites=9)
    assert run(runner, *argv[1:]).exit_code == 0
    after = kit.store.get("Project", "rt")
    assert after["spec"]["favouriteIndex"]["tools"] == ["alpha/echo"]
    assert after["spec"]["favouriteIndex"]["maxFavourites"] == 9
    assert {k: v for k, v in after["spec"].items() if k != "favouriteIndex"} == \
        {k: v for k, v in live["spec"].items() if k != "favouriteIndex"}
    assert after["metadata"]["labels"] == {"team": "a b"} and after["metadata"]["annotations"] == {"note": "x=y"}


def test_favourite_flags_complete_canonical_ids_from_the_cache(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.server("beta")
    kit.project("p", ["alpha"])
    FilesCache().write_server_tools("alpha", [{"name": "echo", "description": "Echo text back\nmore"}, {"name": "add"}])
    FilesCache().write_server_tools("beta", [{"name": "echo"}])

    def bash(line: str) -> list[str]:
        cword = len(line.split()) - (0 if line.endswith(" ") else 1)
        r = runner.invoke(app, [], prog_name="mcpctl", env={
            "_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)})
        return r.stdout.split()

    # create project: from the servers named on the line
    assert bash("mcpctl create project x --server alpha --favourite alpha/e") == ["alpha/echo"]
    assert bash("mcpctl create project x --server beta --favourite ") == ["beta/echo"]
    # favourites add: from the project's servers; remove: from what is pinned
    assert sorted(bash("mcpctl favourites add -p p al")) == ["alpha/add", "alpha/echo"]
    kit.project("p", ["alpha"], favouriteIndex={"enabled": True, "tools": ["alpha/add"]})
    assert bash("mcpctl favourites remove -p p a") == ["alpha/add"]
    r = runner.invoke(app, [], prog_name="mcpctl", env={
        "_MCPCTL_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "mcpctl favourites add -p p alpha/"})
    assert "alpha/echo" in r.stdout and "Echo text back" in r.stdout


def test_tool_ids_and_output_formats_complete(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    FilesCache().write_server_tools("alpha", [{"name": "echo"}, {"name": "delete_all"}])

    def bash(line: str) -> list[str]:
        cword = len(line.split()) - (0 if line.endswith(" ") else 1)
        r = runner.invoke(app, [], prog_name="mcpctl", env={
            "_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)})
        return r.stdout.split()

    assert bash("mcpctl tools disable -p p alpha/d") == ["alpha/delete_all"]
    assert bash("mcpctl tools list -p p -o j") == ["json"]
    assert bash("mcpctl get servers -o ") == ["table", "wide", "yaml", "json", "name"]
    assert bash("mcpctl favourites suggest -p p -o t") == ["table"]
