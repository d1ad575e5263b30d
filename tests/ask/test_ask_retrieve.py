"""`ask.answer.retrieve`: the passages `mcpctl ask` shows, from resources already read, without the CLI."""

from __future__ import annotations

from mcpctl.ask.answer import retrieve


def test_only_allowed_servers_are_drawn_on_and_unreadable_resources_are_counted() -> None:
    read = {("docs", "file:///deploy.md"): ("Deploying", "To deploy the service run make deploy on the build host."),
            ("secret", "file:///keys.md"): ("Keys", "To deploy the service you need the signing keys."),
            ("docs", "file:///empty.md"): ("Empty", None)}
    result = retrieve("how do I deploy the service", read, {"docs"}, ranker="bm25", max_bytes=100_000, top_k=5)
    assert result["resources"] == 3 and result["ranker"].startswith("bm25")
    uris = [p["uri"] for p in result["passages"]]
    assert uris and set(uris) == {"file:///deploy.md"}
