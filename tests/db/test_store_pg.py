"""The store on both backends: resourceVersion, kubectl's conflict rule, all-or-nothing apply on
PostgreSQL, token hashes, and 4 concurrent writer processes losing no update."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.errors import Conflict
from mcpctl.resources import tokens
from mcpctl.resources.apply import apply_documents
from mcpctl.resources.yamlio import parse_text, to_yaml
from mcpctl.storage import Storage

SERVER = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: {name}{extra}}}\nspec: {{command: {cmd}}}\n"


def _server(name: str, cmd: str = "a", extra: str = "") -> str:
    return SERVER.format(name=name, cmd=cmd, extra=extra)


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        request.getfixturevalue("pg_db")
        assert Storage.open().backend == "postgres"
    return str(request.param)


def test_resource_version_on_every_object_and_it_grows(backend: str) -> None:
    store = Storage.open().store
    apply_documents(parse_text(_server("a") + "---\n" + _server("b"), "<t>"), store)
    rv_a = int(store.get("Server", "a")["metadata"]["resourceVersion"])
    assert all(o["metadata"].get("resourceVersion") for o in store.list("Server"))
    apply_documents(parse_text(_server("a", "changed"), "<t>"), store)
    assert int(store.get("Server", "a")["metadata"]["resourceVersion"]) > rv_a


def test_apply_of_a_stale_resource_version_conflicts(backend: str) -> None:
    store = Storage.open().store
    apply_documents(parse_text(_server("a"), "<t>"), store)
    read = store.get("Server", "a")
    apply_documents(parse_text(_server("a", "theirs"), "<t>"), store)          # another writer
    mine = dict(read, spec={"command": "mine"})
    with pytest.raises(Conflict, match="changed by someone else") as e:
        apply_documents(parse_text(to_yaml(mine), "<mine>"), store)
    assert "mcpctl get server a -o yaml" in (e.value.hint or "")
    assert store.get("Server", "a")["spec"]["command"] == "theirs"               # their update kept
    fresh = dict(store.get("Server", "a"), spec={"command": "mine"})
    apply_documents(parse_text(to_yaml(fresh), "<mine>"), store)                # current version: applied
    assert store.get("Server", "a")["spec"]["command"] == "mine"


def test_apply_carrying_a_version_of_a_deleted_object_conflicts(backend: str) -> None:
    store = Storage.open().store
    apply_documents(parse_text(_server("a"), "<t>"), store)
    read = store.get("Server", "a")
    store.delete("Server", "a")
    with pytest.raises(Conflict, match="deleted"):
        apply_documents(parse_text(to_yaml(read), "<t>"), store)


def test_apply_is_all_or_nothing_in_one_transaction(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Storage.open().store
    real_put = type(store).put
    calls = []

    def failing_put(self: object, res: dict[str, object]) -> None:
        calls.append(res)
        if len(calls) == 3:
            raise RuntimeError("the disk fell off")
        real_put(self, res)       # type: ignore[arg-type]

    monkeypatch.setattr(type(store), "put", failing_put)
    docs = "---\n".join(_server(f"s{i}") for i in range(5))
    with pytest.raises(RuntimeError):
        apply_documents(parse_text(docs, "<t>"), store)
    monkeypatch.undo()
    assert len(calls) == 3
    assert Storage.open().store.names("Server") == []             # the two written before the failure rolled back


def test_token_hashes_live_in_the_store(backend: str, tmp_home: Path) -> None:
    store = Storage.open().store
    apply_documents(parse_text("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec: {servers: []}\n",
                               "<t>"), store)
    secret = tokens.new_secret()
    from mcpctl.resources.apply import create_object
    from mcpctl.resources.yamlio import Document

    doc = Document("<t>", 1, {"apiVersion": "mcpctl/v1", "kind": "Token", "metadata": {"name": "ci"},
                              "spec": {"project": "p"}})
    with store.locked():
        create_object(doc, store)
        tokens.write_hash("ci", secret, store)
    index = tokens.TokenIndex("p", Storage.open().store)
    assert index.lookup(secret.encode()) is not None
    if backend == "postgres":
        assert not (tmp_home / "state" / "credentials").exists()       # nothing on this host's disk
    with store.locked():
        store.delete("Token", "ci")
        tokens.delete_hash("ci", store)
    if backend == "postgres":     # the watcher hears the delete; bounded wait for its notification
        from mcpctl.resources.pgstore import watcher

        w = watcher(os.environ["MCPCTL_DATABASE_URL"])
        gen = w.generation()
        if index._stamp == gen:
            w.wait_changed(gen, 5.0)
    assert index.lookup(secret.encode()) is None


WRITER = textwrap.dedent("""
    import sys, time
    from mcpctl.errors import Conflict
    from mcpctl.resources.apply import apply_documents
    from mcpctl.storage import Storage
    from mcpctl.resources.yamlio import parse_text, to_yaml
    tag, n, bound = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    store, conflicts, done = Storage.open().store, 0, 0
    deadline = time.monotonic() + bound
    while done < n and time.monotonic() < deadline:
        res = store.get("Server", "shared")             # read, outside any lock, then write back
        labels = res["metadata"].setdefault("labels", {})
        labels["count"] = str(int(labels.get("count", "0")) + 1)
        labels["last"] = tag
        try:
            apply_documents(parse_text(to_yaml(res), "<" + tag + ">"), store)
            done += 1
        except Conflict:
            conflicts += 1
    print(done, conflicts)
""")

EDITOR = textwrap.dedent("""
    import re, sys
    p = sys.argv[1]
    text = open(p).read()
    m = re.search(r"count: '?(\\d+)'?", text)
    text = text.replace(m.group(0), "count: '%d'" % (int(m.group(1)) + 1))
    open(p, "w").write(text)
""")


def test_four_concurrent_writers_lose_no_update(backend: str, tmp_path: Path) -> None:
    """Two processes apply manifests carrying resourceVersion, two run `mcpctl edit` with an
    editor that increments a label: every success is counted, each failure is a reported conflict."""
    apply_documents(parse_text(_server("shared", extra=", labels: {count: '0'}"), "<t>"), Storage.open().store)
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "editor.py").write_text(EDITOR)
    # an edit refused as a conflict is kept for the user in the temp directory: this test's, not the system's
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "EDITOR": f"{sys.executable} {tmp_path / 'editor.py'}", "TMPDIR": str(tmp_path / "tmp")}
    n = 6
    appliers = [subprocess.Popen([sys.executable, str(tmp_path / "writer.py"), t, str(n), str(90 * SLACK)], env=env,
                                 stdout=subprocess.PIPE, text=True) for t in ("a", "b")]

    def edits() -> tuple[int, int]:
        ok = conflicts = 0
        for _ in range(n):
            r = subprocess.run([sys.executable, "-m", "mcpctl", "edit", "server", "shared"], env=env,
                               capture_output=True, text=True, timeout=60 * SLACK)
            if r.returncode == 0:
                ok += 1
            else:
                assert r.returncode == 4 and "changed by someone else" in r.stderr, r.stderr
                conflicts += 1
        return ok, conflicts

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        editors = [pool.submit(edits) for _ in range(2)]
        results = [tuple(int(x) for x in p.communicate(timeout=120 * SLACK)[0].split()) for p in appliers]
        results += [f.result(timeout=300 * SLACK) for f in editors]
    assert all(p.returncode == 0 for p in appliers)
    successes = sum(r[0] for r in results)
    count = int(Storage.open().store.get("Server", "shared")["metadata"]["labels"]["count"])
    assert count == successes, (count, results)             # no success was overwritten
    assert results[0][0] == n and results[1][0] == n         # the appliers retried until done
    print(f"{backend}: {successes} writes, {sum(r[1] for r in results)} conflicts reported")
