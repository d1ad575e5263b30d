"""Names and routing through the gateway, in-process (`inproc`), in both protocol eras: a client
lists exactly the names the pipeline presents (`test_view.py` checks the pipeline alone), every
one is a valid name in the project's style, and every form of a name reaches its own tool, in each
presentation (flat, favourite index, deferred) and naming style."""

from __future__ import annotations

import re

import pytest
from gwkit import Kit, text_of
from inproc import Harness
from mcp import MCPError

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

PORTABLE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
VALID = {"portable": PORTABLE, "bare": PORTABLE, "spec": re.compile(r"^[A-Za-z0-9_./-]+$")}
SEP = {"portable": "__", "bare": "__", "spec": "/"}
FAVOURITES = ["alpha/whoami", "beta/echo"]


def _project(kit: Kit, presentation: str, style: str) -> str:
    kit.server("alpha", "--extra-tool", "whoami")
    kit.server("beta", "--extra-tool", "whoami")
    spec: dict[str, object] = {"names": {"style": style}, "tools": {"disabled": ["alpha/delete_*"]}}
    if presentation != "flat":
        spec["presentation"] = presentation
        spec["favouriteIndex"] = {"enabled": True, "tools": FAVOURITES}
    return kit.project("p", ["alpha", "beta"], **spec)


async def _call(c: object, listed: list[str], name: str, args: dict[str, object]) -> object:
    """Call `name` directly when it is listed, else through the deferred `call_tool`."""
    if name in listed:
        return await c.session.call_tool(name, args)  # type: ignore[attr-defined]
    return await c.session.call_tool("call_tool", {"name": name, "arguments": args})  # type: ignore[attr-defined]


@pytest.mark.parametrize("era", ["legacy", "auto"])
@pytest.mark.parametrize("style", ["portable", "spec", "bare"])
@pytest.mark.parametrize("presentation", ["flat", "favourite-index", "deferred"])
async def test_the_client_lists_the_pipelines_names_and_each_reaches_its_own_tool(
        kit: Kit, gw: Harness, presentation: str, style: str, era: str) -> None:
    project = _project(kit, presentation, style)
    async with gw.serve(project) as g, g.client(era) as c:
        await g.settled()
        listed = [x.name for x in (await c.list_tools()).tools]
        view = g.gateway.catalogue.view()
        assert listed == view.listed_names
        assert all(VALID[style].match(n) for n in listed), listed
        # two tools named whoami: each presented name reaches its own server
        for server in ("alpha", "beta"):
            name = view.present(f"{server}/whoami")
            assert name is not None
            r = await _call(c, listed, name, {})
            assert not r.is_error and text_of(r) == server, (name, text_of(r))
        # echo on both servers, by the name each is presented under
        for server in ("alpha", "beta"):
            name = view.present(f"{server}/echo")
            assert name is not None
            r = await _call(c, listed, name, {"text": f"via {name}"})
            assert text_of(r) == f"via {name}"
        # a disabled tool is refused under the name it would have had
        r = await c.session.call_tool(f"alpha{SEP[style]}delete_all", {})
        assert r.is_error and "disabled" in text_of(r)


@pytest.mark.parametrize("era", ["legacy", "auto"])
@pytest.mark.parametrize("presentation", ["favourite-index", "deferred"])
async def test_every_form_of_a_favourites_name_reaches_the_same_tool(kit: Kit, gw: Harness, presentation: str,
                                                                    era: str) -> None:
    project = _project(kit, presentation, "portable")
    forms = ["favourite__echo", "all__beta__echo", "beta/echo", "favourite/echo", "all/beta/echo", "beta__echo"]
    async with gw.serve(project) as g, g.client(era) as c:
        await g.settled()
        listed = [x.name for x in (await c.list_tools()).tools]
        for i, name in enumerate(forms):
            r = await c.session.call_tool(name, {"text": f"form {i}"})
            assert not r.is_error and text_of(r) == f"form {i}", name
        with pytest.raises(MCPError, match="Unknown tool: favourite__nope"):    # no such favourite
            await c.session.call_tool("favourite__nope", {})
        assert ("favourite__echo" in listed) and ("all__beta__echo" in listed) == (presentation != "deferred")
