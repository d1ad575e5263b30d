"""Profiles and tokens: each credential gets its own view of a project, the boundary holds.

The HTTP gateway maps the presented token to its profile: `tools/list`, `search_tools` and every
call are filtered by it; a call outside it is refused and logged `denied` with the profile.
Over stdio `serve --profile` selects the view.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import anyio
import pytest
from gwkit import MCPCTL, Kit, text_of, wait_tools
from test_serve_http import http_client, http_gateway
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import app
from mcpctl.presentation.catalogue import Catalogue
from mcpctl.presentation.view import Refusal, Route, SessionKey
from mcpctl.resources.kinds import ProjectSpec

pytestmark = pytest.mark.anyio

PROFILES = {"writer": {"deny": ["alpha/crash", "alpha/hang"]}, "adder": {"allow": ["alpha/add"]},
            "reviewer": {"readOnly": True, "allow": ["alpha/add"], "deny": ["alpha/echo"]}}


def _tool(name: str, **ann: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "description": f"{name} things", "inputSchema": {"type": "object"}}
    if ann:
        out["annotations"] = ann
    return out


def test_a_profile_narrows_the_list_search_and_calls() -> None:
    spec = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": {"servers": ["alpha"], "profiles": PROFILES}})
    cat = Catalogue("p", spec)
    cat.set_listing("alpha", {"tools": [_tool("echo", readOnlyHint=True), _tool("add"),
                                        _tool("delete_all", readOnlyHint=True, destructiveHint=True),
                                        _tool("crash")]})

    def listed(profile: str | None) -> list[str]:
        return [t["name"] for t in cat.view(SessionKey(profile=profile)).tools
                if t["name"] not in ("search_tools", "read_result")]

    assert listed(None) == ["alpha__echo", "alpha__add", "alpha__delete_all", "alpha__crash"]
    # the built-in read-only profile: annotated read-only and not destructive
    assert listed("read-only") == ["alpha__echo"]
    assert listed("writer") == ["alpha__echo", "alpha__add", "alpha__delete_all"]
    assert listed("adder") == ["alpha__add"]
    assert listed("reviewer") == ["alpha__add"]          # allow adds to read-only, deny wins
    assert listed("undefined") == []                     # a profile the project does not define: nothing
    ro = cat.view(SessionKey(profile="read-only"))
    assert [t.canonical_id for t in ro.searchable] == ["alpha/echo"]
    refused = ro.resolve("alpha__delete_all")
    assert isinstance(refused, Refusal) and refused.error_class == "NotPermitted"
    assert "not permitted for this credential" in refused.message and "'read-only'" in refused.message
    assert isinstance(ro.resolve("alpha/echo"), Route)


def test_tokens_are_shown_once_stored_as_a_hash_and_managed_like_any_kind(kit: Kit, runner: CliRunner) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"], profiles=PROFILES)
    r = runner.invoke(app, ["create", "token", "reader", "--project", "p", "--profile", "read-only",
                            "--expires", "30d"], prog_name="mcpctl")
    assert r.exit_code == 0, r.output
    secret = r.stdout.strip()
    assert secret.startswith("mcpctl_") and len(secret) > 40 and "token/reader created" in r.stderr
    everything = "".join(p.read_text() for p in kit.home.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json"))
    assert secret not in everything                                     # only a hash is kept
    hash_file = kit.home / "state" / "credentials" / "reader.json"
    assert oct(hash_file.stat().st_mode & 0o777) == "0o600"
    for args in (["get", "tokens"], ["get", "token", "reader", "-o", "yaml"], ["describe", "token", "reader"]):
        out = runner.invoke(app, args, prog_name="mcpctl")
        assert out.exit_code == 0 and secret not in out.output and "read-only" in out.output, out.output
    yaml_text = runner.invoke(app, ["get", "token", "reader", "-o", "yaml"], prog_name="mcpctl").stdout
    assert runner.invoke(app, ["apply", "-f", "-"], input=yaml_text, prog_name="mcpctl").stdout == \
        "token/reader unchanged\n"
    # apply cannot mint a token; bad references are errors naming the flag
    r = runner.invoke(app, ["apply", "-f", "-"], input=yaml_text.replace("name: reader", "name: other"),
                      prog_name="mcpctl")
    assert r.exit_code == 1 and "mcpctl create token other" in r.stderr
    r = runner.invoke(app, ["create", "token", "x", "--project", "p", "--profile", "nope"], prog_name="mcpctl")
    assert r.exit_code == 1 and "has no profile 'nope'" in r.stderr and "read-only" in r.stderr
    r = runner.invoke(app, ["create", "token", "x", "--project", "nope"], prog_name="mcpctl")
    assert r.exit_code == 1 and "does not exist" in r.stderr
    r = runner.invoke(app, ["create", "token", "x", "--project", "p", "--expires", "yesterday"], prog_name="mcpctl")
    assert r.exit_code == 1 and "--expires" in r.stderr
    assert kit.store.find("Token", "x") is None
    r = runner.invoke(app, ["delete", "token", "reader"], prog_name="mcpctl")
    assert r.exit_code == 0 and not hash_file.exists()


async def test_each_token_sees_its_own_view_and_a_revoked_one_is_refused_at_once(kit: Kit) -> None:
    import httpx2

    from mcpctl.audit.log import InvocationLog

    kit.server("alpha")
    kit.project("p", ["alpha"], profiles=PROFILES)
    runner = CliRunner()
    reader = runner.invoke(app, ["create", "token", "reader", "-p", "p", "--profile", "read-only"]).stdout.strip()
    writer = runner.invoke(app, ["create", "token", "writer", "-p", "p", "--profile", "writer"]).stdout.strip()
    with http_gateway(kit, "p") as (url, project_token):
        async with http_client(url, reader, "legacy") as ro, http_client(url, writer, "auto") as rw, \
                http_client(url, project_token, "legacy", name="full") as full:
            await wait_tools(full, {"alpha__echo", "alpha__crash"})
            ro_names = {t.name for t in (await ro.list_tools()).tools}
            assert ro_names == {"search_tools", "read_result", "alpha__echo"}
            rw_names = {t.name for t in (await rw.list_tools()).tools}
            assert "alpha__delete_all" in rw_names and "alpha__crash" not in rw_names
            hits = (await ro.session.call_tool("search_tools", {"query": "delete everything", "top_k": 20}))
            assert {h["name"] for h in (hits.structured_content or {})["tools"]} <= {"alpha__echo"}
            r = await ro.session.call_tool("alpha__delete_all", {})
            assert r.is_error and "not permitted for this credential" in text_of(r)
            r = await ro.session.call_tool("alpha__echo", {"text": "ro ok"})
            assert text_of(r) == "ro ok"
            r = await rw.session.call_tool("alpha__crash", {})
            assert r.is_error and "'writer'" in text_of(r)
            r = await rw.session.call_tool("alpha__echo", {"text": "rw ok"})
            assert text_of(r) == "rw ok"
            assert "alpha__crash" in {t.name for t in (await full.list_tools()).tools}

        # revocation: the running gateway refuses the token at its next request
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx2.AsyncClient(timeout=10 * SLACK) as h:
            head = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
            ok = await h.post(url, json=body, headers={**head, "Authorization": f"Bearer {writer}"})
            assert ok.status_code != 401
            assert runner.invoke(app, ["delete", "token", "writer"]).exit_code == 0
            gone = await h.post(url, json=body, headers={**head, "Authorization": f"Bearer {writer}"})
            assert gone.status_code == 401
            # an expired token too
            res = kit.store.get("Token", "reader")
            res["spec"]["expires"] = "2020-01-01T00:00:00Z"
            kit.store.put(res)
            old = await h.post(url, json=body, headers={**head, "Authorization": f"Bearer {reader}"})
            assert old.status_code == 401
    assert kit.leftovers() == []
    deadline = time.monotonic() + 10 * SLACK
    while True:
        with InvocationLog() as log:
            denied = [r for r in log.query(project="p") if r.outcome == "denied"]
        if len(denied) >= 2 or time.monotonic() > deadline:
            break
        await anyio.sleep(0.1)
    assert {(r.canonical_id, r.profile, r.error_class) for r in denied} == {
        ("alpha/delete_all", "read-only", "NotPermitted"), ("alpha/crash", "writer", "NotPermitted")}


async def test_serve_profile_selects_the_view_over_stdio(kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    FilesCache().write_server_tools("alpha", [_tool("echo", readOnlyHint=True), _tool("delete_all", destructiveHint=True)])
    from mcp import Client
    from mcp.client.stdio import stdio_client

    params = kit.params("p", "--profile", "read-only")
    for mode in ("legacy", "auto"):
        async with Client(stdio_client(params), mode=mode) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert "alpha__delete_all" not in names and "alpha__echo" in names
            r = await c.session.call_tool("alpha__delete_all", {})
            assert r.is_error and "not permitted" in text_of(r)
    env = {**os.environ, "MCPCTL_HOME": str(kit.home)}
    bad = subprocess.run([MCPCTL, "serve", "--project", "p", "--profile", "nope"], env=env, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=30 * SLACK)
    assert bad.returncode == 2 and "has no such profile" in bad.stderr and "read-only" in bad.stderr
    http = subprocess.run([MCPCTL, "serve", "--project", "p", "--profile", "read-only", "--transport", "http"],
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30 * SLACK)
    assert http.returncode == 2 and "create token" in http.stderr
    assert kit.leftovers() == []


@pytest.mark.stress
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_two_tokens_ten_thousand_concurrent_calls_never_cross(kit: Kit) -> None:
    """Up to 10,000 calls, bounded in time as well as count: on an idle machine all of them; beside
    another suite on 2 cores, as many as a minute allows, at least a few hundred per client."""
    per_client, in_flight, budget_s, at_least = 5000, 24, 60.0, 300
    kit.server("alpha")
    kit.project("p", ["alpha"], profiles=PROFILES)
    runner = CliRunner()
    tokens = {"R": runner.invoke(app, ["create", "token", "r", "-p", "p", "--profile", "read-only"]).stdout.strip(),
              "W": runner.invoke(app, ["create", "token", "w", "-p", "p", "--profile", "writer"]).stdout.strip()}
    with http_gateway(kit, "p") as (url, _):
        async def one_client(cid: str, mode: str) -> int:
            ok = 0
            async with http_client(url, tokens[cid], mode) as c:
                await wait_tools(c, {"alpha__echo"})
                counter = iter(range(per_client))

                async def worker() -> None:
                    nonlocal ok
                    for i in counter:
                        if time.monotonic() > deadline:
                            return
                        nonce = f"{cid}-{i}"
                        if cid == "R" and i % 50 == 0:      # the boundary, under load
                            r = await c.session.call_tool("alpha__delete_all", {})
                            assert r.is_error and "'read-only'" in text_of(r)
                        r = await c.session.call_tool("alpha__echo", {"text": nonce})
                        assert text_of(r) == nonce, f"misrouted: sent {nonce}, got {text_of(r)[:40]}"
                        ok += 1

                async with anyio.create_task_group() as tg:
                    for _ in range(in_flight):
                        tg.start_soon(worker)
            return ok

        results: dict[str, int] = {}

        async def run(cid: str, mode: str) -> None:
            results[cid] = await one_client(cid, mode)

        deadline = time.monotonic() + budget_s
        with anyio.fail_after(budget_s + 120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "R", "legacy")
                tg.start_soon(run, "W", "auto")
        assert set(results) == {"R", "W"} and all(at_least <= n <= per_client for n in results.values()), results
    assert kit.leftovers() == []
