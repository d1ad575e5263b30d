"""`mcpctl delete` reports "deleted" only once its transaction has committed.

The database refuses the commit itself: a deferred constraint trigger (checked at COMMIT, after
every statement of the delete succeeded) raises on any row deleted from `resources`. The real CLI
then prints nothing on stdout, says on stderr that nothing was written, exits non-zero, and the
objects are all still there; with the trigger gone the same command deletes and says so.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from gwkit import MCPCTL, SRC_ENV

from ci_support import SLACK
from mcpctl.storage import Storage

REFUSE_AT_COMMIT = """
CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'refused at commit (test)';
END $$;
CREATE CONSTRAINT TRIGGER refuse_delete AFTER DELETE ON resources
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();
"""

MANIFEST = """apiVersion: mcpctl/v1
kind: Server
metadata: {name: alpha}
spec: {transport: stdio, command: "true"}
---
apiVersion: mcpctl/v1
kind: Project
metadata: {name: web}
spec: {servers: [alpha]}
"""


def mcpctl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPCTL, *args], capture_output=True, text=True, timeout=60 * SLACK, input=stdin,
                          env={**os.environ, **SRC_ENV, "COLUMNS": "200"})


def sql(url: str, text: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(text)


def names(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT kind || '/' || name FROM resources").fetchall()
        rows += conn.execute("SELECT 'TokenHash/' || name FROM token_hashes").fetchall()
    return {str(r[0]) for r in rows}


@pytest.fixture
def applied(pg_db: str) -> str:
    r = mcpctl("apply", "-f", "-", stdin=MANIFEST)
    assert r.returncode == 0, r.stderr
    r = mcpctl("create", "token", "ci", "--project", "web")
    assert r.returncode == 0, r.stderr
    assert names(pg_db) == {"Server/alpha", "Project/web", "Token/ci", "TokenHash/ci"}
    sql(pg_db, REFUSE_AT_COMMIT)
    return pg_db


@pytest.mark.parametrize("argv", [
    ["delete", "server", "alpha", "--force"],
    ["delete", "project", "web"],
    ["delete", "token", "ci"],
    ["delete", "-f", "-"],
])
def test_a_delete_refused_at_commit_reports_no_success(applied: str, argv: list[str]) -> None:
    r = mcpctl(*argv, stdin=MANIFEST)
    assert r.returncode == 1
    assert r.stdout == ""                                    # no "deleted" for what was not
    assert "the database refused the change: refused at commit (test)" in r.stderr, r.stderr
    assert "nothing was written" in r.stderr and "Traceback" not in r.stderr
    assert names(applied) == {"Server/alpha", "Project/web", "Token/ci", "TokenHash/ci"}


def test_the_same_deletes_commit_and_report_without_the_trigger(applied: str) -> None:
    sql(applied, "DROP TRIGGER refuse_delete ON resources")
    r = mcpctl("delete", "token", "ci")
    assert (r.returncode, r.stdout) == (0, "token/ci deleted\n"), r.stderr
    r = mcpctl("delete", "-f", "-", stdin=MANIFEST)
    assert (r.returncode, r.stdout) == (0, "project/web deleted\nserver/alpha deleted\n"), r.stderr
    assert names(applied) == set()
    assert Storage.open().store.find("Server", "alpha") is None
