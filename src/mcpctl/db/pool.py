"""The process's connection pool, created on first use.

`connection()` lends a connection (autocommit off: use `with conn.transaction():` or rely on the
pool committing when the block ends without error). `listen_connection()` opens a dedicated
autocommit connection for LISTEN (not from the pool: it is held for the process's life).
Errors reaching the database become one `DatabaseUnavailable` naming the URL (password hidden).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mcpctl.db.config import ENV_URL, redacted
from mcpctl.errors import MCPCtlError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_lock = threading.Lock()
_pools: dict[str, ConnectionPool[Any]] = {}
CONNECT_TIMEOUT = 10.0


class DatabaseUnavailable(MCPCtlError):
    """The database cannot be reached (or psycopg is not installed)."""


def _require_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise DatabaseUnavailable(
            f"{ENV_URL} (or --database-url / database.url) is set but psycopg is not installed",
            hint="install the extra: pip install 'mcpctl[postgres]'") from None


def require_url(url: str | None) -> str:
    """`url` (the Storage's: `mcpctl.storage.Storage.url`), or the error that no database is configured."""
    if url is None:
        raise MCPCtlError("no database is configured",
                          hint=f"set {ENV_URL}=postgresql://..., pass --database-url, or set database.url "
                               "in settings.yaml")
    return url


def get_pool(url: str) -> ConnectionPool[Any]:
    """The pool for `url`, opened on first use."""
    with _lock:
        pool = _pools.get(url)
        if pool is not None:
            return pool
        _require_psycopg()
        import psycopg
        from psycopg_pool import ConnectionPool

        try:            # once, directly: a refused or unknown database fails now, not after the pool's retries
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT)).close()
        except psycopg.Error as e:
            raise DatabaseUnavailable(f"cannot connect to the database {redacted(url)}: {first_line(e)}",
                                      hint="is PostgreSQL running, and the URL right?") from None

        pool = ConnectionPool(url, min_size=1, max_size=8, open=False, name="mcpctl",
                              check=ConnectionPool.check_connection,     # a server restart: no stale one
                              kwargs={"connect_timeout": int(CONNECT_TIMEOUT)}, timeout=CONNECT_TIMEOUT)
        try:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as e:
            with contextlib.suppress(Exception):
                pool.close(timeout=0)
            raise DatabaseUnavailable(f"cannot connect to the database {redacted(url)}: {e}",
                                      hint="is PostgreSQL running and the URL right?") from None
        _pools[url] = pool
        return pool


@contextlib.contextmanager
def connection(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection; the transaction commits when the block ends normally."""
    import psycopg

    pool = get_pool(url)
    try:
        with pool.connection() as conn:
            yield conn
    except (psycopg.OperationalError, _pool_timeout()) as e:
        raise DatabaseUnavailable(f"database {redacted(url)}: {e}",
                                  hint="is PostgreSQL running and reachable?") from None


def ping(url: str, timeout: float = 2.0) -> bool:
    """Whether the database at `url` answers `SELECT 1` (a pooled connection, waited for at most
    `timeout` seconds once the pool is open; opening it may take up to CONNECT_TIMEOUT)."""
    try:
        opened = get_pool(url)
    except DatabaseUnavailable:
        return False
    import psycopg

    try:
        with opened.connection(timeout=timeout) as conn:
            conn.execute("SELECT 1")
    except (psycopg.Error, _pool_timeout()):
        return False
    return True


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _pool_timeout() -> type[Exception]:
    from psycopg_pool import PoolTimeout

    return PoolTimeout


def listen_connection(url: str) -> psycopg.Connection[Any]:
    """A new autocommit connection of its own (for LISTEN), not from the pool."""
    _require_psycopg()
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT))
    except psycopg.OperationalError as e:
        raise DatabaseUnavailable(f"cannot connect to the database {redacted(url)}: {e}") from None


def close() -> None:
    """Close every pool this process opened (tests; process exit closes them anyway)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for p in pools:
        with contextlib.suppress(Exception):
            p.close(timeout=2)
