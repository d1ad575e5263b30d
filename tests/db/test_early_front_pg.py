"""The early front's record on PostgreSQL: its fingerprint is of the project the database holds
(there is no project file on this host), so a change of the project makes the record stale."""

from __future__ import annotations

from mcpctl.catalogue.cache import FilesCache
from mcpctl.resources.apply import apply_documents
from mcpctl.resources.pgstore import PgStore
from mcpctl.resources.yamlio import parse_text

PROJECT = "apiVersion: mcpctl/v1\nkind: Project\nmetadata: {{name: p}}\nspec: {{servers: [], description: {d}}}\n"


def test_the_fingerprint_follows_the_project_in_the_database(pg_db: str) -> None:
    from mcpctl.gateway.early import EarlyFront

    store = PgStore.open(pg_db)
    apply_documents(parse_text(PROJECT.format(d="one"), "<t>"), store)
    first = EarlyFront(store, FilesCache(), "p").fingerprint
    assert EarlyFront(store, FilesCache(), "p").fingerprint == first            # the same project: the same record
    apply_documents(parse_text(PROJECT.format(d="two"), "<t>"), store)
    assert EarlyFront(store, FilesCache(), "p").fingerprint != first            # changed: the record is not replayed
