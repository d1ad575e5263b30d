"""How mcpctl shows itself to an upstream server: one client, whoever connects.

A server may list different tools to different clients: the npm everything server adds its
sampling, elicitation and roots tools (13 -> 17) only for a client that offers those
capabilities. So every connection mcpctl makes (the gateway's long-lived ones, and the one-off
listings of `create server`, `tools list --refresh`, `tools search`, `favourites` and `doctor`)
goes through `client_options`: the same protocol era (`ERA`, the initialize handshake, in which
an upstream may ask the client things during a call), the same client info and the same
capabilities. The gateway passes its callbacks (asks relayed to the calling client, log
messages); a one-off listing has no client behind it, so the same capabilities are declared and
anything asked during the listing is refused with an error that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mcp.types as t

# The era asked for first: a server that refuses the handshake is then spoken to with "auto"
# (2026-07-28 server/discover; `Upstream.run`).
ERA: Final = "legacy"
_WHY: Final = "mcpctl is only listing this server (no client is connected to answer)"


async def _no_sampling(ctx: Any, params: t.CreateMessageRequestParams) -> t.ErrorData:
    return t.ErrorData(code=t.INVALID_REQUEST, message=f"sampling not available: {_WHY}")


async def _no_elicitation(ctx: Any, params: Any) -> t.ErrorData:
    return t.ErrorData(code=t.INVALID_REQUEST, message=f"elicitation not available: {_WHY}")


async def _no_roots(ctx: Any) -> t.ErrorData:
    return t.ErrorData(code=t.INVALID_REQUEST, message=f"roots not available: {_WHY}")


_REFUSE: Final[dict[str, Any]] = {"sampling_callback": _no_sampling, "elicitation_callback": _no_elicitation,
                                  "list_roots_callback": _no_roots}


def client_options(hooks: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `mcp.Client` keyword arguments of every upstream connection (except the transport,
    the mode and the message handler): client info, and the capabilities the gateway declares
    (sampling with context and tools, elicitation in both forms, roots with list_changed).
    `hooks` supplies the callbacks that answer (the gateway's `Asks.hooks` and `Relay.hooks`);
    any of the three ask callbacks it lacks refuses, so the declaration never depends on who
    connects."""
    from mcpctl import __version__

    options: dict[str, Any] = {**_REFUSE, **(hooks or {})}
    options["sampling_capabilities"] = t.SamplingCapability(context=t.SamplingContextCapability(),
                                                            tools=t.SamplingToolsCapability())
    options["client_info"] = t.Implementation(name="mcpctl", version=__version__)
    return options

