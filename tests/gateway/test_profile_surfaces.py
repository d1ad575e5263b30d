"""Profiles and the gate cover every MCP surface, not only tools.

A server's prompts, resources and resource templates go through curation, the credential's
profile and the gate by server (`server/*`): listing, reading (the `mcpctl://` URI or the
upstream's own), getting, completing and subscribing alike, refused like a hidden tool and logged
`denied`. What an upstream sends of its own (roots requests outside a call, log messages) reaches
only sessions whose view includes that server, and the instructions a session gets name only
what its own view lists.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit
from inproc import Harness, Running
from mcp import MCPError
from test_relay_requests import answering
from typer.testing import CliRunner

from ci_support import SLACK
from mcpctl.cli import app
from mcpctl.presentation.catalogue import Catalogue
from mcpctl.presentation.view import SessionKey
from mcpctl.resources.kinds import ProjectSpec

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

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


# -- through the gateway: HTTP (one gateway, every token, both eras) and stdio ----------------------


def _setup(kit: Kit, markers: Path) -> str:
    markers.mkdir(exist_ok=True)
    for name in ("vault", "docs"):
        kit.server(name, "--ask-tools", "--marker-dir", str(markers))
    return kit.project("p", ["vault", "docs"], gate={"enabled": True}, profiles=PROFILES,
                       favouriteIndex=FAVOURITES)


async def _refused(call: Callable[[], Awaitable[Any]], match: str) -> None:
    with pytest.raises(MCPError) as e:
        await call()
    assert match in e.value.error.message, e.value.error.message


async def check_surfaces(c: Any, sees_vault: bool, *, subscribe: bool) -> None:
    """Gated: nothing of any server; begun: docs' items, and vault's only when `sees_vault`."""
    assert (await c.list_prompts()).prompts == []
    assert (await c.list_resources()).resources == []
    assert (await c.list_resource_templates()).resource_templates == []
    await _refused(lambda: c.read_resource("file:///docs/readme.txt"), "begin_session")
    await _refused(lambda: c.get_prompt("docs__greet", {"who": "x"}), "begin_session")
    await c.call_tool("begin_session", {"task": "read the docs"})
    prompts = {p.name for p in (await c.list_prompts()).prompts}
    resources = {str(r.uri) for r in (await c.list_resources()).resources}
    templates = {w.uri_template for w in (await c.list_resource_templates()).resource_templates}
    assert prompts == {"docs__greet"} | ({"vault__greet"} if sees_vault else set())
    assert {u.split("/")[2] for u in resources} == {"docs"} | ({"vault"} if sees_vault else set())
    assert templates == {"note://docs/{id}"} | ({"note://vault/{id}"} if sees_vault else set())
    namespaced = "mcpctl://vault/" + RAW.replace(":", "%3A").replace("/", "%2F")
    vault_requests: list[Callable[[], Awaitable[Any]]] = [
        lambda: c.read_resource(RAW), lambda: c.read_resource(namespaced),
        lambda: c.read_resource("note://vault/7"),
        lambda: c.get_prompt("vault__greet", {"who": "x"}),
        lambda: c.complete(t.PromptReference(type="ref/prompt", name="vault__greet"), {"name": "who", "value": ""}),
        lambda: c.complete(t.ResourceTemplateReference(type="ref/resource", uri="note://vault/{id}"),
                           {"name": "id", "value": ""})]
    if subscribe:
        vault_requests.append(lambda: c.subscribe_resource(RAW))
    for request in vault_requests:
        if sees_vault:
            await request()
        else:
            await _refused(request, "is not permitted for this credential")
    assert "from docs" in str((await c.get_prompt("docs__greet", {"who": "x"})).messages[0].content)
    assert (await c.read_resource("file:///docs/readme.txt")).contents


def _tokens(runner: CliRunner) -> dict[str, str]:
    return {p: runner.invoke(app, ["create", "token", p, "-p", "p", "--profile", p]).stdout.strip()
            for p in ("no-vault", "one-tool", "read-only")}


async def _marker(markers: Path, name: str) -> str:
    path = markers / f"roots-{name}-1"
    with anyio.fail_after(20 * SLACK):
        while not path.exists() or not path.read_text():
            await anyio.sleep(0.05)
    return path.read_text()


def _logger() -> tuple[list[str], Any]:
    logs: list[str] = []

    async def on_log(params: t.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    return logs, on_log


async def _until(pred: Callable[[], bool]) -> None:
    with anyio.fail_after(20 * SLACK):
        while not pred():
            await anyio.sleep(0.05)


async def test_over_http_every_token_sees_and_hears_only_its_view_in_both_eras(kit: Kit, gw: Harness,
                                                                              tmp_path: Path) -> None:
    """In-process (`inproc`): each client presents its token as the HTTP front would see it."""
    from mcpctl.audit.log import InvocationLog

    markers = tmp_path / "markers"
    project = _setup(kit, markers)
    tokens = _tokens(CliRunner())
    async with gw.serve(project, log=True) as g:
        async with g.client("legacy", "full") as full:
            assert full.instructions is not None and "favourite__delete_all" in full.instructions
        for mode in ("legacy", "auto"):
            for profile, sees in SEES_ITEMS.items():
                async with g.client(mode, f"{profile}-{mode}", token=tokens[profile]) as c:
                    assert c.instructions is not None and "favourite__delete_all" not in c.instructions
                    assert "favourite__echo" in c.instructions
                    await check_surfaces(c, sees, subscribe=mode == "legacy")

        # outside any call: vault asks for roots and logs; only a session that may use vault hears it
        nv_logs, on_nv = _logger()
        ro_logs, on_ro = _logger()
        async with g.client("legacy", "ro", token=tokens["read-only"], logging_callback=on_ro,
                            **answering("ro")) as ro, \
                g.client("legacy", "nv", token=tokens["no-vault"], logging_callback=on_nv,
                         **answering("novault")) as nv:
            for c in (ro, nv):
                await c.call_tool("begin_session", {"task": "x"})
                await c.set_logging_level("debug")
            await nv.list_prompts()                   # the most recently active session
            await nv.session.send_roots_list_changed()
            assert await _marker_in(g, markers, "docs") == "file:///novault"
            assert await _marker_in(g, markers, "vault") == "file:///ro"     # not the session that denies vault
            await g.until(lambda: "vault: roots changed" in ro_logs and "docs: roots changed" in nv_logs)
            assert "vault: roots changed" not in nv_logs
    with InvocationLog() as log:             # written as each call was answered
        denied = [r for r in log.query(project="p") if r.outcome == "denied"]
    assert ("resources/read " + RAW, "no-vault", "NotPermitted") in {
        (r.presented_name, r.profile, r.error_class) for r in denied}
    assert ("prompts/get docs__greet", "read-only", "SessionGated") in {
        (r.presented_name, r.profile, r.error_class) for r in denied}


async def _marker_in(g: Running, markers: Path, name: str) -> str:
    """The roots the fault server `name` wrote outside a call, once written (awaited, in-process)."""
    path = markers / f"roots-{name}-1"
    await g.until(lambda: path.exists() and bool(path.read_text()))
    return path.read_text()


@contextlib.asynccontextmanager
async def _stdio(kit: Kit, profile: str | None, mode: str, **kw: Any) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.stdio import stdio_client

    extra = ("--profile", profile) if profile else ()
    with open(kit.home / f"client-{profile}-{mode}.log", "a") as errlog:
        async with Client(stdio_client(kit.params("p", *extra), errlog=errlog), mode=mode, **kw) as c:
            yield c


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("profile", ["no-vault", "one-tool", "read-only"])
async def test_over_stdio_the_profile_covers_every_surface_and_what_the_server_sends(
        kit: Kit, tmp_path: Path, profile: str, mode: str) -> None:
    markers = tmp_path / "markers"
    _setup(kit, markers)
    logs, on_log = _logger()
    async with _stdio(kit, profile, mode, logging_callback=on_log, **answering("me")) as c:
        assert c.instructions is not None and "favourite__delete_all" not in c.instructions
        await check_surfaces(c, SEES_ITEMS[profile], subscribe=mode == "legacy")
        if mode == "legacy":        # a 2026 client is never asked, nor told, outside a call
            await c.set_logging_level("debug")
            await c.session.send_roots_list_changed()
            assert await _marker(markers, "docs") == "file:///me"
            vault = await _marker(markers, "vault")
            if USES[profile]:
                assert vault == "file:///me"
                await _until(lambda: "vault: roots changed" in logs and "docs: roots changed" in logs)
            else:
                assert vault.startswith("error: ") and "roots" in vault
                await _until(lambda: "docs: roots changed" in logs)
                assert "vault: roots changed" not in logs
    assert kit.leftovers() == []


def _collector() -> tuple[list[Any], Any]:
    seen: list[Any] = []

    async def on_message(msg: Any) -> None:
        if isinstance(msg, t.ResourceUpdatedNotification):
            seen.append(str(msg.params.uri))

    return seen, on_message


async def test_resource_updates_reach_only_sessions_whose_view_holds_the_resource(kit: Kit, gw: Harness) -> None:
    """A subscription outside the view is refused in both eras (a 2026 `subscriptions/listen`
    stream's too, logged `denied`); one taken while the view held the resource stops receiving
    updates once the profile no longer does."""
    from mcpctl.audit.log import InvocationLog

    kit.server("vault", "--ask-tools")
    project = kit.project("p", ["vault"], profiles={"flex": {"allow": ["vault/*"]}, "no-vault": {"deny": ["vault/*"]}})
    runner = CliRunner()
    tokens = {p: runner.invoke(app, ["create", "token", p, "-p", "p", "--profile", p]).stdout.strip()
              for p in ("flex", "no-vault")}
    seen_flex, on_flex = _collector()
    seen_full, on_full = _collector()
    async with gw.serve(project, log=True) as g, \
            g.client("legacy", "flex", token=tokens["flex"], message_handler=on_flex) as flex, \
            g.client("legacy", "full", message_handler=on_full) as full, \
            g.client("auto", "nv", token=tokens["no-vault"]) as nv, \
            g.client("auto", "full26") as full26:
        await flex.subscribe_resource(RAW)          # first: it would be told first
        await full.subscribe_resource(RAW)
        res = kit.store.get("Project", "p")
        res["spec"]["profiles"]["flex"] = {"deny": ["vault/*"]}
        kit.store.put(res)
        await g.until(lambda: _no_resources(flex))         # the gateway applied the change
        await _refused(lambda: flex.subscribe_resource(RAW), "is not permitted for this credential")
        await nv.list_tools()
        async with nv.listen(resource_subscriptions=[RAW]), \
                full26.listen(resource_subscriptions=[RAW]) as sub:
            await full.call_tool("touch", {"uri": RAW})
            with anyio.fail_after(10 * SLACK):
                event = await sub.__anext__()
            assert getattr(event, "uri", None) == RAW
            await g.until(lambda: bool(seen_full))
        assert seen_full == [RAW] and seen_flex == []
    with InvocationLog() as log:             # written as each call was answered
        rows = {(r.presented_name, r.profile) for r in log.query(project="p") if r.outcome == "denied"}
    assert {("resources/subscribe " + RAW, "no-vault"), ("resources/subscribe " + RAW, "flex")} <= rows


async def _no_resources(c: Any) -> bool:
    return not (await c.list_resources()).resources


async def _until_async(pred: Callable[[], Awaitable[bool]]) -> None:
    with anyio.fail_after(20 * SLACK):
        while not await pred():
            await anyio.sleep(0.1)


async def test_a_start_under_another_profile_never_replays_the_instructions_recorded_for_the_first(
        kit: Kit, tmp_path: Path) -> None:
    """The early stdio front answers `initialize` from the result recorded at the last start: a
    record made under one profile is not replayed to a start under another."""
    _setup(kit, tmp_path / "markers")
    for profile, named in (("read-only", False), (None, True), ("read-only", False)):
        async with _stdio(kit, profile, "legacy") as c:
            assert c.instructions is not None and "favourite__echo" in c.instructions
            assert ("favourite__delete_all" in c.instructions) == named, (profile, c.instructions)
    assert kit.leftovers() == []
