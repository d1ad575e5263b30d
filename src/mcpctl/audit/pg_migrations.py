"""The invocation log's tables in PostgreSQL (component `log` of `mcpctl db migrate`).

The same columns as SQLite's `invocations` (`audit/migrations.py`), `ts` and `duration_ms` as
double precision so a row reads back bit for bit what SQLite would return, plus `uid`: the id the
writer gives each call when it is recorded, unique, so a batch written twice (a commit whose
acknowledgement was lost, then retried from the spool) still leaves one row per call.
"""

from __future__ import annotations

from typing import Final

from mcpctl.db.migrations import Migration, register

_V1: Final = """
CREATE TABLE invocations (
    id              bigserial PRIMARY KEY,
    uid             uuid NOT NULL,
    ts              double precision NOT NULL,
    duration_ms     double precision NOT NULL,
    project         text NOT NULL,
    presented_name  text NOT NULL,
    canonical_id    text,
    outcome         text NOT NULL,
    error_class     text,
    client_name     text,
    client_version  text,
    session_id      text,
    profile         text,
    query           text,
    result_chars    integer,
    result_sections integer,
    credential      text,
    host            text
);
CREATE UNIQUE INDEX idx_invocations_uid ON invocations (uid);
CREATE INDEX idx_invocations_ts ON invocations (ts);
CREATE INDEX idx_invocations_canonical_ts ON invocations (canonical_id, ts);
CREATE INDEX idx_invocations_session_ts ON invocations (session_id, ts);
CREATE INDEX idx_invocations_searches ON invocations (project, ts) WHERE query IS NOT NULL;
-- favourites suggest --window: one project's window, read from the index alone
CREATE INDEX idx_invocations_project_ts ON invocations (project, ts)
    INCLUDE (canonical_id, presented_name, session_id, outcome);
"""

MIGRATIONS: Final = [Migration(1, "invocations (the invocation log), with credential and gateway host", _V1)]
register("log", MIGRATIONS)
