"""A team signs in with its own identity provider (issue 35), end to end: the real HTTP gateway
(`mcpctl serve --transport http`), the test identity provider (the SDK's authorization server
issuing JWT access tokens, tests/servers/idp_server.py) and the SDK's client OAuth flow.

A client with no token discovers where to sign in from the gateway's 401 and its
protected-resource metadata (RFC 9728), signs in, and lists exactly its group's profile; a member
of a read-only group is refused a write tool; a person moved out of the group loses it at their
next token; a static token keeps working beside it, also while the provider's keys cannot be had."""

from __future__ import annotations

import pytest
from gwkit import Kit, text_of
from idpkit import Idp, signed_in_client, trust
from test_serve_http import http_client, http_gateway_process

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

GRANTS = {"p": {"groups": {"engineers": "all", "support": "read-only"}}}
PROFILES = {"all": {}}


def _setup(kit: Kit, idp: Idp, **spec: object) -> None:
    kit.server("good")
    kit.project("p", ["good"], profiles=PROFILES)
    trust(kit, idp, GRANTS, **spec)


async def _names(c: object) -> set[str]:
    listed = await c.list_tools()  # type: ignore[attr-defined]
    return {t.name for t in listed.tools}


async def test_a_client_without_a_token_discovers_signs_in_and_gets_its_groups_profile(kit: Kit, idp: Idp) -> None:
    import httpx2

    _setup(kit, idp)
    with http_gateway_process(kit, "p") as gw:
        r = httpx2.post(gw.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"accept": "application/json, text/event-stream"})
        assert r.status_code == 401
        prm_url = f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{prm_url}"' in r.headers["www-authenticate"], r.headers
        prm = httpx2.get(prm_url).json()
        assert prm["resource"] == gw.url and prm["authorization_servers"] == [idp.issuer], prm

        idp.person("alice", ["engineers"])
        async with signed_in_client(gw.url) as c:
            full = await _names(c)
            assert "good__delete_all" in full and "good__echo" in full
            r2 = await c.call_tool("good__delete_all", {})
            assert not r2.is_error, text_of(r2)

        idp.person("bob", ["support"])
        async with signed_in_client(gw.url) as c:
            shown = await _names(c)
            assert "good__echo" in shown and "good__delete_all" not in shown, shown
            refused = await c.call_tool("good__delete_all", {})
            assert refused.is_error

        idp.person("carol", ["marketing"])          # no group of hers is granted anything here
        with pytest.raises(Exception):              # noqa: B017 (the SDK's error for a 403)
            async with signed_in_client(gw.url) as c:
                await c.list_tools()
    stderr = gw.stderr.read_text()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert idp.stats()["code_exchanges"] == 3


async def test_moved_out_of_the_group_at_the_next_token(kit: Kit, idp: Idp) -> None:
    _setup(kit, idp)
    with http_gateway_process(kit, "p") as gw:
        idp.person("dave", ["engineers"])
        async with signed_in_client(gw.url) as c:
            assert "good__delete_all" in await _names(c)
        idp.person("dave", ["support"])              # the team moves dave; his next token says so
        async with signed_in_client(gw.url) as c:
            assert "good__delete_all" not in await _names(c)


async def test_usage_is_the_persons_and_a_static_token_works_beside_it(kit: Kit, idp: Idp) -> None:
    from typer.testing import CliRunner

    from mcpctl.cli import app

    _setup(kit, idp)
    with http_gateway_process(kit, "p") as gw:
        idp.person("erin", ["engineers"], email="erin@example.com")
        async with signed_in_client(gw.url) as c:
            r = await c.call_tool("good__echo", {"text": "hi"})
            assert not r.is_error
        idp.call("POST", "/test/jwks", {"fail": True})      # the provider's keys cannot be had now
        async with http_client(gw.url, gw.token) as c:
            r = await c.call_tool("good__echo", {"text": "static"})
            assert text_of(r).endswith("static")
    out = CliRunner().invoke(app, ["logs", "--project", "p", "--by", "credential"], prog_name="mcpctl")
    assert out.exit_code == 0, out.output
    assert "erin (erin@example.com)" in out.stdout, out.stdout
