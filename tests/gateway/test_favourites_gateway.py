"""The favourite index, the session gate and the deferred presentation through the gateway with the
official SDK client, in both protocol eras: in-process (`inproc`), and once each through the real
gateway (`mcpctl serve` as a subprocess)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as t
import pytest
from gwkit import Kit, text_of, wait_tools
from inproc import Harness

from ci_support import SLACK
from mcpctl.presentation.builtins import ALWAYS_LOAD
from mcpctl.resources.store import Store

pytestmark = pytest.mark.anyio

GATE_TEXT = "Read the runbook before touching anything."
SEP = {"portable": "__", "spec": "/"}


def _servers(kit: Kit) -> None:
    kit.server("alpha", "--extra-tool", "whoami")
    kit.server("beta", "--extra-tool", "whoami")


def _project(kit: Kit, style: str = "portable", **spec: Any) -> str:
    spec.setdefault("favouriteIndex", {"enabled": True,
                                       "tools": ["alpha/echo", "alpha/whoami", "beta/whoami", "alpha/delete_all"]})
    return kit.project("p", ["alpha", "beta"], tools={"disabled": ["alpha/delete_*"]}, names={"style": style},
                       **spec)


@pytest.fixture(scope="module")
def listings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The test upstreams' listings (catalogue cache entries), listed once for the module the way
    `mcpctl tools list --refresh` does, so that each gateway starts from a known catalogue."""
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.gateway.refresh import refresh_project

    home = tmp_path_factory.mktemp("listings") / "mcpctl-home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCPCTL_HOME", str(home))
        kit = Kit(home)
        _servers(kit)
        kit.project("p", ["alpha", "beta"])
        assert all(r.ok for r in refresh_project("p", Store(), FilesCache()).values())
        entries = {name: FilesCache().read_server_entry(name) for name in ("alpha", "beta")}
        assert kit.leftovers() == []
    return {name: entry for name, entry in entries.items() if entry is not None}


def _warm_cache(listings: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Put the listings in this test's catalogue cache; returns each server's tool names, in order."""
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.presentation.catalogue import cached_listing

    assert set(listings) == {"alpha", "beta"}
    for name, entry in listings.items():
        FilesCache().write_server_entry(name, cached_listing(entry))
    return {name: [x["name"] for x in entry["tools"]] for name, entry in listings.items()}


async def _rows(project: str, n: int, timeout: float = 10.0) -> list[Any]:
    """The invocation log's rows once at least `n` have arrived (the gateway writes them in the background)."""
    from mcpctl.audit.log import InvocationLog

    with anyio.fail_after(timeout):
        while True:
            with InvocationLog() as log:
                rows = log.query(project=project)
            if len(rows) >= n:
                return rows
            await anyio.sleep(0.05)


def _meta(tool: Any) -> dict[str, Any]:
    return dict(tool.meta or {})


@contextlib.asynccontextmanager
async def _client(kit: Kit, gw: Harness, front: str, project: str, mode: str, **kw: Any) -> AsyncIterator[Any]:
    """A client of `mcpctl serve` over stdio, or of the gateway in-process (calls logged)."""
    if front == "stdio":
        async with kit.client(project, mode=mode, **kw) as c:
            yield c
    else:
        async with gw.client(project, mode, log=True, **kw) as c:
            yield c


@contextlib.asynccontextmanager
async def _gate_client(kit: Kit, gw: Harness, front: str, project: str, mode: str
                       ) -> AsyncIterator[tuple[Any, anyio.Event]]:
    """A client and an event set when it receives tools/list_changed: through the message
    handler in the handshake era, through a `subscriptions/listen` stream in 2026-07-28."""
    changed = anyio.Event()

    async def on_message(msg: object) -> None:
        if isinstance(msg, t.ToolListChangedNotification):
            changed.set()

    async with _client(kit, gw, front, project, mode, message_handler=on_message) as c:
        if mode == "legacy":
            yield c, changed
            return
        async with anyio.create_task_group() as tg, c.listen(tools_list_changed=True) as sub:
            async def wait() -> None:
                async for _ in sub:
                    changed.set()
                    return

            tg.start_soon(wait)
            yield c, changed
            tg.cancel_scope.cancel()


# -- favourite index ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("front", "mode", "style"), [
    ("stdio", "legacy", "portable"), ("inproc", "legacy", "portable"), ("inproc", "legacy", "spec"),
    ("inproc", "auto", "portable"), ("inproc", "auto", "spec")])
async def test_a_call_through_favourite_and_all_reaches_the_same_tool(
        kit: Kit, gw: Harness, listings: dict[str, Any], front: str, mode: str, style: str) -> None:
    _servers(kit)
    project = _project(kit, style)
    upstream = _warm_cache(listings)
    s = SEP[style]
    other = SEP["spec" if style == "portable" else "portable"]
    favs = [f"favourite{s}echo", f"favourite{s}alpha{s}whoami", f"favourite{s}beta{s}whoami"]
    listed_ids = [(server, name) for server, names in upstream.items() for name in names
                  if (server, name) != ("alpha", "delete_all")]
    plain = [f"all{s}{server}{s}{name}" for server, name in listed_ids if name.isidentifier()]
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.presentation.catalogue import cached_catalogue

    pipeline = cached_catalogue(project, Store(), FilesCache()).view()           # what `mcpctl tools list` shows
    async with _client(kit, gw, front, project, mode) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        # the instructions the client received: the PREFER line in this style, naming the favourites
        assert c.instructions is not None
        assert (f"PREFER favourite{s}<tool> when one fits; use all{s}<server>{s}<tool> only if nothing in "
                "favourites fits") in c.instructions
        assert f"Favourites: {', '.join(favs)}." in c.instructions
        tools = (await c.list_tools()).tools
        names = [x.name for x in tools]
        alls = names[len(favs) + 2:]
        assert names == [*favs, "search_tools", "read_result", *alls] and len(alls) == len(listed_ids)
        assert all(n.startswith(f"all{s}") for n in alls) and set(plain) <= set(alls)
        assert names == pipeline.listed_names
        # favourites and the built-in are kept loaded; the long tail is not; upstream _meta merged
        by_name = {x.name: x for x in tools}
        assert all(_meta(by_name[n]).get(ALWAYS_LOAD) is True for n in [*favs, "search_tools", "read_result"])
        assert not any(ALWAYS_LOAD in _meta(by_name[n]) for n in alls)
        assert _meta(by_name[favs[0]]) == {"vendor/x": 1, ALWAYS_LOAD: True}
        assert _meta(by_name[f"all{s}beta{s}echo"]) == {"vendor/x": 1}
        # a favourite is described once: its `all` entry points to the favourite name
        assert by_name[favs[0]].description == "Echo text back"
        pointer = by_name[f"all{s}alpha{s}echo"]
        assert (pointer.description or "").startswith(f"Same tool as {favs[0]} ") and pointer.meta is None
        # every form of alpha/echo reaches the same upstream tool
        forms = [favs[0], f"all{s}alpha{s}echo", "alpha/echo", f"favourite{other}echo",
                 f"all{other}alpha{other}echo"]
        for i, name in enumerate(forms):
            r = await c.session.call_tool(name, {"text": f"hello {i}"})
            assert not r.is_error and text_of(r) == f"hello {i}", name
        # two favourites named whoami: each reaches its own server
        for server in ("alpha", "beta"):
            r = await c.session.call_tool(f"favourite{s}{server}{s}whoami", {})
            assert text_of(r) == server
            r = await c.session.call_tool(f"all{s}{server}{s}whoami", {})
            assert text_of(r) == server
        # a disabled favourite: not listed, refused by its favourite name
        assert f"favourite{s}delete_all" not in names and f"all{s}alpha{s}delete_all" not in names
        r = await c.session.call_tool(f"favourite{s}delete_all", {})
        assert r.is_error and "disabled" in text_of(r)
        rows = await _rows(project, len(forms) + 5)
    got = [(r.presented_name, r.canonical_id, r.outcome) for r in rows]
    assert got[:len(forms)] == [(name, "alpha/echo", "ok") for name in forms]
    assert got[len(forms):] == [
        (f"favourite{s}alpha{s}whoami", "alpha/whoami", "ok"), (f"all{s}alpha{s}whoami", "alpha/whoami", "ok"),
        (f"favourite{s}beta{s}whoami", "beta/whoami", "ok"), (f"all{s}beta{s}whoami", "beta/whoami", "ok"),
        (f"favourite{s}delete_all", "alpha/delete_all", "denied")]
    assert rows[-1].error_class == "ToolDisabled"
    assert kit.leftovers() == []


# -- the session gate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("front", "mode"), [("stdio", "auto"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_a_gated_session_sees_begin_session_only_until_it_begins(kit: Kit, gw: Harness,
                                                                      listings: dict[str, Any],
                                                                      front: str, mode: str) -> None:
    _servers(kit)
    project = _project(kit, gate={"enabled": True, "instructions": GATE_TEXT})
    _warm_cache(listings)
    async with _gate_client(kit, gw, front, project, mode) as (c, changed):
        assert c.instructions is not None and "Call begin_session with your task before anything else" \
            in c.instructions
        tools = (await c.list_tools()).tools
        assert [x.name for x in tools] == ["begin_session"]
        assert _meta(tools[0]).get(ALWAYS_LOAD) is True
        for name, args in (("favourite__echo", {"text": "too early"}), ("search_tools", {"query": "echo"})):
            r = await c.session.call_tool(name, args)
            assert r.is_error and "call begin_session" in text_of(r), (name, text_of(r))
        assert not changed.is_set()
        r = await c.session.call_tool("begin_session", {"task": "echo a greeting back"})
        assert not r.is_error
        data = r.structured_content
        assert data is not None and set(data) == {"instructions", "favourites", "matches"}
        assert data["instructions"] == GATE_TEXT and GATE_TEXT in text_of(r)
        assert [f["name"] for f in data["favourites"]] == ["favourite__echo", "favourite__alpha__whoami",
                                                           "favourite__beta__whoami"]
        assert data["matches"] and data["matches"][0]["name"] == "favourite__echo"
        assert all(set(m) == {"name", "description", "inputSchema", "score"} for m in data["matches"])
        with anyio.fail_after(10 * SLACK):
            await changed.wait()
        full = [x.name for x in (await c.list_tools()).tools]
        assert full[:4] == ["favourite__echo", "favourite__alpha__whoami", "favourite__beta__whoami",
                            "search_tools"]
        assert "begin_session" not in full and "all__beta__echo" in full
        r = await c.session.call_tool("favourite__echo", {"text": "now"})
        assert not r.is_error and text_of(r) == "now"
        r = await c.session.call_tool("begin_session", {"task": "another task"})   # still answers
        assert not r.is_error and "already begun" in text_of(r)
        rows = await _rows(project, 5)
    got = [(r.presented_name, r.canonical_id, r.outcome, r.error_class) for r in rows]
    assert got[:2] == [("favourite__echo", "alpha/echo", "denied", "SessionGated"),
                       ("search_tools", "mcpctl/search_tools", "denied", "SessionGated")]
    assert got[2:] == [("begin_session", "mcpctl/begin_session", "ok", None),
                       ("favourite__echo", "alpha/echo", "ok", None),
                       ("begin_session", "mcpctl/begin_session", "ok", None)]
    assert kit.leftovers() == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_another_session_stays_gated_after_one_begins(kit: Kit, gw: Harness,
                                                                        listings: dict[str, Any],
                                                                        mode: str) -> None:
    """Sessions as the HTTP front tells them apart, in-process (`inproc`: each client carries the
    project's token, as the HTTP front would see it)."""
    _servers(kit)
    project = _project(kit, gate={"enabled": True, "instructions": GATE_TEXT})
    _warm_cache(listings)
    async with gw.serve(project, log=True) as g:
        async with g.client(mode, name="first-client") as first:
            assert first.instructions is not None and "begin_session" in first.instructions
            assert [x.name for x in (await first.list_tools()).tools] == ["begin_session"]
            r = await first.session.call_tool("begin_session", {"task": "say who answers"})
            assert not r.is_error and r.structured_content["instructions"] == GATE_TEXT
            await wait_tools(first, {"favourite__echo", "all__beta__whoami"})
            # legacy: a second connection is a second session; 2026: another clientInfo is
            async with g.client(mode, name="second-client") as second:
                assert [x.name for x in (await second.list_tools()).tools] == ["begin_session"]
                r = await second.session.call_tool("favourite__alpha__whoami", {})
                assert r.is_error and "begin_session" in text_of(r)
                r = await first.session.call_tool("favourite__alpha__whoami", {})
                assert not r.is_error and text_of(r) == "alpha"
                r = await second.session.call_tool("begin_session", {"task": "me too"})
                assert not r.is_error
                r = await second.session.call_tool("favourite__beta__whoami", {})
                assert text_of(r) == "beta"
        rows = await _rows(project, 5)
    assert len({r.session_id for r in rows}) == 2
    assert [(r.outcome, r.error_class) for r in rows if r.canonical_id == "alpha/whoami"] == [
        ("denied", "SessionGated"), ("ok", None)]
    assert kit.leftovers() == []


# -- the deferred presentation -------------------------------------------------------------------------


@pytest.mark.parametrize(("front", "mode"), [("stdio", "legacy"), ("inproc", "legacy"), ("inproc", "auto")])
async def test_deferred_lists_favourites_and_reaches_the_rest_through_search_and_call_tool(
        kit: Kit, gw: Harness, listings: dict[str, Any], front: str, mode: str) -> None:
    _servers(kit)
    project = _project(kit, presentation="deferred", favouriteIndex={"tools": ["alpha/echo", "beta/whoami"]})
    upstream = _warm_cache(listings)
    async with _client(kit, gw, front, project, mode) as c:
        assert c.instructions is not None and "call_tool(name, arguments)" in c.instructions
        tools = (await c.list_tools()).tools
        assert [x.name for x in tools] == ["favourite__echo", "favourite__whoami", "search_tools", "call_tool",
                                                "read_result"]
        assert all(_meta(x).get(ALWAYS_LOAD) is True for x in tools)
        # search ranks every visible upstream tool and names the rest by their `all` names
        r = await c.session.call_tool("search_tools", {"query": "return structured content square", "top_k": 3})
        data = r.structured_content
        assert data["total_searched"] == sum(len(names) for names in upstream.values()) - 1   # one disabled
        found = [x["name"] for x in data["tools"]]
        assert set(found[:2]) == {"all__alpha__structured", "all__beta__structured"}     # alpha and beta alike
        assert all(n.startswith("all__") for n in found)
        r = await c.session.call_tool("search_tools", {"query": "echo text back"})
        assert "favourite__echo" in [x["name"] for x in r.structured_content["tools"]]
        # call_tool with the name search returned relays the upstream result verbatim
        r = await c.session.call_tool("call_tool", {"name": found[0], "arguments": {"n": 9}})
        assert not r.is_error and r.structured_content == {"square": 81} and text_of(r) == "81"
        r = await c.session.call_tool("call_tool", {"name": "all__beta__echo", "arguments": {"text": "deferred"}})
        assert text_of(r) == "deferred" and (r.meta or {}).get("upstream/meta") == "kept"
        r = await c.session.call_tool("call_tool", {"name": "all__alpha__whoami"})
        assert text_of(r) == "alpha"
        r = await c.session.call_tool("favourite__whoami", {})
        assert text_of(r) == "beta"
        r = await c.session.call_tool("call_tool", {"name": "all__alpha__no_such_tool", "arguments": {}})
        assert r.is_error and "search_tools" in text_of(r)
        r = await c.session.call_tool("call_tool", {"name": "all__alpha__delete_all", "arguments": {}})
        assert r.is_error and "disabled" in text_of(r)
        rows = await _rows(project, 8)
    got = [(r.presented_name, r.canonical_id, r.outcome) for r in rows]
    assert got == [
        ("search_tools", "mcpctl/search_tools", "ok"),
        ("search_tools", "mcpctl/search_tools", "ok"),
        (found[0], found[0].removeprefix("all__").replace("__", "/"), "ok"),
        ("all__beta__echo", "beta/echo", "ok"),
        ("all__alpha__whoami", "alpha/whoami", "ok"),
        ("favourite__whoami", "beta/whoami", "ok"),
        ("all__alpha__no_such_tool", None, "tool_error"),
        ("all__alpha__delete_all", "alpha/delete_all", "denied"),
    ]
    assert kit.leftovers() == []

