"""`--project P`: a temporary copy of the user's project per presentation; the user's store and
invocation log are left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ci_support import SLACK

HERE = Path(__file__).resolve().parent
MCPCTL = str(Path(sys.executable).parent / "mcpctl")


def test_a_copy_of_the_project_is_measured(fake_llm: str, tmp_home: Path, tmp_path: Path) -> None:
    from mcpctl import paths
    from mcpctl.resources.store import Store

    store = Store()
    for server in ("time", "calc"):
        store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                   "spec": {"command": sys.executable,
                            "args": ["-m", "mcpctl.bakeoff.stub", "--catalogue", str(HERE / "catalogue"),
                                     "--server", server]}})
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "mine"},
               "spec": {"servers": ["time", "calc"], "presentation": "flat",
                        "favouriteIndex": {"tools": ["calc/convert_units"]}}})
    before = sorted(p.name for p in paths.resources_dir().rglob("*.yaml"))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(line + "\n" for line in (HERE / "tasks.jsonl").read_text().splitlines()
                             if '"ur-032"' in line or '"ur-053"' in line))
    r = subprocess.run([MCPCTL, "bakeoff", "--endpoint", fake_llm, "--model", "first-listed", "--project", "mine",
                        "--tasks", str(tasks), "--presentations", "favourite-index", "--ranker", "bm25",
                        "-o", "json"], capture_output=True, text=True, timeout=120 * SLACK)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["runs"][0]["project"] == "mine" and report["runs"][0]["catalogue"] is None
    (s,) = report["summaries"]
    assert s["presentation"] == "favourite-index" and s["episodes"] == 2
    assert s["first_pick"]["value"] == 0.5            # the project's one favourite serves ur-053 only
    assert sorted(p.name for p in paths.resources_dir().rglob("*.yaml")) == before
    assert not paths.invocation_log_path().exists()
    assert Store().get("Project", "mine")["spec"]["presentation"] == "flat"
