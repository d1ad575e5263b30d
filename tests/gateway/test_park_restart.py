"""A 2026-07-28 client's retry of a call parked on a replica that is gone (issue 36): the replica
that gets it makes the call again and answers the upstream's requests from the retry's
`inputResponses`, so the client gets its result, not an error. A state this replica issued and no
longer holds is still the protocol's error. In-process (`inproc`), the replica's id set by hand as
`cluster.join` sets it; the replicas themselves run in tests/team/test_replicas.py."""

from __future__ import annotations

from typing import Any

import mcp.types as t
import pytest
from gwkit import Kit, text_of, wait_tools
from inproc import Harness
from mcp import MCPError

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]


async def _asked(ctx: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "asked-again"})


def _retry(state: str) -> t.CallToolRequest:
    return t.CallToolRequest(params=t.CallToolRequestParams(
        name="elicit", arguments={"message": "name?"}, request_state=state,
        input_responses={"r1": t.ElicitResult(action="accept", content={"name": "zoe"})}))


async def test_a_retry_whose_replica_is_gone_is_the_call_again_answered_from_its_input(kit: Kit, gw: Harness) -> None:
    kit.server("up", "--ask-tools")
    project = kit.project("p", ["up"], names={"style": "bare"})
    async with gw.serve(project) as g:
        g.gateway.asks.tag = "aaaaaaaa."
        async with g.client("2026-07-28", elicitation_callback=_asked) as c:
            await wait_tools(c, {"elicit"})
            r = await c.session.send_request(_retry("mcpctl:bbbbbbbb.gone"), t.CallToolResult)
            assert text_of(r) == "elicited: accept {'name': 'zoe'}"      # the retry's answer, not asked again
            assert g.gateway.asks.parked == {}
            with pytest.raises(MCPError, match="unknown or expired requestState"):
                await c.session.send_request(_retry("mcpctl:aaaaaaaa.expired"), t.CallToolResult)
            # a call parked here is resumed here, as before
            first = await c.call_tool("elicit", {"message": "name?"})
            assert text_of(first) == "elicited: accept {'name': 'asked-again'}"
