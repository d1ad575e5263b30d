"""The store: atomic files, one lock for writers, concurrent processes lose nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.resources.apply import apply_documents
from mcpctl.resources.store import atomic_write
from mcpctl.resources.yamlio import parse_text
from mcpctl.storage import Storage
from pg_support import pg_cluster, pg_db, pg_url

__all__ = ["pg_cluster", "pg_db", "pg_url"]


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each test below runs on the files backend and on PostgreSQL (tests/pg_support.py)."""
    if request.param == "postgres":
        request.getfixturevalue("pg_db")
        assert Storage.open().backend == "postgres"
    return str(request.param)


WRITER = textwrap.dedent("""
    import sys
    from mcpctl.resources.apply import apply_documents
    from mcpctl.storage import Storage
    from mcpctl.resources.yamlio import parse_text
    tag, n = sys.argv[1], int(sys.argv[2])
    store = Storage.open().store
    for i in range(n):
        doc = f"apiVersion: mcpctl/v1\\nkind: Server\\nmetadata: {{name: {tag}-{i}}}\\nspec: {{command: a}}\\n"
        apply_documents(parse_text(doc, "<gen>"), store)
        # read-modify-write of one shared object: only correct if the lock serialises writers
        with store.locked():
            res = store.get("Server", "shared")
            labels = res["metadata"].setdefault("labels", {})
            labels["count"] = str(int(labels.get("count", "0")) + 1)
            store.put(res)
""")


def test_two_processes_applying_50_objects_each_lose_nothing(tmp_home: Path, tmp_path: Path, backend: str) -> None:
    apply_documents(parse_text("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: shared}\nspec: {command: a}\n",
                               "<t>"), Storage.open().store)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "MCPCTL_HOME": str(tmp_home)}
    procs = [subprocess.Popen([sys.executable, str(script), tag, "50"], env=env) for tag in ("a", "b")]
    for p in procs:
        assert p.wait(timeout=120 * SLACK) == 0
    store = Storage.open().store
    names = store.names("Server")
    assert len(names) == 101
    assert {f"a-{i}" for i in range(50)} | {f"b-{i}" for i in range(50)} | {"shared"} == set(names)
    assert store.get("Server", "shared")["metadata"]["labels"]["count"] == "100"
    leftovers = [p for p in (tmp_home / "config" / "resources").rglob("*.tmp")]
    assert leftovers == []


def test_two_cli_apply_processes_at_once(tmp_home: Path, tmp_path: Path, backend: str) -> None:
    files = []
    for tag in ("x", "y"):
        f = tmp_path / f"{tag}.yaml"
        f.write_text("".join(f"---\napiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: {tag}-{i}}}\n"
                             f"spec: {{command: run, args: ['{i}']}}\n" for i in range(50)))
        files.append(f)
    env = {**os.environ, "MCPCTL_HOME": str(tmp_home)}
    procs = [subprocess.Popen([sys.executable, "-m", "mcpctl", "apply", "-f", str(f)], env=env,
                              stdout=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=120 * SLACK)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(line.endswith(" created") for o in outs for line in o.splitlines()) == 100
    assert len(Storage.open().store.names("Server")) == 100


def test_atomic_write_replaces_whole_file_and_sets_mode(tmp_path: Path) -> None:
    p = tmp_path / "d" / "f.txt"
    atomic_write(p, "one")
    atomic_write(p, "two", mode=0o600)
    assert p.read_text() == "two"
    assert (p.stat().st_mode & 0o777) == 0o600
    assert [x.name for x in p.parent.iterdir()] == ["f.txt"]


def test_status_is_kept_apart_from_the_spec(tmp_home: Path, backend: str) -> None:
    store = Storage.open().store
    apply_documents(parse_text("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: s}\nspec: {command: a}\n", "<t>"), store)
    before = store.get("Server", "s")
    store.set_status("Server", "s", {"state": "up", "tools": 3})
    store.set_status("Server", "s", {"lastError": None})
    assert store.get("Server", "s") == before
    assert store.status("Server", "s") == {"state": "up", "tools": 3, "lastError": None}
    store.delete("Server", "s")
    assert store.status("Server", "s") == {}
