"""The store's tables (component `store`): resources as JSON documents, token hashes.

- `resources(kind, name, body, resource_version)`: one row per object; `body` is the object as
  the files backend would write it (without `metadata.resourceVersion`, which is the column).
  Every insert or update takes the next value of `resource_version_seq`, so versions only grow
  (a delete, and a token hash's change, advance it too).
- `token_hashes(name, sha256)`: the SHA-256 of each token's secret (never the secret).
- A trigger sends `NOTIFY mcpctl_store, '<Kind>/<name>'` on every change of either table, so a
  gateway on the database learns of it at once (`mcpctl.resources.pgstore.Watcher`). Beside
  `PgStore`, as each schema lives beside its implementation; `db/` keeps the runner.
"""

from __future__ import annotations

from typing import Final

from mcpctl.db.migrations import Migration, register

CHANNEL: Final = "mcpctl_store"

_V1: Final = """
CREATE SEQUENCE resource_version_seq;

CREATE TABLE resources (
    kind             text        NOT NULL,
    name             text        NOT NULL,
    body             jsonb       NOT NULL,
    resource_version bigint      NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name)
);

CREATE TABLE token_hashes (
    name   text PRIMARY KEY,
    sha256 text NOT NULL
);

CREATE FUNCTION mcpctl_store_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    what text;
BEGIN
    IF TG_TABLE_NAME = 'token_hashes' THEN
        what := 'TokenHash/' || COALESCE(NEW.name, OLD.name);
    ELSE
        what := COALESCE(NEW.kind, OLD.kind) || '/' || COALESCE(NEW.name, OLD.name);
    END IF;
    IF TG_OP = 'DELETE' OR TG_TABLE_NAME = 'token_hashes' THEN
        PERFORM nextval('resource_version_seq');
    END IF;
    PERFORM pg_notify('mcpctl_store', what);
    RETURN NULL;
END $$;

CREATE TRIGGER resources_changed AFTER INSERT OR UPDATE OR DELETE ON resources
    FOR EACH ROW EXECUTE FUNCTION mcpctl_store_changed();
CREATE TRIGGER token_hashes_changed AFTER INSERT OR UPDATE OR DELETE ON token_hashes
    FOR EACH ROW EXECUTE FUNCTION mcpctl_store_changed();
"""

MIGRATIONS: Final = [Migration(1, "resources, token hashes, change notifications", _V1)]
register("store", MIGRATIONS)
