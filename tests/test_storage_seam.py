"""The storage seam (issue 34), read from src/mcpctl's text and types:

- the backend is decided where a `Storage` is opened and nowhere else: the files store (`Store(…)`,
  with a root of its own or not), the catalogue caches (`FilesCache(…)`, `PgCache(…)`),
  `database_url()` and `open_log()` are called only in `storage.py`, and `Storage.open` only by the
  CLI's root (`cli/_storage.py`); what keeps files of its own whatever the user's backend (the
  demo, the bake-off's arms, `db copy --from files`) asks for `Storage.files()`;
- no flag writes `os.environ` (`--database-url` is given to the Storage);
- a files-only attribute (`path_for`, `root`) on a `ResourceStore` is a mypy error;
- the catalogue cache's backends (files, PostgreSQL, memory) are none of them another's subclass;
- the in-memory Storage is a whole one: store, log and cache usable without touching the disk.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpctl"

# What opens a backend: a files store, a catalogue cache, the URL in effect, a log of the backend in effect.
OPENERS = {
    "Store()": re.compile(r"(?<![\w.])(?<!class )Store\("),
    "FilesCache()": re.compile(r"(?<![\w.])(?<!class )FilesCache\("),
    "PgCache()": re.compile(r"(?<![\w.])(?<!class )PgCache\("),
    "database_url()": re.compile(r"(?<![\w.])(?<!def )database_url\(\)"),
    "open_log()": re.compile(r"(?<![\w.])open_log\("),
    "Storage.open(": re.compile(r"\bStorage\.open\("),
}
ALLOWED = {
    "Store()": {"storage.py"},
    "FilesCache()": {"storage.py"},
    "PgCache()": {"storage.py"},
    "database_url()": {"storage.py"},
    "open_log()": set(),
    "Storage.open(": {"storage.py", "cli/_storage.py"},
}


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Lines of code (not docstrings or comments) with their numbers."""
    out, in_doc = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        quotes = stripped.count('"""')
        if in_doc:
            in_doc = quotes % 2 == 0
            continue
        if stripped.startswith('"""'):
            in_doc = quotes == 1
            continue
        out.append((n, line.split("#", 1)[0]))
    return out


def test_the_backend_is_decided_where_storage_is_opened_only() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        for n, code in _code_lines(path):
            for what, pattern in OPENERS.items():
                if pattern.search(code) and rel not in ALLOWED[what]:
                    found.setdefault(what, []).append(f"{rel}:{n}")
    assert found == {}, f"the backend decided outside mcpctl.storage: {found}"


def test_no_flag_writes_the_environment() -> None:
    offenders = [f"{p.relative_to(SRC)}:{n}" for p in sorted(SRC.rglob("*.py")) for n, code in _code_lines(p)
                 if re.search(r"os\.environ\[[^\]]*(URL|DATABASE)[^\]]*\]\s*=", code)]
    assert offenders == []


MISUSE = '''
from mcpctl.resources.store import ResourceStore
from mcpctl.storage import Storage


def project_file(store: ResourceStore) -> object:
    return store.path_for("Project", "p")


def root_of(storage: Storage) -> object:
    return storage.store.root
'''


def test_a_files_only_attribute_on_the_store_is_a_type_error(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    probe = tmp_path / "probe.py"
    probe.write_text(MISUSE)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
                        "--cache-dir", str(tmp_path / ".mypy"), str(probe)],
                       capture_output=True, text=True, cwd=SRC.parents[1], timeout=600)
    assert '"ResourceStore" has no attribute "path_for"' in r.stdout, r.stdout + r.stderr
    assert '"ResourceStore" has no attribute "root"' in r.stdout, r.stdout + r.stderr


def test_an_in_memory_storage_keeps_a_store_and_a_log(tmp_home: Path) -> None:
    from mcpctl.audit.records import CallRecord
    from mcpctl.storage import Storage

    storage = Storage.in_memory()
    storage.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "s"},
                       "spec": {"command": "x"}})
    storage.log.record(CallRecord(1.0, 2.0, "p", "s__t", "s/t", "ok"))
    storage.cache.put_entry("s", {"version": 1, "server": "s", "tools": [{"name": "t"}]})
    assert storage.store.names("Server") == ["s"]
    assert storage.log.count("p") == 1
    assert storage.cache.read_server_tools("s") == [{"name": "t"}]
    storage.close()
    assert not (tmp_home / "config" / "resources").exists()
    assert not any(tmp_home.rglob("*.json"))
    assert not any(tmp_home.rglob("*.db"))


def test_no_backend_of_the_catalogue_cache_is_a_subclass_of_another() -> None:
    from mcpctl.catalogue.cache import CatalogueCache, FilesCache
    from mcpctl.catalogue.memcache import MemoryCache
    from mcpctl.catalogue.pgcache import PgCache

    backends = [FilesCache, PgCache, MemoryCache]
    assert all(b.__mro__[1:] == (CatalogueCache, *CatalogueCache.__mro__[1:]) for b in backends), \
        [b.__mro__ for b in backends]


def test_files_of_their_own_whatever_the_database_in_effect(tmp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.errors import MCPCtlError
    from mcpctl.resources.store import Store
    from mcpctl.storage import Storage

    monkeypatch.setenv("MCPCTL_DATABASE_URL", "postgresql://nobody@/never?host=/nonexistent")
    assert Storage.open().backend == "postgres"
    own = Storage.files()
    assert own.backend == "files"
    assert isinstance(own.store, Store) and own.store.root == tmp_home / "config" / "resources"
    assert isinstance(own.cache, FilesCache) and own.cache.directory.is_relative_to(tmp_home)
    assert Storage.at("files").backend == "files"
    assert Storage.at("postgresql://u@h/db").backend == "postgres"      # opens nothing yet
    with pytest.raises(MCPCtlError, match="invocation log"):
        Storage.at("sqlite")
