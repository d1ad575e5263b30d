"""`Storage`: what one process keeps, opened once and passed down.

The backend is decided here and nowhere else: `Storage.open(url)` is PostgreSQL when a database URL
is in effect (`url`, the `--database-url` flag, else `mcpctl.db.config.database_url()`: the
environment, then the `database.url` setting), else files and SQLite. It is opened in one function,
`mcpctl.cli._storage.open_storage`, from the CLI's root in its two forms: the typer root callback
(each command line) and `main()` for a plain `mcpctl serve` (the gateway's start, which runs without
typer); the commands get it from there (`cli._common.storage()`) and the gateway's parts get what
they use of it (`gateway.run.serve(project, storage)`). Tests use `Storage.in_memory()` or a Storage
of their own. `tests/test_storage_seam.py` checks that nothing else decides the backend.

Each member is opened on first use (a command that reads no log opens none; psycopg is imported
only when the database is used): `store` (`ResourceStore`), `log` (the invocation log), `cache`
(`CatalogueCache`, each server's last listing) and `writer()`, the gateway's writer of that log.
Nothing here writes `os.environ`: the processes mcpctl starts read no store of the user's (`serve`
runs in the process; the demo's gateway and the bake-off's arms have files of their own:
`Storage.files()`, whatever the database in effect). `db copy` opens its two ends by name
(`Storage.at("files")`, `Storage.at(url)`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpctl.audit.queued import QueuedWriter
    from mcpctl.audit.records import AuditLog
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.resources.store import ResourceStore


class Storage:
    """The store, the invocation log and the catalogue cache of one process (see the module docstring)."""

    def __init__(self, url: str | None = None, *, store: ResourceStore | None = None,
                 log: AuditLog | None = None, log_path: Path | None = None, cache: CatalogueCache | None = None,
                 in_effect: bool = False) -> None:
        self._url = url             # None: files and SQLite
        self._in_effect = in_effect and url is None     # the URL is the environment's or the setting's
        self._store = store
        self._log = log
        self._log_path = log_path   # a SQLite log of its own (tests), instead of paths.invocation_log_path()
        self._cache = cache
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str | None = None) -> Storage:
        """The storage in effect: `url` (the `--database-url` flag) else the environment's or the
        setting's; files and SQLite when there is none. Opens nothing yet."""
        return cls(url, in_effect=url is None)

    @classmethod
    def files(cls) -> Storage:
        """Files and SQLite under the directories in effect now (`paths`, MCPCTL_HOME), whatever
        the database in effect: the demo's home and each bake-off arm's, which keep their own."""
        from mcpctl import paths
        from mcpctl.catalogue.cache import FilesCache
        from mcpctl.resources.store import Store

        return cls(None, store=Store(paths.resources_dir()), log_path=paths.invocation_log_path(),
                   cache=FilesCache(paths.catalogue_cache_dir()))

    @classmethod
    def at(cls, where: str) -> Storage:
        """One end of `mcpctl db copy`: `files` (this machine's, `files()`) or a postgresql:// URL
        (an MCPCtlError for anything else)."""
        from mcpctl.resources.copy import FILES, check_end

        check_end(where)
        return cls.files() if where == FILES else cls(where)

    @classmethod
    def in_memory(cls) -> Storage:
        """A store, a log and a catalogue cache in this process's memory, for in-process tests."""
        from mcpctl.audit.memlog import MemoryLog
        from mcpctl.catalogue.memcache import MemoryCache
        from mcpctl.resources.memstore import MemoryStore

        return cls(None, store=MemoryStore(), log=MemoryLog(), cache=MemoryCache())

    @property
    def url(self) -> str | None:
        """The database's URL, or None: files and SQLite. (Read from the environment or the
        setting on first use, so that a command that stores nothing reads neither.)"""
        if self._in_effect:
            from mcpctl.db.config import database_url

            self._url, self._in_effect = database_url(), False
        return self._url

    @property
    def backend(self) -> str:
        return "postgres" if self.url is not None else "files"

    @property
    def store(self) -> ResourceStore:
        """The resource store, opened on first use (PostgreSQL: its schema checked)."""
        with self._lock:
            if self._store is None:
                self._store = _open_store(self.url)
            return self._store

    @property
    def log(self) -> AuditLog:
        """The invocation log, opened on first use (PostgreSQL: its schema checked)."""
        with self._lock:
            if self._log is None:
                self._log = _open_log(self.url, self._log_path)
            return self._log

    @property
    def cache(self) -> CatalogueCache:
        """The catalogue cache, opened on first use (PostgreSQL: shared through the database, this
        host's files its working copy; the schema checked on first use, best effort)."""
        with self._lock:
            if self._cache is None:
                self._cache = _open_cache(self.url)
            return self._cache

    def writer(self) -> QueuedWriter:
        """The gateway's writer of the log: SQLite's `BackgroundWriter`, or PostgreSQL's
        `SpoolingWriter`. On PostgreSQL a schema that is not current refuses the gateway (run
        `mcpctl db migrate`); a database unreachable at start does not: rows are spooled."""
        if self.url is None:
            from mcpctl.audit.log import InvocationLog
            from mcpctl.audit.writer import BackgroundWriter

            log = self.log
            if not isinstance(log, InvocationLog):
                raise TypeError(f"a files Storage holds a SQLite log, not {type(log).__name__}")
            return BackgroundWriter(log)
        from mcpctl.audit.pglog import PgInvocationLog
        from mcpctl.audit.pgwriter import SpoolingWriter
        from mcpctl.db.pool import DatabaseUnavailable

        try:
            pg = self.log
        except DatabaseUnavailable as e:
            import importlib.util
            import logging

            if importlib.util.find_spec("psycopg") is None:
                raise
            logging.getLogger("mcpctl.gateway").warning("invocation log: %s; rows are spooled until it is reachable", e)
            with self._lock:
                pg = self._log = PgInvocationLog(self.url, check_schema=False)
        if not isinstance(pg, PgInvocationLog):
            raise TypeError(f"a PostgreSQL Storage holds a PostgreSQL log, not {type(pg).__name__}")
        return SpoolingWriter(pg)

    def close(self) -> None:
        """Close the log if it was opened (the store holds nothing to close)."""
        with self._lock:
            log, self._log = self._log, None
        if log is not None:
            log.close()


def _open_store(url: str | None) -> ResourceStore:
    if url is None:
        from mcpctl.resources.store import Store

        return Store()
    from mcpctl.resources.pgstore import PgStore

    return PgStore.open(url)


def _open_cache(url: str | None) -> CatalogueCache:
    from mcpctl.catalogue.cache import FilesCache

    if url is None:
        return FilesCache()
    from mcpctl.catalogue.pgcache import PgCache

    return PgCache(url, FilesCache())


def _open_log(url: str | None, path: Path | None) -> AuditLog:
    """PostgreSQL's log at `url`, else the SQLite file (an MCPCtlError naming what cannot be opened)."""
    if url is not None:
        from mcpctl.audit.pglog import PgInvocationLog

        return PgInvocationLog(url)
    import sqlite3

    from mcpctl import paths
    from mcpctl.audit.log import InvocationLog
    from mcpctl.errors import MCPCtlError

    try:
        return InvocationLog(path)
    except (OSError, sqlite3.Error) as e:
        raise MCPCtlError(f"cannot open the invocation log {path or paths.invocation_log_path()}: {e}",
                          hint="check the file's permissions, or move it aside to start a new log") from None


__all__ = ["Storage"]
