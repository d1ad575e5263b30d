"""The cluster's tables in PostgreSQL (component `cluster` of `mcpctl db migrate`).

- `replicas`: each `mcpctl serve --transport http` replica on the database: its id (carried by the
  session ids and parked-call states it mints), the address other replicas reach it at, and its
  heartbeat; a row whose heartbeat is older than `registry.STALE_S` is ignored and deleted;
- `cluster_secret`: one row, the key that signs requests forwarded between replicas (written by
  the first replica that finds none; never printed or logged);
- `result_sections`: results cut into sections (`read_result`), readable from any replica until
  they expire;
- `gate_begun`: the sessions past the session gate (`begin_session`), per project;
- `limit_spend` (version 2): the calls each replica admitted per profile and credential, counted
  since `run` began, so that the replicas share per-person limits (`limits.SharedLimits`).
"""

from __future__ import annotations

from typing import Final

from mcpctl.db.migrations import Migration, register

_V1: Final = """
CREATE TABLE replicas (
    id           text PRIMARY KEY,
    url          text NOT NULL,
    host         text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE cluster_secret (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret text NOT NULL
);
CREATE TABLE result_sections (
    id          text PRIMARY KEY,
    session_id  text NOT NULL,
    credential  text,
    text        text NOT NULL,
    kind        text NOT NULL,
    bounds      text NOT NULL,
    size        bigint NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX idx_result_sections_expires ON result_sections (expires_at);
CREATE TABLE gate_begun (
    project     text NOT NULL,
    session_id  text NOT NULL,
    begun_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, session_id)
);
CREATE INDEX idx_gate_begun_at ON gate_begun (begun_at);
"""

_V2: Final = """
CREATE TABLE limit_spend (
    project   text NOT NULL,
    replica   text NOT NULL,
    profile   text NOT NULL,
    identity  text NOT NULL,
    run       bigint NOT NULL,
    taken     bigint NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, replica, profile, identity)
);
CREATE INDEX idx_limit_spend_at ON limit_spend (project, at);
"""

MIGRATIONS: Final = [Migration(1, "replicas, the hop secret, result sections and the gate's sessions", _V1),
                     Migration(2, "the calls each replica admitted per person, to share call limits", _V2)]
register("cluster", MIGRATIONS)
