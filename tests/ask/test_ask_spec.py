"""The project's `ask` settings: `create project --ask`, validation, and the round trip."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.resources.kinds import ProjectSpec
from mcpctl.resources.settings import DEFAULT_ASK_MAX_BYTES
from mcpctl.resources.store import Store


def test_create_project_ask_sets_the_spec_and_get_apply_is_unchanged(tmp_home: Path, runner: CliRunner) -> None:
    r = runner.invoke(app, ["create", "project", "p", "--ask", "--ask-top-k", "3", "--allow-missing"])
    assert r.exit_code == 0, r.output
    spec = ProjectSpec.from_resource(Store().get("Project", "p"))
    assert spec.ask.enabled and spec.ask.top_k == 3 and spec.ask.max_bytes == DEFAULT_ASK_MAX_BYTES
    out = runner.invoke(app, ["get", "project", "p", "-o", "yaml"]).output
    assert "ask:" in out and "refreshSeconds: 300" in out
    r = runner.invoke(app, ["apply", "-f", "-"], input=out)
    assert r.exit_code == 0 and "project/p unchanged" in r.output


def test_ask_is_off_by_default(tmp_home: Path, runner: CliRunner) -> None:
    assert runner.invoke(app, ["create", "project", "p", "--allow-missing"]).exit_code == 0
    assert not ProjectSpec.from_resource(Store().get("Project", "p")).ask.enabled


def test_bad_ask_settings_name_the_flag_or_the_field(tmp_home: Path, runner: CliRunner) -> None:
    r = runner.invoke(app, ["create", "project", "p", "--ask-top-k", "30", "--allow-missing"])
    assert r.exit_code != 0 and "--ask-top-k" in r.output and "between 1 and 20" in r.output
    doc = "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: r}\nspec:\n  ask: {enabled: true, maxByte: 3}\n"
    r = runner.invoke(app, ["apply", "-f", "-"], input=doc)
    assert r.exit_code != 0 and "spec.ask.maxByte" in r.output and "maxBytes" in r.output
    doc = "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: r}\nspec:\n  ask: {refreshSeconds: 1}\n"
    r = runner.invoke(app, ["apply", "-f", "-"], input=doc)
    assert r.exit_code != 0 and "spec.ask.refreshSeconds" in r.output
    assert "r" not in Store().names("Project")
