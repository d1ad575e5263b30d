"""The `CatalogueCache` contract, one suite run against every backend: files (`FilesCache`),
PostgreSQL (`PgCache`, tests/pg_support.py) and in memory (`MemoryCache`), each as the `Storage`
that holds it opens it. Then what only the shared backend shows: a host that never listed a
server starts from another host's listing, and a database that cannot be used leaves the host
its files."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpctl.catalogue.cache import FORMAT_VERSION, CatalogueCache, about_text
from mcpctl.storage import Storage
from pg_support import pg_cluster, pg_db, pg_url

__all__ = ["pg_cluster", "pg_db", "pg_url"]

TOOLS = [{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object"}},
         {"name": "shout", "description": "Écho — loudly.", "inputSchema": {"type": "object"}}]
ABOUT = [{"name": "alpha", "title": "Alpha", "instructions": "Echoes things. Call echo first.\nMore."}]


def _storage(backend: str, request: pytest.FixtureRequest) -> Storage:
    if backend == "memory":
        return Storage.in_memory()
    if backend == "postgres":
        request.getfixturevalue("pg_db")
    storage = Storage.open()        # what the CLI's root opens: the database pg_db put in effect
    assert storage.backend == backend
    return storage


@pytest.fixture(params=["files", "postgres", "memory"])
def cache(request: pytest.FixtureRequest, tmp_home: Path) -> Iterator[CatalogueCache]:
    """The contract's subject: each backend's cache, empty."""
    storage = _storage(str(request.param), request)
    yield storage.cache
    storage.close()


# -- the contract ---------------------------------------------------------------------------------


def test_a_server_never_listed_has_nothing(cache: CatalogueCache) -> None:
    assert cache.read_server_entry("alpha") is None
    assert cache.read_server_tools("alpha") is None
    assert cache.read_server_section("alpha", "prompts") is None
    assert cache.read_server_about("alpha") == ""
    assert cache.read_about(["alpha"]) == {"alpha": ""}
    assert cache.servers() == []


def test_a_listing_is_kept_as_sent_and_an_unchanged_one_changes_nothing(cache: CatalogueCache) -> None:
    assert cache.write_server_tools("alpha", TOOLS) is True
    assert cache.read_server_tools("alpha") == TOOLS
    entry = cache.read_server_entry("alpha")
    assert entry is not None
    assert (entry["version"], entry["server"], entry["tools"]) == (FORMAT_VERSION, "alpha", TOOLS)
    assert isinstance(entry["updatedAt"], str)
    assert cache.write_server_tools("alpha", [dict(t) for t in TOOLS]) is False
    assert cache.write_server_tools("alpha", TOOLS[:1]) is True
    assert cache.read_server_tools("alpha") == TOOLS[:1]


def test_sections_merge_into_the_entry(cache: CatalogueCache) -> None:
    cache.write_server_tools("alpha", TOOLS)
    prompts = [{"name": "greet", "description": "Say hello."}]
    assert cache.write_server_entry("alpha", {"prompts": prompts, "about": ABOUT}) is True
    assert cache.read_server_tools("alpha") == TOOLS                  # the sections not given are kept
    assert cache.read_server_section("alpha", "prompts") == prompts
    assert cache.read_server_section("alpha", "resources") is None    # never listed
    assert cache.read_server_about("alpha") == about_text(ABOUT) == "alpha\nAlpha\nEchoes things."
    assert cache.read_about(["alpha", "beta"]) == {"alpha": about_text(ABOUT), "beta": ""}
    assert cache.write_server_entry("alpha", {"prompts": prompts}) is False


def test_a_deleted_server_is_forgotten_and_the_others_stay(cache: CatalogueCache) -> None:
    cache.write_server_tools("beta", TOOLS)
    cache.write_server_tools("alpha", TOOLS)
    assert cache.servers() == ["alpha", "beta"]
    cache.delete_server("alpha")
    cache.delete_server("never-listed")
    assert cache.read_server_entry("alpha") is None
    assert cache.servers() == ["beta"]
    assert cache.read_server_tools("beta") == TOOLS


def test_what_a_reader_gets_is_its_own(cache: CatalogueCache) -> None:
    cache.write_server_tools("alpha", TOOLS)
    tools = cache.read_server_tools("alpha")
    assert tools is not None
    tools[0]["name"] = "changed"
    tools.append({"name": "extra"})
    assert cache.read_server_tools("alpha") == TOOLS


def test_an_entry_of_another_format_is_not_read(cache: CatalogueCache) -> None:
    cache.put_entry("alpha", {"version": FORMAT_VERSION + 1, "server": "alpha", "tools": TOOLS})
    assert cache.read_server_entry("alpha") is None
    cache.put_entry("alpha", {"version": FORMAT_VERSION, "server": "alpha", "tools": "not a list"})
    assert cache.read_server_tools("alpha") is None


# -- the shared backend ---------------------------------------------------------------------------


def test_a_new_host_starts_from_the_shared_listing(pg_db: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-a"))
    assert Storage.open().cache.write_server_tools("alpha", TOOLS)          # host A listed it
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-b"))              # host B: nothing on its disk
    cache = Storage.open().cache
    assert cache.read_server_tools("alpha") == TOOLS
    assert any((tmp_path / "host-b").rglob("alpha.json"))                     # kept as host B's working copy
    assert cache.servers() == ["alpha"]
    cache.delete_server("alpha")                                              # a deleted server goes for everyone
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "host-c"))
    assert Storage.open().cache.read_server_entry("alpha") is None


def test_a_database_not_migrated_leaves_the_host_its_files(pg_url: str, tmp_home: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    cache = Storage(pg_url).cache          # a database nobody migrated: the cache's table is missing
    with caplog.at_level(logging.WARNING, logger="mcpctl.db"):
        assert cache.write_server_tools("alpha", TOOLS) is True
        assert cache.read_server_tools("alpha") == TOOLS                     # from this host's file
        assert cache.read_server_tools("beta") is None
        assert cache.servers() == ["alpha"]
    said = [r.getMessage() for r in caplog.records if "shared catalogue cache" in r.getMessage()]
    assert len(said) == 1 and "not used" in said[0], said                   # said once, not at every use


def test_without_a_database_nothing_is_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "one"))
    assert Storage.open().cache.write_server_tools("alpha", TOOLS)
    monkeypatch.setenv("MCPCTL_HOME", str(tmp_path / "other"))
    assert Storage.open().cache.read_server_entry("alpha") is None
