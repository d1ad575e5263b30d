from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


StdioConnect = Callable[..., AbstractAsyncContextManager[Any]]


@pytest.fixture
def stdio_example(tmp_path: Path) -> StdioConnect:
    """Connect the SDK Client to `python -m mcpctl.examples.<name>` over real stdio."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    @asynccontextmanager
    async def connect(name: str, *args: str, mode: str = "legacy",
                      env: dict[str, str] | None = None) -> AsyncIterator[Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", f"mcpctl.examples.{name}", *args],
                                       env=env)
        with open(tmp_path / f"{name}.stderr", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=20) as client:
                yield client

    return connect
