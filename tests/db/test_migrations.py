"""The database foundation: URL precedence, `db migrate`, `db status`, behind/ahead schemas."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.db import config, migrations, pool

MCPCTL = [sys.executable, "-m", "mcpctl"]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPCTL, *args], capture_output=True, text=True, timeout=120 * SLACK,
                          env={**os.environ, **(env or {})})


def test_url_precedence(tmp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.ENV_URL, raising=False)
    assert config.database_url() is None
    (tmp_home / "config").mkdir(parents=True)
    config.settings_path().write_text("database:\n  url: postgresql://setting@/a\n")
    assert config.database_url() == "postgresql://setting@/a"
    monkeypatch.setenv(config.ENV_URL, "postgresql://env@/b")
    assert config.database_url() == "postgresql://env@/b"
    assert config.take_flag(["--database-url", "postgresql://flag@/c", "get", "projects"]) == (
        ["get", "projects"], "postgresql://flag@/c")
    assert os.environ[config.ENV_URL] == "postgresql://env@/b"          # the flag writes no environment
    assert config.take_flag(["get", "x", "--database-url", "y"]) == (["get", "x", "--database-url", "y"], None)


def test_bad_setting_is_named(tmp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.ENV_URL, raising=False)
    (tmp_home / "config").mkdir(parents=True)
    config.settings_path().write_text("database:\n  url: mysql://x\n")
    with pytest.raises(Exception, match=r"settings.yaml: database.url must be a postgresql:// URL"):
        config.database_url()


def test_migrate_then_require(pg_url: str) -> None:
    with pytest.raises(migrations.SchemaBehind, match="store schema is not created yet") as e:
        migrations.require("store", pg_url)
    assert e.value.hint == "run: mcpctl db migrate"
    done = migrations.migrate(pg_url)
    assert ("store", 1) in [(c, m.version) for c, m in done]
    assert migrations.migrate(pg_url) == []                    # idempotent
    migrations.require("store", pg_url)
    assert {s.component: s.state for s in migrations.status(pg_url)}["store"] == "current"


def test_newer_schema_refused(pg_url: str) -> None:
    migrations.migrate(pg_url)
    with pool.connection(pg_url) as conn:
        conn.execute("INSERT INTO schema_migrations (component, version, description) VALUES ('store', 99, 'future')")
    with pytest.raises(migrations.SchemaAhead, match="newer than this mcpctl"):
        migrations.require("store", pg_url)
    with pytest.raises(migrations.SchemaAhead):
        migrations.migrate(pg_url)


def test_another_component_registers_its_own(pg_url: str) -> None:
    migrations.register("testlog", [migrations.Migration(1, "a table", "CREATE TABLE testlog_rows (id int)"),
                                    migrations.Migration(2, "a column", "ALTER TABLE testlog_rows ADD c text")])
    try:
        applied = [(c, m.version) for c, m in migrations.migrate(pg_url)]
        assert ("testlog", 1) in applied and ("testlog", 2) in applied
        migrations.require("testlog", pg_url)
    finally:
        migrations._registry.pop("testlog", None)


def test_cli_status_and_migrate(pg_url: str) -> None:
    r = _cli("--database-url", pg_url, "db", "status")
    assert r.returncode == 1, r.stderr
    assert "store" in r.stdout and "behind" in r.stdout and "mcpctl db migrate" in r.stderr
    r = _cli("db", "migrate", env={config.ENV_URL: pg_url})
    assert r.returncode == 0, r.stderr
    assert "applied store 1" in r.stderr
    r = _cli("db", "status", "-o", "json", env={config.ENV_URL: pg_url})
    assert r.returncode == 0, r.stderr
    assert '"state": "current"' in r.stdout


def test_cli_without_database_says_how(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.ENV_URL, raising=False)
    r = _cli("db", "status")
    assert r.returncode == 1
    assert "no database is configured" in r.stderr and "MCPCTL_DATABASE_URL" in r.stderr


def test_unreachable_database_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    r = _cli("db", "status", env={config.ENV_URL: f"postgresql://u:secret@/x?host={tmp_path}&port=1"})
    assert r.returncode == 1
    assert "cannot connect to the database" in r.stderr and "secret" not in r.stderr
