"""`mcpctl tools search`: the search_tools ranker from the shell."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli.tools_search import register
from mcpctl.resources.store import Store

TOOLS = [
    {"name": "create_issue", "description": "Create a new issue in a GitHub repository",
     "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}, "title": {"type": "string"}}}},
    {"name": "delete_repository", "description": "Delete a repository"},
    {"name": "list_pull_requests", "description": "List pull requests of a repository\nSecond line."},
]
SLACK = [{"name": "send_message", "description": "Post a message to a Slack channel",
          "inputSchema": {"type": "object", "properties": {"channel": {"type": "string"}}}}]


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    tools_app = typer.Typer()
    register(tools_app)
    root.add_typer(tools_app, name="tools")
    return root


@pytest.fixture
def project() -> str:
    for server in ("github", "slack", "jira"):
        Store().put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                     "spec": {"command": "true"}})
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"},
                 "spec": {"servers": ["github", "slack", "jira"], "tools": {"disabled": ["github/delete_*"]},
                          "search": {"topK": 2}}})
    FilesCache().write_server_tools("github", TOOLS)
    FilesCache().write_server_tools("slack", SLACK)
    return "p"


def test_search_json_has_the_search_tools_shape(app: typer.Typer, runner: CliRunner, project: str) -> None:
    result = runner.invoke(app, ["tools", "search", "--project", project, "open an issue", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"tools", "total_searched"}
    assert data["total_searched"] == 3          # delete_repository is disabled
    top = data["tools"][0]
    assert set(top) == {"name", "id", "description", "inputSchema", "score"}
    assert top["id"] == "github/create_issue"
    assert top["inputSchema"]["properties"]["repo"] == {"type": "string"}
    assert len(data["tools"]) <= 2               # the project's search.topK


def test_search_never_returns_disabled_tools(app: typer.Typer, runner: CliRunner, project: str) -> None:
    result = runner.invoke(app, ["tools", "search", "-p", project, "delete repository", "-k", "10", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "github/delete_repository" not in [t["id"] for t in json.loads(result.stdout)["tools"]]


def test_search_table_and_unlisted_server_warning(app: typer.Typer, runner: CliRunner, project: str) -> None:
    result = runner.invoke(app, ["tools", "search", "-p", project, "send a slack message", "--top-k", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["#", "NAME", "SCORE", "DESCRIPTION"]
    assert lines[1].split()[:2] == ["1", _presented("slack/send_message")]
    assert len(lines) == 2
    assert "server 'jira' failed to list" in result.stderr      # never listed: tried now, once


def _presented(cid: str) -> str:
    from mcpctl.presentation.catalogue import cached_catalogue

    return cached_catalogue("p", Store(), FilesCache()).view().present(cid) or cid


def test_presented_names_are_what_the_gateway_presents(
    app: typer.Typer, runner: CliRunner, project: str
) -> None:
    result = runner.invoke(app, ["tools", "search", "-p", project, "send a slack message", "-o", "json"])
    assert json.loads(result.stdout)["tools"][0]["name"] == "slack__send_message"
    # the same pipeline as the gateway: a pinned favourite comes back under its favourite name
    res = Store().get("Project", "p")
    res["spec"]["favouriteIndex"] = {"enabled": True, "tools": ["slack/send_message"]}
    Store().put(res)
    result = runner.invoke(app, ["tools", "search", "-p", project, "send a slack message", "-k", "3", "-o", "json"])
    names = [t["name"] for t in json.loads(result.stdout)["tools"]]
    assert names[0] == "favourite__send_message" and all(n.startswith(("favourite__", "all__")) for n in names)


def test_search_with_no_listed_tools_is_a_clear_error(app: typer.Typer, runner: CliRunner) -> None:
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "empty"},
                 "spec": {"servers": ["jira"]}})
    result = runner.invoke(app, ["tools", "search", "-p", "empty", "anything"])
    assert result.exit_code == 1
    assert "has no tools to search" in result.stderr
    assert runner.invoke(app, ["tools", "search", "-p", "nope", "x"]).exit_code == 3


def test_cli_modules_do_not_import_mcp() -> None:
    code = ("import sys, mcpctl.cli.tools_search, mcpctl.cli.eval, mcpctl.catalogue.rank, "
            "mcpctl.presentation.catalogue, mcpctl.presentation.view; print('mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_search_is_wired_into_the_mcpctl_tools_group(runner: CliRunner, project: str) -> None:
    from mcpctl.cli import app as mcpctl_app

    result = runner.invoke(mcpctl_app, ["tools", "search", "-p", project, "pull requests", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tools"][0]["id"] == "github/list_pull_requests"


def test_search_empty_query_is_a_clear_error(app: typer.Typer, runner: CliRunner, project: str) -> None:
    result = runner.invoke(app, ["tools", "search", "-p", project, "   "])
    assert result.exit_code == 1
    assert "QUERY is empty" in result.stderr
    assert result.stdout == ""


def test_ranker_option_ranks_one_query_with_another_ranker(app: typer.Typer, runner: CliRunner, project: str) -> None:
    before = Store().get("Project", project)["spec"]
    result = runner.invoke(app, ["tools", "search", "--project", project, "open an issue"])
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().endswith("(bm25 ranker)")   # the project's search.ranker (the default)
    result = runner.invoke(app, ["tools", "search", "--project", project, "open an issue", "--ranker", "auto"])
    assert result.exit_code == 0, result.output
    assert "(auto: " in result.stderr and "github__create_issue" in result.stdout
    assert Store().get("Project", project)["spec"] == before   # for this query only
    result = runner.invoke(app, ["tools", "search", "--project", project, "open an issue", "--ranker", "fuzzy"])
    assert result.exit_code == 2 and "'fuzzy' is not one of" in result.output
