"""`resources.apply.create_token`: what `mcpctl create token` stores, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpctl.errors import AlreadyExists, InvalidResource
from mcpctl.resources import tokens
from mcpctl.resources.apply import create_token
from mcpctl.resources.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "resources")
    s.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": "p"}, "spec": {"servers": []}})
    return s


def test_the_token_and_its_hash_are_stored_and_the_secret_returned(store: Store) -> None:
    change, secret = create_token(store, "ci", "p", profile="read-only", expires="2w", description="CI")
    assert change.action == "created" and change.resource["spec"]["profile"] == "read-only"
    assert change.resource["spec"]["expires"] and change.resource["spec"]["description"] == "CI"
    assert tokens.has_hash("ci", store) and secret
    with pytest.raises(AlreadyExists):
        create_token(store, "ci", "p")
    change, again = create_token(store, "ci", "p", force=True)
    assert change.action == "replaced" and again != secret


def test_errors_name_the_flags(store: Store) -> None:
    with pytest.raises(InvalidResource) as e:
        create_token(store, "ci", "p", profile="nope")
    assert e.value.message == "project 'p' has no profile 'nope'"       # not "mcpctl create token, document 1: …"
    assert store.find("Token", "ci") is None
