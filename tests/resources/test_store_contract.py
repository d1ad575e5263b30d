"""The `ResourceStore` contract, one suite run against every backend: files (`Store`), PostgreSQL
(`PgStore`, tests/pg_support.py) and in memory (`MemoryStore`). Then what only a backend shared by
processes can show (files, PostgreSQL): concurrent writer processes lose no update, and what is
one backend's own (PostgreSQL's all-or-nothing apply, the files backend's atomic writes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.errors import Conflict, NotFound
from mcpctl.resources import tokens
from mcpctl.resources.apply import apply_documents, create_object
from mcpctl.resources.store import ResourceStore, atomic_write
from mcpctl.resources.yamlio import Document, parse_text, to_yaml
from mcpctl.storage import Storage
from pg_support import pg_cluster, pg_db, pg_url

__all__ = ["pg_cluster", "pg_db", "pg_url"]

SERVER = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: {name}{extra}}}\nspec: {{command: {cmd}}}\n"


def _server(name: str, cmd: str = "a", extra: str = "") -> str:
    return SERVER.format(name=name, cmd=cmd, extra=extra)


def _storage(backend: str, request: pytest.FixtureRequest) -> Storage:
    if backend == "memory":
        return Storage.in_memory()
    if backend == "postgres":
        request.getfixturevalue("pg_db")
    storage = Storage.open()        # what the CLI's root opens: the database pg_db put in effect
    assert storage.backend == backend
    return storage


@pytest.fixture(params=["files", "postgres", "memory"])
def store(request: pytest.FixtureRequest, tmp_home: Path) -> Iterator[ResourceStore]:
    """The contract's subject: each backend's store, empty."""
    storage = _storage(str(request.param), request)
    yield storage.store
    storage.close()


@pytest.fixture(params=["files", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_home: Path) -> str:
    """A backend several processes share (the store in effect for the processes a test starts)."""
    _storage(str(request.param), request)
    return str(request.param)


# -- the contract ---------------------------------------------------------------------------------


def test_put_find_get_list_names_delete(store: ResourceStore) -> None:
    assert store.names("Server") == [] and store.list("Server") == [] and store.find("Server", "a") is None
    apply_documents(parse_text(_server("b") + "---\n" + _server("a", "run"), "<t>"), store)
    assert store.names("Server") == ["a", "b"]
    assert [o["metadata"]["name"] for o in store.list("Server")] == ["a", "b"]
    got = store.get("Server", "a")
    assert got["spec"]["command"] == "run" and got == store.find("Server", "a")
    got["spec"]["command"] = "changed by the caller"            # a copy: the store is not changed
    assert store.get("Server", "a")["spec"]["command"] == "run"
    store.delete("Server", "a")
    assert store.names("Server") == ["b"] and store.find("Server", "a") is None


def test_a_missing_object_is_not_found_with_the_closest_name(store: ResourceStore) -> None:
    apply_documents(parse_text(_server("alpha"), "<t>"), store)
    with pytest.raises(NotFound, match="server 'alpah' not found") as e:
        store.get("Server", "alpah")
    assert "alpha" in (e.value.hint or "")
    with pytest.raises(NotFound):
        store.delete("Server", "nothing")


def test_resource_version_on_every_object_and_it_grows(store: ResourceStore) -> None:
    apply_documents(parse_text(_server("a") + "---\n" + _server("b"), "<t>"), store)
    rv_a = int(store.get("Server", "a")["metadata"]["resourceVersion"])
    assert all(o["metadata"].get("resourceVersion") for o in store.list("Server"))
    apply_documents(parse_text(_server("a", "changed"), "<t>"), store)
    assert int(store.get("Server", "a")["metadata"]["resourceVersion"]) > rv_a


def test_apply_of_a_stale_resource_version_conflicts(store: ResourceStore) -> None:
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


def test_apply_carrying_a_version_of_a_deleted_object_conflicts(store: ResourceStore) -> None:
    apply_documents(parse_text(_server("a"), "<t>"), store)
    read = store.get("Server", "a")
    store.delete("Server", "a")
    with pytest.raises(Conflict, match="deleted"):
        apply_documents(parse_text(to_yaml(read), "<t>"), store)


def test_the_stamp_changes_with_the_object_and_is_none_without_it(store: ResourceStore) -> None:
    assert store.stamp("Project", "p") is None or store.find("Project", "p") is None
    apply_documents(parse_text("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec: {servers: []}\n",
                               "<t>"), store)
    before = store.stamp("Project", "p")
    assert before is not None
    with store.locked():                              # re-entrant: put takes it again
        res = store.get("Project", "p")
        res["spec"]["description"] = "changed"
        store.put(res)
    if store.stamp("Project", "p") == before:        # a change heard, not polled (PostgreSQL's LISTEN)
        from mcpctl.resources.pgstore import PgStore, watcher

        assert isinstance(store, PgStore)
        watcher(store.url).wait_changed(before, 5.0 * SLACK)        # type: ignore[arg-type]
    assert store.stamp("Project", "p") != before


def test_token_hashes(store: ResourceStore) -> None:
    apply_documents(parse_text("apiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec: {servers: []}\n",
                               "<t>"), store)
    secret = tokens.new_secret()
    doc = Document("<t>", 1, {"apiVersion": "mcpctl/v1", "kind": "Token", "metadata": {"name": "ci"},
                              "spec": {"project": "p"}})
    with store.locked():
        create_object(doc, store)
        tokens.write_hash("ci", secret, store)
    assert store.token_hashes() == {"ci": tokens.digest(secret)} and tokens.has_hash("ci", store)
    assert tokens.TokenIndex("p", store).lookup(secret.encode()) is not None
    with store.locked():
        store.delete("Token", "ci")
        tokens.delete_hash("ci", store)
    assert store.token_hashes() == {} and store.token_hash("ci") is None


def test_status_is_kept_apart_from_the_spec(store: ResourceStore) -> None:
    apply_documents(parse_text(_server("s"), "<t>"), store)
    before = store.get("Server", "s")
    store.set_status("Server", "s", {"state": "up", "tools": 3})
    store.set_status("Server", "s", {"lastError": None})
    assert store.get("Server", "s") == before
    assert store.status("Server", "s") == {"state": "up", "tools": 3, "lastError": None}
    store.delete("Server", "s")
    assert store.status("Server", "s") == {}


# -- several processes on one backend -------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from mcpctl.resources.apply import apply_documents
    from mcpctl.resources.yamlio import parse_text
    from mcpctl.storage import Storage
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


def test_two_processes_applying_50_objects_each_lose_nothing(tmp_home: Path, tmp_path: Path, shared: str) -> None:
    store = Storage.open().store
    apply_documents(parse_text(_server("shared"), "<t>"), store)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), tag, "50"]) for tag in ("a", "b")]
    for p in procs:
        assert p.wait(timeout=120 * SLACK) == 0
    names = store.names("Server")
    assert {f"a-{i}" for i in range(50)} | {f"b-{i}" for i in range(50)} | {"shared"} == set(names)
    assert store.get("Server", "shared")["metadata"]["labels"]["count"] == "100"
    assert list((tmp_home / "config" / "resources").rglob("*.tmp")) == []


APPLIER = textwrap.dedent("""
    import sys, time
    from mcpctl.errors import Conflict
    from mcpctl.resources.apply import apply_documents
    from mcpctl.resources.yamlio import parse_text, to_yaml
    from mcpctl.storage import Storage
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


def test_appliers_and_editors_at_once_lose_no_update(shared: str, tmp_path: Path) -> None:
    """Two processes apply manifests carrying resourceVersion, two run `mcpctl edit` with an
    editor that increments a label: every success is counted, each failure is a reported conflict."""
    store = Storage.open().store
    apply_documents(parse_text(_server("shared", extra=", labels: {count: '0'}"), "<t>"), store)
    (tmp_path / "writer.py").write_text(APPLIER)
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
    count = int(store.get("Server", "shared")["metadata"]["labels"]["count"])
    assert count == successes, (count, results)             # no success was overwritten
    assert results[0][0] == n and results[1][0] == n         # the appliers retried until done


def test_two_cli_apply_processes_at_once(tmp_path: Path, shared: str) -> None:
    files = []
    for tag in ("x", "y"):
        f = tmp_path / f"{tag}.yaml"
        f.write_text("".join(f"---\napiVersion: mcpctl/v1\nkind: Server\nmetadata: {{name: {tag}-{i}}}\n"
                             f"spec: {{command: run, args: ['{i}']}}\n" for i in range(50)))
        files.append(f)
    procs = [subprocess.Popen([sys.executable, "-m", "mcpctl", "apply", "-f", str(f)],
                              stdout=subprocess.PIPE, text=True) for f in files]
    outs = [p.communicate(timeout=120 * SLACK)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(line.endswith(" created") for o in outs for line in o.splitlines()) == 100
    assert len(Storage.open().store.names("Server")) == 100


# -- one backend's own ----------------------------------------------------------------------------


def test_postgres_apply_is_all_or_nothing_in_one_transaction(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpctl.resources.pgstore import PgStore

    store = PgStore.open(pg_db)
    real_put = PgStore.put
    calls = []

    def failing_put(self: PgStore, res: dict[str, object]) -> None:
        calls.append(res)
        if len(calls) == 3:
            raise RuntimeError("the disk fell off")
        real_put(self, res)       # type: ignore[arg-type]

    monkeypatch.setattr(PgStore, "put", failing_put)
    docs = "---\n".join(_server(f"s{i}") for i in range(5))
    with pytest.raises(RuntimeError):
        apply_documents(parse_text(docs, "<t>"), store)
    monkeypatch.undo()
    assert len(calls) == 3
    assert PgStore.open(pg_db).names("Server") == []             # the two written before the failure rolled back


def test_postgres_keeps_token_hashes_off_this_hosts_disk(pg_db: str, tmp_home: Path) -> None:
    store = Storage.open().store
    tokens.write_hash("ci", tokens.new_secret(), store)
    assert store.token_hash("ci") is not None
    assert not (tmp_home / "state" / "credentials").exists()


def test_atomic_write_replaces_whole_file_and_sets_mode(tmp_path: Path) -> None:
    p = tmp_path / "d" / "f.txt"
    atomic_write(p, "one")
    atomic_write(p, "two", mode=0o600)
    assert p.read_text() == "two"
    assert (p.stat().st_mode & 0o777) == 0o600
    assert [x.name for x in p.parent.iterdir()] == ["f.txt"]
