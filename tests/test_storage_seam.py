"""The storage seam (issue 34), read from src/mcpctl's text and types:

- the backend is decided where a `Storage` is opened and nowhere else: `Store()` (the files store
  with no root of its own), `database_url()` and the logs' constructors are called only in
  `storage.py`, and `Storage.open` only by the CLI's root (`cli/_storage.py`);
- no flag writes `os.environ` (`--database-url` is given to the Storage);
- a files-only attribute (`path_for`, `root`) on a `ResourceStore` is a mypy error;
- the in-memory Storage is a whole one: store and log usable without touching the disk.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpctl"

# What opens a backend: the store in effect, the URL in effect, a log of the backend in effect.
OPENERS = {
    "Store()": re.compile(r"(?<![\w.])Store\(\)"),
    "database_url()": re.compile(r"(?<![\w.])(?<!def )database_url\(\)"),
    "open_log()": re.compile(r"(?<![\w.])open_log\("),
    "Storage.open(": re.compile(r"\bStorage\.open\("),
}
ALLOWED = {
    "Store()": {"storage.py"},
    "database_url()": {"storage.py",
                       # not yet behind the seam: the catalogue cache's write-through mirror
                       # (a Protocol of its own is the rest of issue 34)
                       "catalogue/cache.py", "db/catalogue.py"},
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
    assert storage.store.names("Server") == ["s"]
    assert storage.log.count("p") == 1
    storage.close()
    assert not (tmp_home / "config" / "resources").exists()
    assert not any(tmp_home.rglob("*.db"))
