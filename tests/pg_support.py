"""A real PostgreSQL for tests: one temporary cluster per test session, a fresh database per test.

`pg_cluster` (session): `initdb` into a temporary directory (as the current user; as root, as the
`postgres` or `nobody` system user, since PostgreSQL refuses to run as root), started on a unix
socket in that directory only (no TCP port to race for), fsync off, stopped and removed at the
end. Binaries: `MCPCTL_PG_BIN`, else the newest /usr/lib/postgresql/*/bin, else PATH.
When PostgreSQL or psycopg is missing the tests skip here and fail in CI (`skip_unless_ci`).

`pg_url` (function): a new empty database's URL. `pg_db` (function): the same database migrated
and made the one in effect (`MCPCTL_DATABASE_URL`), pools closed after the test.

Use them from a conftest or test module: `from pg_support import pg_cluster, pg_url, pg_db`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_support import SLACK, skip_unless_ci

_counter = itertools.count(1)


def pg_bin() -> Path | None:
    env = os.environ.get("MCPCTL_PG_BIN")
    if env:
        return Path(env)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    exe = shutil.which("pg_ctl")
    return Path(exe).parent if exe else None


def _run_as() -> list[str]:
    """The command prefix that drops root (PostgreSQL will not run as root)."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
    pytest.fail("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


@dataclass
class Cluster:
    root: Path
    socket_dir: Path
    port: int = 5432
    user: str = "mcpctl"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def create_database(self) -> str:
        import psycopg

        name = f"t{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        binary = pg_bin()
        assert binary is not None
        return subprocess.run([*_run_as(), str(binary / "pg_ctl"), "-D", str(self.root / "data"), *args],
                              capture_output=True, text=True, timeout=120 * SLACK, check=check)

    def stop(self, mode: str = "fast") -> None:
        """`fast` (tests that stop the database mid-run: what was committed survives, as in a real
        outage); `immediate` only at the session's end, when nothing is kept."""
        self.pg_ctl("-m", mode, "-w", "-t", "60", "stop", check=False)

    def start(self) -> None:
        opts = (f"-k {self.socket_dir} -p {self.port} -c listen_addresses='' -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        r = self.pg_ctl("-o", opts, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start", check=False)
        if r.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace") if (self.root / "server.log").exists() else ""
            pytest.fail(f"PostgreSQL did not start: {r.stdout}{r.stderr}\n{log[-2000:]}")


def _start_cluster() -> Cluster:
    binary = pg_bin()
    if binary is None or not (binary / "initdb").exists():
        skip_unless_ci("PostgreSQL (initdb, pg_ctl) not found (.ci/run installs it)")
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        skip_unless_ci("psycopg is not installed: pip install -e '.[postgres]' (.ci/run installs it)")
    assert binary is not None
    root = Path(tempfile.mkdtemp(prefix="mcpctl-pg-"))
    root.chmod(0o755)
    prefix = _run_as()
    if prefix:
        owner = pwd.getpwnam(prefix[2])
        os.chown(root, owner.pw_uid, owner.pw_gid)
    cluster = Cluster(root, root)
    r = subprocess.run([*prefix, str(binary / "initdb"), "-D", str(root / "data"), "-U", cluster.user,
                        "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
                       capture_output=True, text=True, timeout=180 * SLACK)
    if r.returncode != 0:
        pytest.fail(f"initdb failed: {r.stdout}{r.stderr}")
    cluster.start()
    return cluster


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    cluster = _start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """A fresh, empty database."""
    yield pg_cluster.create_database()
    from mcpctl.db import pool
    from mcpctl.resources.pgstore import stop_watchers

    stop_watchers()
    pool.close()


@pytest.fixture
def pg_db(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database, migrated, in effect for the test and the processes it starts."""
    from mcpctl.db import migrations

    monkeypatch.setenv("MCPCTL_DATABASE_URL", pg_url)
    migrations.migrate(pg_url)
    yield pg_url
