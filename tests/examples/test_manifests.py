"""examples/*.yaml are valid manifests that name the bundled servers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app
from mcpctl.resources.kinds import ProjectSpec, ServerSpec
from mcpctl.resources.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_manifests_apply_and_round_trip(tmp_home: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["apply", "-f", str(EXAMPLES / "servers.yaml"), "-f", str(EXAMPLES / "project.yaml")])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == ["server/notes created", "server/calc created", "server/textkit created",
                                       "project/demo created"]
    # (`-f examples/` is refused: the directory also holds README.md)
    again = runner.invoke(app, ["apply", "-f", str(EXAMPLES / "project.yaml"), "-f", str(EXAMPLES / "servers.yaml")])
    assert again.exit_code == 0, again.output
    assert all(line.endswith(" unchanged") for line in again.stdout.splitlines())
    live = runner.invoke(app, ["get", "project", "demo", "-o", "yaml"])
    assert runner.invoke(app, ["apply", "-f", "-"], input=live.stdout).stdout == "project/demo unchanged\n"

    store = Store()
    for name in ("notes", "calc", "textkit"):
        spec = ServerSpec.from_resource(store.get("Server", name))
        assert (spec.command, spec.args) == ("mcpctl", ("example-server", name))
        assert importlib.util.find_spec(f"mcpctl.examples.{name}") is not None
    project = ProjectSpec.from_resource(store.get("Project", "demo"))
    assert project.servers == ("notes", "calc", "textkit")
    assert project.disabled == ("notes/delete_note",)
    assert project.favourite_index.enabled and len(project.favourite_index.tools) == 3
    assert project.search.record_queries is True


def test_example_servers_run_from_an_unactivated_venv(tmp_home: Path) -> None:
    """The gateway finds `mcpctl` next to its own Python even when PATH has none (or another python)."""
    import json
    import os
    import subprocess
    import sys

    runner = CliRunner()
    res = runner.invoke(app, ["apply", "-f", str(EXAMPLES / "servers.yaml"), "-f", str(EXAMPLES / "project.yaml")])
    assert res.exit_code == 0, res.output
    env = {**os.environ, "PATH": "/usr/bin:/bin", "MCPCTL_HOME": str(tmp_home)}
    r = subprocess.run([sys.executable, "-m", "mcpctl", "tools", "list", "--project", "demo", "--refresh", "-o", "json"],
                       env=env, capture_output=True, text=True, timeout=90 * SLACK)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    rows = json.loads(r.stdout)
    assert {row["server"] for row in rows} == {"notes", "calc", "textkit"}
    assert len(rows) == 17
    assert [row["state"] for row in rows if row["canonicalId"] == "notes/delete_note"] == ["disabled"]


def test_demo_registers_exactly_the_example_manifests() -> None:
    """`mcpctl demo` then `apply -f examples/servers.yaml -f examples/project.yaml` (the README's
    order) must report `unchanged`: the demo's objects are the manifests'."""
    from mcpctl.demo import demo_documents
    from mcpctl.resources.yamlio import parse_text

    manifests = [d.data for f in ("servers.yaml", "project.yaml")
                 for d in parse_text((EXAMPLES / f).read_text(), f)]
    assert demo_documents() == manifests
