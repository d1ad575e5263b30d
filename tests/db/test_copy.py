"""`mcpctl db copy`: a single-machine store into the database and back, with counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.storage import Storage

MANIFEST = """apiVersion: mcpctl/v1
kind: Server
metadata: {name: alpha}
spec: {command: run-alpha}
---
apiVersion: mcpctl/v1
kind: Server
metadata: {name: beta}
spec: {command: run-beta}
---
apiVersion: mcpctl/v1
kind: Project
metadata: {name: p}
spec: {servers: [alpha, beta]}
"""


def cli(*args: str, home: Path, url: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCPCTL_DATABASE_URL"}
    env["MCPCTL_HOME"] = str(home)
    if url:
        env["MCPCTL_DATABASE_URL"] = url
    return subprocess.run([sys.executable, "-m", "mcpctl", *args], capture_output=True, text=True, timeout=60 * SLACK,
                          env=env, input=stdin)


def test_files_to_database_and_back(pg_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    laptop, other = tmp_path / "laptop", tmp_path / "other"
    assert cli("apply", "-f", "-", home=laptop, stdin=MANIFEST).returncode == 0
    r = cli("create", "token", "ci", "--project", "p", home=laptop)
    assert r.returncode == 0, r.stderr
    secret = r.stdout.strip()

    r = cli("db", "copy", "--from", "files", "--to", pg_db, "--dry-run", home=laptop)
    assert r.returncode == 0 and "would copy" in r.stdout, r.stderr
    assert Storage.open().store.names("Server") == []
    r = cli("db", "copy", "--from", "files", "--to", pg_db, home=laptop)
    assert r.returncode == 0, r.stderr
    assert "2 servers, 1 project, 1 token and 1 token hash" in r.stdout
    assert Storage.open().store.names("Server") == ["alpha", "beta"]
    from mcpctl.resources.tokens import TokenIndex

    assert TokenIndex("p", Storage.open().store).lookup(secret.encode()) is not None        # the secret still works
    r = cli("db", "copy", "--from", "files", "--to", pg_db, home=laptop)
    assert ": copied nothing and 0 token hashes; unchanged: 2 servers, 1 project, 1 token" in r.stdout

    # a different object of the same name: a conflict, nothing copied, unless --overwrite
    assert cli("apply", "-f", "-", home=laptop, stdin=MANIFEST.replace("run-alpha", "run-alpha2")).returncode == 0
    r = cli("db", "copy", "--from", "files", "--to", pg_db, home=laptop)
    assert r.returncode == 4 and "server/alpha" in r.stderr and "--overwrite" in r.stderr
    assert Storage.open().store.get("Server", "alpha")["spec"]["command"] == "run-alpha"
    r = cli("db", "copy", "--from", "files", "--to", pg_db, "--overwrite", home=laptop)
    assert r.returncode == 0 and "copied 1 server" in r.stdout
    assert Storage.open().store.get("Server", "alpha")["spec"]["command"] == "run-alpha2"

    # and back, onto another machine's empty files store
    r = cli("db", "copy", "--from", pg_db, "--to", "files", home=other)
    assert r.returncode == 0, r.stderr
    assert "2 servers, 1 project, 1 token and 1 token hash" in r.stdout
    assert sorted(p.name for p in (other / "config" / "resources" / "servers").iterdir()) == ["alpha.yaml", "beta.yaml"]
    monkeypatch.delenv("MCPCTL_DATABASE_URL")
    monkeypatch.setenv("MCPCTL_HOME", str(other))
    assert TokenIndex("p", Storage.open().store).lookup(secret.encode()) is not None


def test_copy_names_what_it_cannot_do(tmp_path: Path) -> None:
    r = cli("db", "copy", "--from", "sqlite", "--to", "files", home=tmp_path)
    assert r.returncode == 1 and "invocation log" in r.stderr
    r = cli("db", "copy", "--from", "mysql://x", "--to", "files", home=tmp_path)
    assert r.returncode == 1 and "expected 'files' or a postgresql:// URL" in r.stderr
