"""A configurable upstream MCP server (official SDK, low-level Server, stdio) for gateway tests.

The server itself is built in `fault_app` (so tests can also run it in-process); this is its process.

Tools: echo, add, slow(seconds), crash (exits mid-call), hang, big (5 MB result), progress,
structured (outputSchema + structuredContent), fail (isError), add_tool (grows the list and
announces list_changed), garbage (writes junk to stdout, then answers), leak (echoes its
arguments into the result), plus N synthetic tools and any `--extra-tool NAME` (answers with the
server's `--name`, so two servers can offer one tool name and a test can tell who answered).
Also a resource, a template and a prompt.
Options give faults at startup: a start delay, a stderr flood, garbage on stdout, pagination,
handshake-only (refuses server/discover), an exit after the start delay (a slow failing start), a
marker file per started process, a `freeze` tool that blocks the whole process (it never answers again).

Asking the client (`--ask-tools`): `sample`, `elicit` (form, or `mode: url`), `roots` ask the client
during the call (related to it, as the SDKs do); `log` emits log messages during the call;
`touch` announces `notifications/resources/updated` for a URI; `state` reports what the server saw
(its logging level, its subscriptions, the roots it got outside any call). The server also answers
`logging/setLevel`, `resources/subscribe|unsubscribe` and `completion/complete`, and lists the
client's roots by itself when told they changed (`notifications/roots/list_changed`), then writes
what it got to `--marker-dir` (`roots-<name>-<n>`) and sends a log message outside any call.
`--large-tools`: `large_text`, `large_json`, `image` and `large_structured` (with an outputSchema)
return results of `size` characters (`payloads`).
`--modern-only` refuses the initialize handshake (a 2026-07-28-only server); then `ask_input`
answers with an input-required result until it gets the client's answers.
"""

from __future__ import annotations

from mcpctl import heap

heap.start()    # no collections while the SDK is imported, none at exit (mcpctl.heap); settled below

import os
import sys
import threading
import time
from pathlib import Path

import anyio
from mcp.server.stdio import stdio_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fault_app

opts = fault_app.parse(sys.argv[1:])

if opts.start_marker:
    Path(opts.start_marker, f"started-{os.getpid()}").touch()
if opts.exit_at_start:
    sys.exit(3)
if opts.start_delay:
    time.sleep(opts.start_delay)
if opts.exit_after_start_delay:
    sys.stderr.write("fault_server: failing after the start delay\n")
    sys.exit(3)

server = fault_app.build(opts)


def _flood() -> None:
    # A burst far larger than any pipe buffer (16 MB), then a steady trickle, bounded in total.
    chunk = (b"fault_server stderr flood " + b"#" * 230 + b"\n") * 64
    try:
        for _ in range(16 * 1024 * 1024 // len(chunk)):
            os.write(2, chunk)
        for _ in range(6000):
            os.write(2, chunk[:256])
            time.sleep(0.01)
    except OSError:
        return


def serve_http() -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and opts.require_token:
            got = dict(scope.get("headers") or []).get(b"x-test-token", b"").decode()
            if got != opts.require_token:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    if opts.http_fd:        # a socket the test bound to port 0 and listens on
        uvicorn.run(guarded, fd=opts.http_fd, log_level="warning")
    else:
        uvicorn.run(guarded, host="127.0.0.1", port=opts.http_port, log_level="warning")


async def main() -> None:
    if opts.stderr_flood:
        threading.Thread(target=_flood, daemon=True).start()
    if opts.garbage:
        os.write(1, b"garbage before the protocol starts {{{\n")
    async with stdio_server() as (r, w):
        await fault_app.serve(server, opts, r, w)

heap.settle()
if opts.http_port or opts.http_fd:
    serve_http()
else:
    anyio.run(main)
