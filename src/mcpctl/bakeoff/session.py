"""One gateway session: `mcpctl serve --project P` started as a client starts it (a subprocess over
stdio, the SDK's `Client`), in an arm's home; what it lists, what it instructs, and its calls."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpctl.errors import UpstreamError

if TYPE_CHECKING:
    from mcp import Client

    from mcpctl.bakeoff.workspace import Arm, Workspace

CALL_TIMEOUT_S: Final = 120.0
POLL_S: Final = 0.2


@dataclass
class Outcome:
    text: str
    is_error: bool


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    @property
    def instructions(self) -> str:
        return self.client.instructions or ""

    async def tools(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):                 # bounded: a gateway pages in hundreds
            page = await self.client.list_tools(cursor=cursor, cache_mode="refresh")
            out += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def call(self, name: str, arguments: dict[str, Any]) -> Outcome:
        from mcp import MCPError

        try:
            r = await self.client.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT_S)
        except MCPError as e:
            return Outcome(f"error {e.code}: {e.message}", True)
        except RuntimeError as e:            # e.g. structured content the SDK could not validate
            return Outcome(f"error: {e}", True)
        import mcp.types as t

        parts = [c.text for c in r.content if isinstance(c, t.TextContent)]
        return Outcome("\n".join(parts) if parts else "(no text content)", bool(r.is_error))


@contextlib.asynccontextmanager
async def open_session(ws: Workspace, arm: Arm, *, ready_timeout: float = 120.0) -> AsyncIterator[Session]:
    """A session on the arm's gateway, once every server of the project has been listed (bounded)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if k != "MCPCTL_DATABASE_URL"}    # the arm's files
    env["MCPCTL_HOME"] = str(arm.home)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpctl", "serve", "--project", arm.project],
                                   env=env)
    with open(arm.home / "gateway-stderr.log", "a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy",
                          read_timeout_seconds=CALL_TIMEOUT_S) as client:
            session = Session(client)
            await session.tools()
            deadline = time.monotonic() + ready_timeout
            while missing := ws.missing_servers(arm):
                if time.monotonic() > deadline:
                    raise UpstreamError(f"{arm.presentation}: servers never listed within {ready_timeout:.0f} s: "
                                        f"{', '.join(missing[:5])}",
                                        hint=f"their stderr is under {arm.home}; check them with mcpctl doctor")
                await anyio.sleep(POLL_S)
            yield session
