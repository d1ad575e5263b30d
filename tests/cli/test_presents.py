"""What a project presents, said once (`kinds.presents`) and the same in every place that shows it:
`get projects`, `describe project`, `favourites list`, `doctor`, `surface` and what the gateway lists.

Issue 32: `get` and `describe` read `spec.presentation` with a default of `flat`, so the README's own
`writing` project (made with `--favourite`) showed `flat` while the gateway presented favourites,
and a `deferred` project that presents its favourites showed them "(off)".
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.presentation.catalogue import cached_catalogue
from mcpctl.resources.store import Store

TOOLS = [{"name": n, "description": f"{n.replace('_', ' ')} a note", "inputSchema": {"type": "object"}}
         for n in ("create_note", "search_notes", "read_note")]

# project name -> (create project flags, the presentation it has, favourites presented)
PROJECTS: dict[str, tuple[list[str], str, bool]] = {
    "plain": ([], "flat", False),
    "writing": (["--favourite", "notes/create_note"], "favourite-index", True),
    "pinned-off": (["--favourite", "notes/create_note", "--no-favourite-index"], "flat", False),
    "lean": (["--favourite", "notes/create_note", "--presentation", "deferred"], "deferred", True),
    "indexed": (["--presentation", "favourite-index", "--favourite", "notes/search_notes"], "favourite-index", True),
}


def run(runner: CliRunner, *args: str) -> Any:
    r = runner.invoke(app, list(args), prog_name="mcpctl")
    assert r.exit_code in (0, 1), r.output       # doctor exits 1 on a problem elsewhere (no client)
    return r


@pytest.fixture
def projects(runner: CliRunner) -> None:
    run(runner, "create", "server", "notes", "--no-check", "--", "notes-server")
    FilesCache().write_server_tools("notes", TOOLS)
    for name, (flags, _, _) in PROJECTS.items():
        r = run(runner, "create", "project", name, "--server", "notes", *flags)
        assert r.exit_code == 0, r.output


def _get_rows(runner: CliRunner) -> dict[str, list[str]]:
    lines = run(runner, "get", "projects").stdout.splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


def test_every_place_says_the_presentation_the_gateway_presents(runner: CliRunner, projects: None) -> None:
    rows = _get_rows(runner)
    for name, (_, mode, favourites) in PROJECTS.items():
        assert rows[name][2] == mode, (name, rows[name])
        assert ("(off)" in rows[name]) == (not favourites), (name, rows[name])
        described = run(runner, "describe", "project", name).stdout
        assert f"Presentation:    {mode}\n" in described, described
        assert f"Favourites:      {'on' if favourites else 'off'}," in described, described
        assert json.loads(run(runner, "favourites", "list", "--project", name, "-o", "json").stdout)[
            "presentation"] == mode
        assert json.loads(run(runner, "surface", "--project", name, "-o", "json").stdout)["presentation"] == mode
        doctor = json.loads(run(runner, "doctor", "--project", name, "--no-connect", "-o", "json").stdout)
        said = [c["message"] for c in doctor["checks"] if c["scope"] == f"project/{name}" and c["check"] == "tokens"]
        assert said and said[0].endswith(f"({mode} presentation)"), said
        # the gateway's tools/list, from the same pipeline
        listed = [t["name"] for t in cached_catalogue(name, Store(), FilesCache()).view().tools]
        assert any(n.startswith("favourite__") for n in listed) == favourites, (name, listed)
        assert any(n.startswith("all__") for n in listed) == (mode == "favourite-index"), (name, listed)


def test_describe_says_when_favourite_index_goes_without_its_instruction(runner: CliRunner, tmp_path: Any,
                                                                          projects: None) -> None:
    manifest = tmp_path / "p.yaml"
    manifest.write_text("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: quiet}\nspec:\n  servers: [notes]\n"
                        "  favouriteIndex: {enabled: true, tools: [notes/create_note], instruction: false}\n")
    assert run(runner, "apply", "-f", str(manifest)).exit_code == 0
    described = run(runner, "describe", "project", "quiet").stdout
    assert "Presentation:    favourite-index (without the PREFER favourite instruction)" in described
    assert _get_rows(runner)["quiet"][2] == "favourite-index"
