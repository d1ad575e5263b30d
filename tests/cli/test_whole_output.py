"""Output that is whole (issue 32): `get -o yaml` prints every field's default (or none), `apply`
reports every problem of its input in file order, and `favourites suggest --top N` prints at most
N rows with what lies below the floor collapsed into one line.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from mcpctl.audit.log import InvocationLog
from mcpctl.audit.records import CallRecord
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.resources.kinds import PROJECT_SPEC, ProjectSpec
from mcpctl.resources.schema import Obj, Scalar, default_at
from mcpctl.resources.store import Store
from mcpctl.resources.validate import prune
from mcpctl.resources.yamlio import parse_text


def run(runner: CliRunner, *args: str, input: str | None = None) -> Any:
    return runner.invoke(app, list(args), prog_name="mcpctl", input=input)


def test_get_yaml_prints_every_default_so_editing_one_applies(runner: CliRunner) -> None:
    assert run(runner, "create", "project", "p").exit_code == 0
    text = run(runner, "get", "project", "p", "-o", "yaml").stdout
    spec = parse_text(text, "<get>")[0].data["spec"]
    for name, node in PROJECT_SPEC.fields.items():          # a field with a default is printed, one without is not
        default = prune(default_at(PROJECT_SPEC, name))
        if isinstance(node, Scalar | Obj) and default not in (None, {}, []):
            assert spec.get(name) == default, (name, text)
    assert "  pinning: warn\n" in text
    r = run(runner, "apply", "-f", "-", input=text.replace("pinning: warn", "pinning: hold"))
    assert r.stdout == "project/p configured\n", r.output
    assert ProjectSpec.from_resource(Store().get("Project", "p")).pinning == "hold"


def test_a_project_stored_before_a_default_existed_shows_it_and_round_trips(runner: CliRunner) -> None:
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "old"},
                 "spec": {"servers": [], "search": {"enabled": True}}})      # no pinning, no defaults
    text = run(runner, "get", "project", "old", "-o", "yaml").stdout
    assert "  pinning: warn\n" in text and "  names:\n" in text, text
    assert run(runner, "apply", "-f", "-", input=text).stdout == "project/old unchanged\n"


def test_apply_reports_every_problem_in_file_order_and_changes_nothing(runner: CliRunner, tmp_path: Path) -> None:
    manifest = tmp_path / "p.yaml"
    manifest.write_text(
        "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: lines}\nspec:\n  servers: []\n"
        "  search: {enabled: true, ranker: bm26}\n"         # line 6
        "  pinning: holdd\n"                                # line 7 (validated before search in schema order)
        "  names: {style: portabel}\n"                      # line 8
        "---\napiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: fine}\nspec: {command: x}\n"
        "---\napiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: bad}\nspec:\n  comand: x\n")   # line 20
    r = run(runner, "apply", "-f", str(manifest))
    assert r.exit_code == 1, r.output
    lines = r.stderr.splitlines()
    assert lines[0] == "error: 4 problems, nothing changed:", r.stderr
    assert [line.split(": ", 2)[0].split(", ")[1:] for line in lines[1:5]] == [
        ["document 1", "line 6"], ["document 1", "line 7"], ["document 1", "line 8"], ["document 3", "line 19"]]
    assert "spec.search.ranker: 'bm26' is not one of" in lines[1] and "(did you mean: bm25?)" in lines[1]
    assert "spec.pinning: 'holdd'" in lines[2] and "spec.names.style" in lines[3]
    assert "unknown field 'spec.comand'" in lines[4] and "did you mean: command?" in lines[4]
    assert Store().names("Project") == [] and Store().names("Server") == []
    one = tmp_path / "one.yaml"                             # one problem reads as before: its line and hint
    one.write_text("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: x}\nspec:\n  pinning: holdd\n")
    r = run(runner, "apply", "-f", str(one))
    assert r.stderr.splitlines() == [f"error: {one}, document 1, line 5: spec.pinning: 'holdd' is not one of: "
                                     "off, warn, hold", "  did you mean: hold?"], r.stderr


def _calls(project: str, per_tool: dict[str, tuple[int, int]]) -> None:
    """Log `calls` calls of each tool spread over `sessions` sessions."""
    now = time.time() - 60
    rows = [CallRecord(now + i, 1.0, project, cid.replace("/", "__"), cid, "ok", session_id=f"s{i % sessions}")
            for cid, (calls, sessions) in per_tool.items() for i in range(calls)]
    with InvocationLog() as log:
        log.record_many(rows)


def test_suggest_top_bounds_the_rows_and_collapses_what_is_below_the_floor(runner: CliRunner) -> None:
    tools = [f"t{i:02d}" for i in range(40)]
    assert run(runner, "create", "server", "s", "--no-check", "--", "s").exit_code == 0
    FilesCache().write_server_tools("s", [{"name": t, "description": f"tool {t}", "inputSchema": {"type": "object"}}
                                   for t in tools])
    assert run(runner, "create", "project", "p", "--server", "s", "--disable", "s/t00").exit_code == 0
    uses = {f"s/{t}": (10 + 40 - i, 3) for i, t in enumerate(tools[:9])}     # 9 over the floor (t00 disabled)
    uses |= {f"s/{t}": (1, 1) for t in tools[9:]}                           # 31 below it
    _calls("p", uses)
    r = run(runner, "favourites", "suggest", "--project", "p", "--top", "5")
    assert r.exit_code == 0, r.output
    table = r.stdout.split("\n\nTo make these", 1)[0].splitlines()
    rows = [line for line in table[2:] if line.strip() and not line.startswith("+ ")]
    assert len(rows) == 5, r.stdout                                         # --top bounds the rows
    assert [row.split()[0] for row in rows] == ["1", "2", "3", "4", "5"], r.stdout
    assert "+ 31 tool(s) used below the floor of 3 calls in 2 sessions (31 calls in all)" in r.stdout
    assert "+ 4 more not shown (1 flagged, 3 beyond --top 5): -o json lists them" in r.stdout
    wide = run(runner, "favourites", "suggest", "--project", "p", "--top", "9").stdout     # room for the flagged
    rows = [line for line in wide.split("\n\nTo make these", 1)[0].splitlines()[2:] if not line.startswith("+ ")]
    assert [row.split()[0] for row in rows] == ["-", "1", "2", "3", "4", "5", "6", "7", "8"], wide
    assert "flagged: disabled in the project" in rows[0] and "more not shown" not in wide
    assert "t20" not in r.stdout
    data = json.loads(run(runner, "favourites", "suggest", "--project", "p", "--top", "5", "-o", "json").stdout)
    assert len(data["tools"]) == 40 and len(data["suggested"]) == 5          # the JSON keeps every tool
