"""examples/*.yaml are valid manifests that name the bundled servers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from typer.testing import CliRunner

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
        assert (spec.command, spec.args[0]) == ("python", "-m")
        assert importlib.util.find_spec(spec.args[1]) is not None, spec.args[1]
    project = ProjectSpec.from_resource(store.get("Project", "demo"))
    assert project.servers == ("notes", "calc", "textkit")
    assert project.disabled == ("notes/delete_note",)
    assert project.favourite_index.enabled and len(project.favourite_index.tools) == 3
    assert project.search.record_queries is True
