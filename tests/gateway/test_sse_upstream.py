"""Legacy HTTP+SSE upstreams (`transport: sse`): a real SSE-only server (the SDK's
`SseServerTransport`, tests/servers/sse_server.py) behind `mcpctl serve` (stdio front)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest
from gwkit import MCPCTL, REPO, SLACK, Kit, http_upstream, text_of, wait_listening, wait_tools

pytestmark = pytest.mark.anyio

SSE_SERVER = REPO / "tests" / "servers" / "sse_server.py"


def start_sse(kit: Kit, port: int = 0, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """sse_server.py on loopback `port` (0: a free one); returns the process and its bound port."""
    proc = subprocess.Popen([sys.executable, str(SSE_SERVER), "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    assert proc.stdout is not None
    deadline = time.monotonic() + 20 * SLACK
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, "the SSE server did not report its port"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 64)
            assert chunk, "the SSE server exited before reporting its port"
            line += chunk
    bound = int(line)
    wait_listening(bound, proc, "the SSE server")
    return proc, bound


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10 * SLACK)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def sse_upstream(kit: Kit, name: str, *args: str, headers: dict[str, str] | None = None,
                 call: float = 30.0) -> Iterator[list[subprocess.Popen[bytes]]]:
    """An SSE-only upstream registered as `transport: sse`; yields [process] (a test may replace it)."""
    proc, port = start_sse(kit, 0, *args)
    procs = [proc]
    kit.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                   "spec": {"transport": "sse", "url": f"http://127.0.0.1:{port}/sse", "headers": headers or {},
                            "timeouts": {"connect": 10, "call": call}}})
    try:
        yield procs
    finally:
        for p in procs:
            stop(p)


async def test_list_call_and_progress_through_the_gateway(kit: Kit) -> None:
    """list, call (headers with an ${env:} reference reach the server), progress reaches the client."""
    with sse_upstream(kit, "legacy", "--require-header", "X-Key=k-42", headers={"X-Key": "${env:SSE_KEY}"}):
        kit.project("p", ["legacy"])
        params = kit.params("p")
        params.env["SSE_KEY"] = "k-42"
        from mcp import Client

        async with Client(params, mode="legacy") as c:
            await wait_tools(c, {"legacy__echo", "legacy__progress"}, timeout=30 * SLACK)
            r = await c.session.call_tool("legacy__echo", {"text": "over sse"})
            assert not r.is_error and text_of(r) == "sse: over sse"
            seen: list[tuple[float, str | None]] = []

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                seen.append((p, msg))

            r = await c.session.call_tool("legacy__progress", {}, progress_callback=on_progress)
            assert text_of(r) == "done"
            assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
    status = kit.store.status("Server", "legacy")
    assert status["serverInfo"]["name"] == "sse"
    assert kit.leftovers() == []


async def test_a_killed_sse_upstream_gives_is_error_and_comes_back_on_its_port(kit: Kit) -> None:
    with sse_upstream(kit, "legacy") as procs:
        kit.project("p", ["legacy"])
        async with kit.client("p") as c:
            await wait_tools(c, {"legacy__slow"}, timeout=30 * SLACK)
            started = anyio.Event()

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                started.set()

            result: list[object] = []

            async def call() -> None:
                result.append(await c.session.call_tool("legacy__slow", {"seconds": 600},
                                                        progress_callback=on_progress))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(20 * SLACK):
                    await started.wait()
                port = int(kit.store.get("Server", "legacy")["spec"]["url"].split(":")[2].split("/")[0])
                procs[0].send_signal(signal.SIGKILL)
                procs[0].wait()
                with anyio.fail_after(30 * SLACK):
                    while not result:
                        await anyio.sleep(0.05)
            r = result[0]
            assert getattr(r, "is_error", False), r
            # back on the same port: the gateway reconnects by itself and calls succeed again
            proc, _ = start_sse(kit, port)
            procs.append(proc)
            with anyio.fail_after(60 * SLACK):
                while True:
                    r2 = await c.session.call_tool("legacy__echo", {"text": "again"})
                    if not r2.is_error:
                        break
                    await anyio.sleep(0.2)
            assert text_of(r2) == "sse: again"
    outcomes = [(row.canonical_id, row.outcome) for row in _rows("p")]
    assert outcomes[0] == ("legacy/slow", "upstream_down") and outcomes[-1] == ("legacy/echo", "ok"), outcomes
    assert kit.leftovers() == []


def _rows(project: str) -> list:
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:
        return list(log.query(project=project))


async def test_the_call_timeout_holds_for_an_sse_upstream(kit: Kit) -> None:
    with sse_upstream(kit, "legacy", call=1.0):
        kit.project("p", ["legacy"])
        async with kit.client("p") as c:
            await wait_tools(c, {"legacy__slow"}, timeout=30 * SLACK)
            with anyio.fail_after(30 * SLACK):
                r = await c.session.call_tool("legacy__slow", {"seconds": 600})
            assert r.is_error and "1" in text_of(r), text_of(r)
            r = await c.session.call_tool("legacy__echo", {"text": "still there"})
            assert text_of(r) == "sse: still there"
    assert [(row.canonical_id, row.outcome) for row in _rows("p")] == [("legacy/slow", "timeout"), ("legacy/echo", "ok")]
    assert kit.leftovers() == []


def _mcpctl(kit: Kit, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPCTL, *args], capture_output=True, text=True, timeout=120 * SLACK,
                          env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})


def test_create_server_url_falls_back_to_sse_and_get_describe_doctor_show_it(kit: Kit) -> None:
    """`create server --url` POSTs initialize, gets 405 and finds the `endpoint` event: transport sse;
    a streamable-HTTP URL stays http; `--transport sse` forces it without asking."""
    proc, port = start_sse(kit)
    try:
        url = f"http://127.0.0.1:{port}/sse"
        r = _mcpctl(kit, "create", "server", "legacy", "--url", url)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "server/legacy created\n"
        assert "listed: 3 tools" in r.stderr and "transport sse" in r.stderr
        spec = kit.store.get("Server", "legacy")["spec"]
        assert (spec["transport"], spec["url"]) == ("sse", url)
        r = _mcpctl(kit, "create", "server", "forced", "--url", "http://127.0.0.1:9/events", "--transport", "sse",
                    "--no-check")
        assert r.returncode == 0, r.stderr
        assert kit.store.get("Server", "forced")["spec"]["transport"] == "sse"
        got = _mcpctl(kit, "get", "servers")
        assert re.search(rf"legacy\s+sse\s+{re.escape(url)}", got.stdout), got.stdout
        described = _mcpctl(kit, "describe", "server", "legacy")
        assert re.search(r"Transport:\s+sse", described.stdout) and url in described.stdout, described.stdout
        kit.project("p", ["legacy"])
        doc = _mcpctl(kit, "doctor", "--project", "p")
        said = " ".join(doc.stdout.split())
        assert f"legacy HTTP+SSE transport: the event stream at {url}; deprecated by the 2026-07-28 protocol" \
            in said, doc.stdout
        assert "streamable HTTP replaces it" in said and said.count("deprecated by the 2026-07-28") == 1, said
        assert "listed: 3 tool(s)" in doc.stdout, doc.stdout
    finally:
        stop(proc)
    with http_upstream(kit, "web"):
        web_url = kit.store.get("Server", "web")["spec"]["url"]
        r = _mcpctl(kit, "create", "server", "web2", "--url", web_url)
        assert r.returncode == 0, r.stderr
        assert kit.store.get("Server", "web2")["spec"]["transport"] == "http"
        assert "listed:" in r.stderr and "transport sse" not in r.stderr


def test_sse_servers_are_validated_like_http(kit: Kit) -> None:
    r = _mcpctl(kit, "create", "server", "x", "--url", "http://127.0.0.1:9/sse", "--transport", "ws")
    assert r.returncode != 0 and "--transport" in r.stderr
    for spec, message in (({"transport": "sse"}, "uses transport sse but has no spec.url"),
                          ({"transport": "sse", "url": "http://h/sse", "command": "x"}, "uses sse")):
        doc = json.dumps({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "bad"}, "spec": spec})
        r = subprocess.run([MCPCTL, "apply", "-f", "-"], input=doc, capture_output=True, text=True,
                           timeout=60 * SLACK)
        assert r.returncode != 0 and message in r.stderr, r.stderr


async def test_import_brings_an_sse_entry_in_and_the_gateway_serves_it(kit: Kit) -> None:
    """A Cursor entry whose URL ends in /sse, with its key written in the file: imported as
    transport sse, the key moved to a 0600 file, and the gateway reaches the server with it."""
    key = "sk-sseImportKey0123456789abcdef"
    proc, port = start_sse(kit, 0, "--require-header", f"X-Api-Key={key}")
    try:
        kit.home.mkdir(parents=True, exist_ok=True)
        cfg = kit.home / "cursor-mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {"Legacy": {
            "url": f"http://127.0.0.1:{port}/sse", "headers": {"X-Api-Key": key}}}}))
        r = _mcpctl(kit, "import", "cursor", "--file", str(cfg), "--project", "p")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "server/legacy created" in r.stdout and "not imported" not in r.stdout, r.stdout
        spec = kit.store.get("Server", "legacy")["spec"]
        assert spec["transport"] == "sse" and spec["url"] == f"http://127.0.0.1:{port}/sse"
        assert spec["headers"]["X-Api-Key"].startswith("${file:") and key not in json.dumps(spec)
        async with kit.client("p") as c:
            await wait_tools(c, {"legacy__echo"}, timeout=30 * SLACK)
            res = await c.session.call_tool("legacy__echo", {"text": "imported"})
            assert text_of(res) == "sse: imported"
    finally:
        stop(proc)
    assert kit.leftovers() == []


@contextlib.contextmanager
def _hostile_sse(mode: str) -> Iterator[int]:
    """An SSE server that answers every GET with an `endpoint` on another origin (`origin`) or a
    `message` that is not JSON (`garbage`), then ends the stream: the gateway reconnects to it again
    and again. Yields its port."""
    import socket
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def sse(request: Request) -> Response:
        async def events() -> Iterator[str]:  # type: ignore[misc]
            if mode == "origin":
                yield "event: endpoint\ndata: http://evil.example:1/messages/?session_id=x\n\n"
            else:
                yield "event: endpoint\ndata: /messages/?session_id=x\n\n"
                yield "event: message\ndata: {not json\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    async def other(request: Request) -> Response:
        return Response(status_code=202 if request.url.path.startswith("/messages") else 405)

    app = Starlette(routes=[Route("/sse", sse, methods=["GET"]), Route("/{p:path}", other, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("mode", ["origin", "garbage"])
def test_a_hostile_sse_upstream_costs_one_line_per_reconnect_never_a_traceback(kit: Kit, mode: str) -> None:
    """What a hostile SSE server sends (an endpoint on another origin, a message that is not JSON) is
    logged as single lines per reconnect (before: the SDK's full traceback each time)."""
    with _hostile_sse(mode) as port:
        kit.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "bad"},
                       "spec": {"transport": "sse", "url": f"http://127.0.0.1:{port}/sse",
                                "timeouts": {"connect": 2, "call": 5}}})
        kit.project("p", ["bad"])
        err = kit.home / "serve.err"
        with open(err, "w") as f:
            proc = subprocess.Popen([MCPCTL, "serve", "--project", "p"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=f,
                                    env={**os.environ, "MCPCTL_HOME": str(kit.home), "MCPCTL_TEST_MARK": kit.mark})
        try:
            deadline = time.monotonic() + 30 * SLACK
            while len(re.findall(r"upstream bad (?:down|did not)", err.read_text())) < 2:
                assert time.monotonic() < deadline and proc.poll() is None, err.read_text()[-3000:]
                time.sleep(0.1)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
    text = err.read_text()
    assert "Traceback" not in text, text[-3000:]
    lines = [line for line in text.splitlines() if line.strip()]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line) for line in lines), text[-3000:]
    said = "Endpoint origin does not match" if mode == "origin" else "ValidationError"
    assert said in text, text[-3000:]
