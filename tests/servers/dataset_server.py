"""An upstream MCP server (official SDK, low-level Server, stdio) that serves one dataset server's tools.

    python tests/servers/dataset_server.py --tools-file PATH --server NAME

`PATH` is a tool-retrieval dataset in the normalised JSON Lines format (one
`{"server", "name", "description", "inputSchema"}` object a line, e.g. LiveMCPBench's
`tools.jsonl`). The server lists exactly the tools whose `server` field equals `NAME`, with
their real name, description and input schema (an empty `{}` schema becomes
`{"type": "object"}`); a call answers with a short text naming the tool. Used by
`benchmarks/bench_presentation.py` to put real tool definitions behind real MCP servers. The server
itself is built in `dataset_app` (tests also run it in-process).
"""

from __future__ import annotations

from mcpctl import heap

heap.start()    # no collections while the SDK is imported, none at exit (mcpctl.heap); settled below

import sys
from pathlib import Path

import anyio
from mcp.server.stdio import stdio_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dataset_app

opts = dataset_app.parse(sys.argv[1:])
try:
    server = dataset_app.build(opts)
except ValueError as e:
    sys.exit(str(e))


async def main() -> None:
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())


heap.settle()
anyio.run(main)
