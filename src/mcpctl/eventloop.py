"""The event loop a gateway runs on: uvloop's where it is installed, else asyncio's own.

A relayed call is a handful of loop turns in the gateway (the client's line read, the upstream's
request written, its answer read, the client's answer written), and with asyncio's loop written in
Python each turn is some twenty Python calls (`_run_once`, the selector, the clock, handles and
their contexts) besides the pipeline's own: about half of the 480 Python calls a sequential call
cost the gateway's event-loop thread. uvloop runs that machinery in C (libuv) behind the same
asyncio API: 245 Python calls a call, and a relayed call's CPU and latency lower with it
(docs/internals.md, "The call path's CPU"). It is a dependency on Linux and macOS (binary wheels);
elsewhere, or with `MCPCTL_EVENT_LOOP=asyncio`, the gateway runs on asyncio's loop as before (to
compare the two, or to rule the loop out while debugging). `MCPCTL_EVENT_LOOP=uvloop` insists on
uvloop and fails at start when it is not installed, rather than quietly running without it.

Only `mcpctl serve` (a gateway, the shared daemon) chooses: the CLI's own short runs and the
in-process tests stay on asyncio's loop.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Any, Final

from mcpctl.errors import MCPCtlError

ENV: Final = "MCPCTL_EVENT_LOOP"
CHOICES: Final = ("uvloop", "asyncio")


def chosen(environ: Mapping[str, str] | None = None) -> str:
    """The loop a gateway will run on, "uvloop" or "asyncio", as `MCPCTL_EVENT_LOOP` and what is installed say."""
    raw = (os.environ if environ is None else environ).get(ENV, "")
    choice = raw.strip().lower()
    if choice not in ("", *CHOICES):
        raise MCPCtlError(f"{ENV}={raw!r}: not an event loop mcpctl knows",
                          hint=f"set it to one of {', '.join(CHOICES)}, or unset it (uvloop where installed)")
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise MCPCtlError(f"{ENV}=uvloop, but uvloop is not installed in {os.path.dirname(os.__file__)}",
                          hint="install it (pip install uvloop), or unset the variable to run on asyncio's loop")
    if choice == "asyncio" or not installed:
        return "asyncio"
    return "uvloop"


def backend_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`anyio.run`'s backend options for the chosen loop."""
    return {"use_uvloop": chosen(environ) == "uvloop"}
