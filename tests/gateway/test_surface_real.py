"""`mcpctl surface` on real servers' tool lists and on a log written by real calls through the gateway.

The catalogue comes from real MCP servers listed by `--refresh`: the bundled examples (notes, calc,
textkit), LiveMCPBench servers served by `tests/servers/dataset_server.py` from the vendored slice,
and the npm reference servers (everything, filesystem, memory; skipped locally when not
installed, an install bug in CI). The collisions and near-duplicate pairs asserted by name are
ones that data really contains (measured on it; see `catalogue.judge.NEAR_DUPLICATE_THRESHOLD`).
The use numbers come from an invocation log the gateway wrote (in-process, `inproc`, with `mcpctl
serve`'s recorder) while the SDK client called through it, in two sessions, one of them with a
token of the read-only profile.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gwkit import REPO, Kit, npm_bin, wait_tools
from inproc import Harness
from typer.testing import CliRunner

from ci_support import SLACK, skip_unless_ci
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.resources.store import Store

SLICE = REPO / "tests" / "fixtures" / "livemcpbench_slice" / "tools.jsonl"
DATASET_SERVER = REPO / "tests" / "servers" / "dataset_server.py"
# LiveMCPBench servers whose tools overlap: two filesystem servers, two arXiv servers, and a
# document server with its own add/delete/search verbs
DATASET = ("filesystem", "desktop-commander", "arxiv-mcp-server", "mcp-simple-arxiv", "word-document-server")
EXAMPLES = ("notes", "calc", "textkit")


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, list(args), prog_name="mcpctl")


def dataset_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SLICE.read_text(encoding="utf-8").splitlines() if line.strip()]


def register(kit: Kit, tmp_path: Path, *, npm: bool) -> list[str]:
    servers: list[str] = []
    for name in EXAMPLES:
        extra = ["--dir", str(tmp_path / "notes")] if name == "notes" else []
        servers.append(kit.server(name, "-m", f"mcpctl.examples.{name}", *extra, command=sys.executable))
    for name in DATASET:
        servers.append(kit.server(name, str(DATASET_SERVER), "--tools-file", str(SLICE), "--server", name,
                                  command=sys.executable, connect=60))
    if npm:
        servers.append(kit.server("everything", command=str(npm_bin("mcp-server-everything")), connect=60))
        files = tmp_path / "files"
        files.mkdir()
        servers.append(kit.server("fs", str(files), command=str(npm_bin("mcp-server-filesystem")), connect=60))
        servers.append(kit.server("memory", command=str(npm_bin("mcp-server-memory")), connect=60,
                                  env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}))
    return servers


def surface_json(runner: CliRunner, project: str, *extra: str) -> dict[str, Any]:
    r = run(runner, "surface", "--project", project, "-o", "json", *extra)
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def test_surface_of_examples_and_livemcpbench_servers(kit: Kit, runner: CliRunner, tmp_path: Path) -> None:
    kit.project("p", register(kit, tmp_path, npm=False))
    report = surface_json(runner, "p", "--refresh")
    rows = [r for r in dataset_rows() if r["server"] in DATASET]
    tools = {t["id"]: t for t in report["tools"]}
    assert {f"{r['server']}/{r['name']}" for r in rows} <= set(tools)
    assert all(s["status"] == "listed" and s["tools"] > 0 for s in report["servers"])
    assert report["total"]["tools"] == len(tools) == len(rows) + sum(s["tools"] for s in report["servers"]
                                                                     if s["name"] in EXAMPLES)

    # collisions: the same tool names on both filesystem servers and on both arXiv servers
    collisions = {c["name"]: sorted(c["ids"]) for c in report["collisions"]}
    assert collisions["read_file"] == ["desktop-commander/read_file", "filesystem/read_file"]
    assert collisions["search_papers"] == ["arxiv-mcp-server/search_papers", "mcp-simple-arxiv/search_papers"]
    names_by_server: dict[str, set[str]] = {}
    for t in tools.values():
        names_by_server.setdefault(t["name"], set()).add(t["server"])
    assert set(collisions) == {n for n, servers in names_by_server.items() if len(servers) > 1}
    # near-duplicates: this data holds none at the threshold. Its closest cross-server pair is one
    # tool of the two filesystem servers (0.63), and two different arXiv tools score 0.57
    assert report["nearDuplicates"]["pairs"] == []
    from mcpctl.catalogue.judge import near_duplicates
    from mcpctl.presentation.catalogue import cached_catalogue

    closest = near_duplicates(cached_catalogue("p", Store(), FilesCache()).catalogue.tools, threshold=0.5)
    assert [(p.a, p.b) for p in closest[:2]] == [("filesystem/move_file", "desktop-commander/move_file"),
                                                 ("arxiv-mcp-server/search_papers", "mcp-simple-arxiv/list_categories")]
    assert closest[0].score < report["nearDuplicates"]["threshold"]

    # write reach: annotations where the server gives them, the name heuristic where not
    def reach(cid: str) -> tuple[list[str], str]:
        return tools[cid]["reach"]["kinds"], tools[cid]["reach"]["source"]

    assert reach("notes/delete_note") == (["write", "delete"], "annotations")
    assert reach("notes/search_notes") == ([], "annotations")
    assert reach("desktop-commander/kill_process") == (["write", "delete"], "heuristic")
    assert reach("filesystem/write_file") == (["write"], "heuristic")
    assert reach("word-document-server/delete_paragraph") == (["write", "delete"], "heuristic")
    assert reach("filesystem/read_file") == ([], "heuristic")
    assert reach("arxiv-mcp-server/search_papers") == ([], "heuristic")
    writers = report["writeReach"]
    assert writers["count"] == len(writers["tools"]) == writers["byAnnotations"] + writers["byHeuristic"]
    assert "never a security boundary" in writers["note"]

    # price: the servers and the built-ins add up to the project's total; deferred lists least
    modes = {m["mode"]: m for m in report["modes"]}
    assert modes["flat"]["current"] and report["total"]["tokens"] == modes["flat"]["tokens"]
    assert sum(s["tokens"] for s in report["servers"]) + report["builtins"]["tokens"] == modes["flat"]["tokens"]
    assert modes["deferred"]["tokens"] < modes["flat"]["tokens"] / 10
    assert modes["flat"]["listed"] == len(tools) + 2                      # + search_tools, read_result
    assert report["tokens"]["approximate"] is True and report["tokens"]["label"].startswith("≈ tokens")
    assert kit.leftovers() == []


def test_surface_with_the_npm_reference_servers(kit: Kit, runner: CliRunner, tmp_path: Path) -> None:
    missing = [n for n in ("everything", "filesystem", "memory") if not npm_bin(f"mcp-server-{n}")]
    if missing:
        skip_unless_ci(f"npm reference servers not installed: {', '.join(missing)} (run: npm install --prefix "
                       ".npm-servers @modelcontextprotocol/server-{everything,filesystem,memory})")
    kit.project("p", register(kit, tmp_path, npm=True))
    report = surface_json(runner, "p", "--refresh")
    tools = {t["id"]: t for t in report["tools"]}
    collisions = {c["name"]: sorted(c["ids"]) for c in report["collisions"]}
    assert collisions["echo"] == ["everything/echo", "textkit/echo"]
    assert collisions["read_file"] == ["desktop-commander/read_file", "filesystem/read_file", "fs/read_file"]
    assert collisions["edit_file"] == ["filesystem/edit_file", "fs/edit_file"]
    pairs = {(p["a"], p["b"]): p for p in report["nearDuplicates"]["pairs"]}
    # differently named tools a model cannot tell apart
    add = pairs[("calc/add", "everything/get-sum")]
    assert add["sameName"] is False and add["score"] >= report["nearDuplicates"]["threshold"]
    assert add["descriptionA"].startswith("Add two numbers") and add["descriptionB"] == "Returns the sum of two numbers"
    reader = pairs[("filesystem/read_file", "fs/read_text_file")]
    assert reader["sameName"] is False and reader["score"] > 0.9
    # the same tool of two filesystem servers: a name collision and a near-duplicate at once
    assert pairs[("filesystem/write_file", "fs/write_file")]["sameName"] is True
    assert ("arxiv-mcp-server/search_papers", "mcp-simple-arxiv/list_categories") not in pairs
    assert all(a.split("/")[0] != b.split("/")[0] for a, b in pairs)
    assert [p["score"] for p in report["nearDuplicates"]["pairs"]] == sorted(
        (p["score"] for p in report["nearDuplicates"]["pairs"]), reverse=True)
    # annotations of the npm servers
    assert tools["memory/delete_entities"]["reach"] == {
        "kinds": ["write", "delete"], "source": "annotations",
        "evidence": "readOnlyHint=false, destructiveHint=true, openWorldHint=false"}
    assert tools["everything/echo"]["reach"]["kinds"] == [] and tools["fs/read_text_file"]["reach"]["kinds"] == []
    assert tools["fs/write_file"]["reach"]["kinds"][:2] == ["write", "delete"]
    assert kit.leftovers() == []


# -- a log written by real calls through the gateway ------------------------------------------------------


ARGS: dict[str, dict[str, Any]] = {
    "calc__add": {"a": 1, "b": 2}, "calc__multiply": {"a": 2, "b": 3}, "textkit__slugify": {"text": "Hello World"},
    "alpha__fail": {}, "alpha__echo": {"text": "x"}, "notes__create_note": {"title": "a note"},
    "notes__list_notes": {}, "notes__delete_note": {"id": "1"}, "search_tools": {"query": "add two numbers"},
}
SESSION_1 = (["calc__add", "search_tools", "calc__multiply", "textkit__slugify", "alpha__fail", "alpha__echo",
              "alpha__echo", "notes__create_note", "notes__list_notes"] + ["calc__add"] * 6
             + ["textkit__slugify"] * 4)
SESSION_2 = ["calc__add", "notes__delete_note", "calc__add"]      # under --profile read-only


def expected_use(sessions: list[list[str]]) -> dict[str, dict[str, int]]:
    """Calls, and calls followed by a different tool of the same server, per canonical id (every
    call here comes well within a minute of the one before it; search_tools is skipped)."""
    out: dict[str, dict[str, int]] = {}
    for names in sessions:
        ids = [n.replace("__", "/") for n in names if n != "search_tools"]
        for i, cid in enumerate(ids):
            nxt = ids[i + 1] if i + 1 < len(ids) else None
            u = out.setdefault(cid, {"calls": 0, "neighbour": 0})
            u["calls"] += 1
            u["neighbour"] += nxt is not None and nxt != cid and nxt.split("/")[0] == cid.split("/")[0]
    return out


def wait_rows(project: str, n: int) -> None:
    from mcpctl.audit.log import InvocationLog

    deadline = time.monotonic() + 15 * SLACK
    while True:
        with InvocationLog() as log:
            if log.count(project) >= n or time.monotonic() > deadline:
                return
        time.sleep(0.05)


@pytest.mark.anyio
async def test_surface_judges_use_from_real_calls_and_its_lines_run(kit: Kit, gw: Harness, runner: CliRunner,
                                                                     tmp_path: Path) -> None:
    servers = [kit.server("calc", "-m", "mcpctl.examples.calc", command=sys.executable),
               kit.server("textkit", "-m", "mcpctl.examples.textkit", command=sys.executable),
               kit.server("notes", "-m", "mcpctl.examples.notes", "--dir", str(tmp_path / "notes"),
                          command=sys.executable),
               kit.server("alpha")]
    kit.project("p", servers, profiles={"writer": {"allow": ["notes/*", "calc/*"]}})
    reader = run(runner, "create", "token", "reader", "-p", "p", "--profile", "read-only").stdout.strip()
    async with gw.serve("p", log=True) as g:
        for token, names in ((None, SESSION_1), (reader, SESSION_2)):
            async with g.client("legacy", token=token) as c:
                await wait_tools(c, {"calc__add"}, timeout=60)
                for name in names:
                    await c.session.call_tool(name, ARGS[name])
    wait_rows("p", len(SESSION_1) + len(SESSION_2))

    report = surface_json(runner, "p")
    tools = {t["id"]: t for t in report["tools"]}
    want = expected_use([SESSION_1, SESSION_2])
    assert {cid: {"calls": tools[cid]["calls"], "neighbour": tools[cid]["neighbour"]} for cid in want} == want
    assert tools["alpha/fail"]["failed"] == 1                     # isError from the tool
    assert tools["notes/delete_note"]["failed"] == 1              # denied: outside the read-only profile
    upstream_calls = sum(u["calls"] for u in want.values())
    assert report["use"]["calls"] == upstream_calls == len(SESSION_1) + len(SESSION_2) - 1
    neighbour = sum(u["neighbour"] for u in want.values())
    assert report["use"]["neighbour"] == neighbour and neighbour >= 3
    # alpha/fail failed and was followed by alpha/echo: one flagged call, not two
    flagged = neighbour + 2 - (want["alpha/fail"]["neighbour"] > 0)
    assert report["numbers"]["flaggedCalls"] == flagged
    assert report["numbers"]["flaggedShare"] == round(flagged / upstream_calls, 4)
    assert {(p["first"], p["then"]) for p in report["use"]["neighbourPairs"]} == {
        ("calc/add", "calc/multiply"), ("alpha/fail", "alpha/echo"), ("notes/create_note", "notes/list_notes")}
    assert report["numbers"]["visibleTools"] == len(tools) + 2      # + search_tools, read_result
    assert set(report["use"]["neverCalled"]) == {cid for cid, t in tools.items() if t["enabled"] and not t["calls"]}

    # profiles: the built-in read-only and the declared writer, each with its own view and calls
    assert [p["name"] for p in report["profiles"]] == ["read-only", "writer"]
    assert tools["calc/add"]["profiles"] == {"read-only": {"visible": True, "calls": 2},
                                             "writer": {"visible": True, "calls": 0}}
    assert tools["notes/delete_note"]["profiles"]["read-only"] == {"visible": False, "calls": 1}
    assert tools["alpha/echo"]["profiles"]["writer"]["visible"] is False

    # the recommendations run as printed, and the next report reflects them
    recs = {r["kind"]: r for r in report["recommendations"]}
    assert set(recs) >= {"disable-unused-writers", "disable-unused", "favourites"}
    assert "alpha/delete_all" in recs["disable-unused-writers"]["argv"]
    assert recs["favourites"]["argv"][5:7] == ["calc/add", "textkit/slugify"]
    disabled: list[str] = []
    for rec in report["recommendations"]:
        argv = shlex.split(rec["command"])
        assert argv == rec["argv"] and argv[0] == "mcpctl"
        done = run(runner, *argv[1:])
        assert done.exit_code == 0, done.output
        if argv[1:3] == ["tools", "disable"]:
            disabled += argv[5:]
    after = surface_json(runner, "p")
    enabled = {t["id"]: t["enabled"] for t in after["tools"]}
    assert disabled and not any(enabled[cid] for cid in disabled)
    assert after["presentation"] == "favourite-index"
    assert [t["id"] for t in after["tools"] if t["favourite"]] == ["calc/add", "textkit/slugify", "alpha/echo"]
    assert {r["kind"] for r in after["recommendations"]}.isdisjoint({"disable-unused", "disable-unused-writers"})
    assert after["total"]["tokens"] < report["total"]["tokens"]

    # people and pull requests get the same report
    table = run(runner, "surface", "--project", "p")
    assert table.exit_code == 0, table.output
    for text in ("The three numbers", "tools visible in a typical request", "Profiles × tools",
                 "calc/add → calc/multiply", "never a security boundary", "≈ tokens (c"):
        assert text in table.stdout, text
    md = run(runner, "surface", "--project", "p", "-o", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("### Tool surface: project `p`")
    assert "| server | tools | enabled |" in md.stdout and "**The three numbers**" in md.stdout
    assert kit.leftovers() == []
