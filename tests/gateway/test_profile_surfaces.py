"""Profiles and the gate cover every MCP surface, not only tools.

A server's prompts, resources and resource templates go through curation, the credential's
profile and the gate by server (`server/*`): listing, reading (the `mcpctl://` URI or the
upstream's own), getting, completing and subscribing alike, refused like a hidden tool and logged
`denied`. What an upstream sends of its own (roots requests outside a call, log messages) reaches
only sessions whose view includes that server, and the instructions a session gets name only
what its own view lists.
"""

from __future__ import annotations

from typing import Any

from mcpctl.gateway.catalogue import Catalogue
from mcpctl.gateway.view import SessionKey
from mcpctl.resources.kinds import ProjectSpec

# `one-tool` allows a single tool of vault (and all of docs): vault's prompts and resources stay out.
PROFILES = {"no-vault": {"deny": ["vault/*"]}, "one-tool": {"allow": ["vault/echo", "docs/*"]}}
SEES_ITEMS = {"no-vault": False, "one-tool": False, "read-only": True}     # vault's prompts, resources
USES = {"no-vault": False, "one-tool": True, "read-only": True}            # anything of vault at all
FAVOURITES = {"enabled": True, "tools": ["vault/delete_all", "docs/echo"]}
RAW = "file:///vault/readme.txt"


# -- the pipeline, without a gateway ---------------------------------------------------------------


def _listing(server: str) -> dict[str, list[dict[str, Any]]]:
    return {"tools": [{"name": "read_doc", "inputSchema": {"type": "object"},
                       "annotations": {"readOnlyHint": True}},
                      {"name": "write_file", "inputSchema": {"type": "object"}}],
            "prompts": [{"name": "greet"}],
            "resources": [{"name": "secret", "uri": f"res://{server}/secret"}],
            "resourceTemplates": [{"name": "note", "uriTemplate": f"note://{server}/{{id}}"}]}


def _catalogue(**spec: Any) -> Catalogue:
    project = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {
        "servers": ["vault", "docs", "later"], "profiles": {
            "no-vault": {"deny": ["vault/*"]}, "one-tool": {"allow": ["vault/read_doc"]},
            "vault-all": {"allow": ["vault/*"]}}, **spec}})
    cat = Catalogue("p", project)
    cat.set_listings({"vault": _listing("vault"), "docs": _listing("docs")})
    return cat


def test_prompts_resources_and_templates_follow_curation_the_profile_and_the_gate_by_server() -> None:
    cat = _catalogue(gate={"enabled": True})

    def seen(profile: str | None, gated: bool = False) -> tuple[set[str], ...]:
        view = cat.view(SessionKey(gated, profile))
        return ({p["name"].split("__")[0] for p in cat.prompt_list(view)},
                {r["uri"].split("/")[2] for r in cat.resource_list(view)},
                {w["uriTemplate"].split("/")[2] for w in cat.template_list(view)})

    both, docs = ({"vault", "docs"},) * 3, ({"docs"},) * 3
    assert seen(None) == both
    assert seen("no-vault") == docs
    assert seen("one-tool") == (set(), set(), set())     # a single tool's allow covers no server's items
    assert seen("vault-all") == ({"vault"},) * 3
    assert seen("read-only") == both                      # reads by nature
    assert seen(None, gated=True) == (set(), set(), set())
    view = cat.view(SessionKey(False, "no-vault"))
    refusal = view.admit("vault", "resource 'res://vault/secret'")
    assert refusal is not None and refusal.outcome == "denied" and refusal.error_class == "NotPermitted"
    assert refusal.message.startswith("resource 'res://vault/secret' is not permitted for this credential")
    assert view.admit("docs", "prompt 'docs__greet'") is None
    assert not view.uses("vault") and view.uses("docs")
    one = cat.view(SessionKey(False, "one-tool"))
    assert one.uses("vault") and not one.uses("docs")    # its one tool: vault may ask it, its items stay out
    gated = cat.view(SessionKey(True, None))
    refused = gated.admit("docs", "prompt 'docs__greet'")
    assert refused is not None and refused.error_class == "SessionGated" and not gated.uses("docs")
    # curation: a rule covering the whole server hides its items too; one naming some tools does not
    assert seen_by(_catalogue(tools={"disabled": ["vault/*"]})) == {"docs"}
    assert seen_by(_catalogue(tools={"disabled": ["vault/write_*"]})) == {"vault", "docs"}
    assert seen_by(_catalogue(tools={"disabled": ["*"], "enabled": ["vault/read_doc"]})) == set()
    off = _catalogue(tools={"disabled": ["vault/*"]}).view()
    r = off.admit("vault", "prompt 'vault__greet'")
    assert r is not None and r.error_class == "ServerDisabled" and "mcpctl tools enable" in r.message


def seen_by(cat: Catalogue) -> set[str]:
    return {p["name"].split("__")[0] for p in cat.prompt_list(cat.view())}


def test_instructions_name_only_what_the_sessions_view_lists() -> None:
    cat = _catalogue(favouriteIndex={"enabled": True, "tools": ["vault/write_file", "vault/read_doc", "later/write_it"]})
    full, ro, no_vault = (cat.instructions_for(p) for p in (None, "read-only", "no-vault"))
    assert "favourite__write_file" in full and "favourite__read_doc" in full
    assert "favourite__write_it" in full           # a server not listed yet: expected, named
    assert "favourite__read_doc" in ro
    assert "favourite__write_file" not in ro and "favourite__write_it" not in ro
    assert "favourite__write_file" not in no_vault and "favourite__read_doc" not in no_vault
    assert cat.instructions == full
