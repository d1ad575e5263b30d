"""Remote sign-in end to end: `mcpctl login` against a real authorization server and protected
MCP server (tests/servers/oauth_server.py, the SDK's server-side auth), then the gateway
serving through it while tokens expire, renew, get revoked and are signed in again."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from gwkit import SLACK, Kit, text_of, wait_tools
from oauthkit import leaks, login, mcpctl, oauth_upstream

pytestmark = pytest.mark.anyio


def _token_file(kit: Kit, name: str) -> os.PathLike[str]:
    return kit.home / "state" / "auth" / f"{name}.json"


async def _call_until(c: object, name: str, args: dict[str, str], ok: bool, timeout: float) -> object:
    """Call until the result's isError is `not ok` (bounded)."""
    with anyio.fail_after(timeout):
        while True:
            r = await c.call_tool(name, args)  # type: ignore[attr-defined]
            if bool(r.is_error) != ok:
                return r
            await anyio.sleep(0.05)


async def test_login_serve_renew_revoke_relogin_logout(kit: Kit) -> None:
    outputs: list[str] = []
    with oauth_upstream(kit, "remote", "--access-ttl", "2") as srv:
        kit.server("local")
        kit.project("p", ["remote", "local"])

        done = login(kit, "remote")
        outputs += [done.stdout, done.stderr]
        assert done.returncode == 0, done.stderr
        assert "signed in" in done.stderr and "renews itself" in done.stderr
        mode = stat.S_IMODE(os.stat(_token_file(kit, "remote")).st_mode)
        assert mode == 0o600
        stats = srv.get("/test/stats")
        assert stats["registrations"] == 1 and stats["code_exchanges"] == 1   # DCR, then the PKCE-checked code

        for cmd in (("get", "servers", "-o", "wide"), ("describe", "server", "remote"), ("get", "server", "remote", "-o", "yaml")):
            r = mcpctl(kit, *cmd)
            outputs += [r.stdout, r.stderr]
            assert r.returncode == 0, r.stderr
        assert "signed-in" in outputs[-6] and "Sign-in" in outputs[-4]

        async with kit.client("p") as c:
            await wait_tools(c, {"remote__echo", "local__echo"}, timeout=30 * SLACK)
            # the access token lives 2 s: calls for ~5 s cross at least two renewals, none fails
            end = time.monotonic() + 5
            n = 0
            while time.monotonic() < end:
                r = await c.call_tool("remote__echo", {"text": f"t{n}"})
                assert not r.is_error, text_of(r)
                assert text_of(r) == f"remote: t{n}"
                n += 1
                await anyio.sleep(0.1)
            assert srv.get("/test/stats")["refreshes"] >= 2

            # the authorization server revokes the refresh token: only this server goes down, with the hint
            srv.post("/test/revoke")
            r = await _call_until(c, "remote__echo", {"text": "x"}, ok=False, timeout=10 * SLACK)
            assert text_of(r) == "sign-in expired for remote: run mcpctl login remote"
            local = await c.call_tool("local__echo", {"text": "still here"})
            assert not local.is_error

            # a new login heals the running gateway, no restart
            again = login(kit, "remote")
            outputs += [again.stdout, again.stderr]
            assert again.returncode == 0, again.stderr
            healed = time.monotonic()
            r = await _call_until(c, "remote__echo", {"text": "back"}, ok=True, timeout=1.0 + 2 * SLACK)
            assert text_of(r) == "remote: back"
            assert time.monotonic() - healed < 1.0 + 2 * SLACK

        out = mcpctl(kit, "logout", "remote")
        outputs += [out.stdout, out.stderr]
        assert out.returncode == 0 and "signed out" in out.stderr
        assert not os.path.exists(_token_file(kit, "remote"))
        issued = srv.get("/test/issued")
        secrets = issued["tokens"] + issued["clients"]
        assert len(issued["tokens"]) >= 6
        assert leaks(kit.home, secrets, outputs) == []


async def test_tokens_refused_as_soon_as_renewed_are_not_a_lapsed_sign_in(kit: Kit) -> None:
    """Access tokens that live less than a round trip (here: refused as soon as issued) while every
    renewal succeeds: the server is reported down saying so, never "sign-in expired … run mcpctl
    login" (which would not help), and once its tokens live long enough again the gateway is back
    by itself, without a login (before: declared expired, waiting for a login forever)."""
    with oauth_upstream(kit, "remote", "--access-ttl", "2") as srv:
        kit.project("p", ["remote"])
        assert login(kit, "remote").returncode == 0
        async with kit.client("p") as c:
            await wait_tools(c, {"remote__echo"}, timeout=30 * SLACK)
            srv.post("/test/ttl", {"seconds": 0})
            await anyio.sleep(2.5)                      # the token the gateway holds has expired by now
            before = srv.get("/test/stats")["refreshes"]
            seen: list[str] = []
            with anyio.fail_after(20 * SLACK):
                while not seen or "just renewed" not in seen[-1]:
                    r = await c.call_tool("remote__echo", {"text": "x"})
                    assert r.is_error, text_of(r)
                    seen.append(text_of(r))
                    await anyio.sleep(0.05)
            assert not any("run mcpctl login" in said or "sign-in expired" in said for said in seen), seen
            assert srv.get("/test/stats")["refreshes"] - before >= 2            # the renewals did succeed
            srv.post("/test/ttl", {"seconds": 30})
            r = await _call_until(c, "remote__echo", {"text": "back"}, ok=True, timeout=60 * SLACK)
            assert text_of(r) == "remote: back"
        state = mcpctl(kit, "get", "servers", "-o", "wide")
        assert "expired" not in state.stdout, state.stdout


async def test_login_refused_by_the_user(kit: Kit) -> None:
    with oauth_upstream(kit, "remote", "--deny"):
        r = login(kit, "remote")
        assert r.returncode == 5, r.stderr
        assert "refused the sign-in to remote: the user said no" in r.stderr
        path = _token_file(kit, "remote")
        assert not os.path.exists(path) or "access_token" not in Path(path).read_text()


async def test_login_times_out_when_nobody_signs_in(kit: Kit) -> None:
    with oauth_upstream(kit, "remote"):
        t0 = time.monotonic()
        r = login(kit, "remote", browse=False, timeout=2)
        assert r.returncode == 5
        assert "no sign-in for remote within 2s (--timeout)" in r.stderr
        assert time.monotonic() - t0 < 2 + 10 * SLACK


async def test_gateway_never_signed_in_says_to_log_in(kit: Kit) -> None:
    with oauth_upstream(kit, "remote"):
        kit.server("local")
        kit.project("p", ["remote", "local"])
        async with kit.client("p") as c:
            await wait_tools(c, {"local__echo"}, timeout=30 * SLACK)
            # never listed, so nothing of it is presented; its status carries the hint
            with anyio.fail_after(10 * SLACK):
                while "run mcpctl login remote" not in (kit.store.status("Server", "remote").get("lastError") or ""):
                    await anyio.sleep(0.05)
            wide = mcpctl(kit, "get", "servers", "-o", "wide").stdout
            assert "not signed in to remote: run mcpctl login remote" in wide and "signed-out" in wide
            done = login(kit, "remote")
            assert done.returncode == 0, done.stderr
            await wait_tools(c, {"remote__echo"}, timeout=2.0 + 10 * SLACK)
            r = await _call_until(c, "remote__echo", {"text": "hi"}, ok=True, timeout=2.0 + 10 * SLACK)
            assert text_of(r) == "remote: hi"


def test_login_to_a_server_without_oauth_says_so(kit: Kit, ) -> None:
    from gwkit import http_upstream

    with http_upstream(kit, "plain"):
        res = kit.store.get("Server", "plain")
        res["spec"]["auth"] = {"type": "oauth"}
        kit.store.put(res)
        r = login(kit, "plain", browse=False, timeout=10)
        assert r.returncode == 5
        assert "did not ask for a sign-in" in r.stderr




def test_create_server_url_discovers_the_sign_in(kit: Kit) -> None:
    import json

    from oauthkit import start_oauth_server

    srv = start_oauth_server(kit)
    try:
        r = mcpctl(kit, "create", "server", "found", "--url", srv.url)
        assert r.returncode == 0, r.stderr
        assert "asks for an OAuth sign-in" in r.stderr and "run mcpctl login found" in r.stderr
        spec = json.loads(mcpctl(kit, "get", "server", "found", "-o", "json").stdout)["spec"]
        assert spec["transport"] == "http" and spec["auth"] == {"type": "oauth"}
        # a static header wins: no auth recorded
        r = mcpctl(kit, "create", "server", "static", "--url", srv.url, "--header", "Authorization=Bearer x",
                   "--no-check")
        assert r.returncode == 0, r.stderr
        spec = json.loads(mcpctl(kit, "get", "server", "static", "-o", "json").stdout)["spec"]
        assert "auth" not in spec
        done = login(kit, "found")
        assert done.returncode == 0, done.stderr
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=10 * SLACK)


async def test_concurrent_calls_after_expiry_refresh_once(kit: Kit) -> None:
    with oauth_upstream(kit, "remote", "--access-ttl", "2") as srv:
        kit.project("p", ["remote"])
        assert login(kit, "remote").returncode == 0
        async with kit.client("p") as c:
            await wait_tools(c, {"remote__echo"}, timeout=30 * SLACK)
            for round_ in range(2):
                await anyio.sleep(2.5)                  # the access token has expired by now
                before = srv.get("/test/stats")["refreshes"]
                results: list[object] = []

                async def call(i: int, results: list[object] = results, round_: int = round_) -> None:
                    results.append(await c.call_tool("remote__echo", {"text": f"{round_}-{i}"}))

                async with anyio.create_task_group() as tg:
                    for i in range(8):
                        tg.start_soon(call, i)
                assert all(not r.is_error for r in results), [text_of(r) for r in results]  # type: ignore[attr-defined]
                assert srv.get("/test/stats")["refreshes"] - before == 1


async def test_sse_server_behind_a_sign_in(kit: Kit) -> None:
    """The legacy HTTP+SSE transport signs in and renews the same way."""
    with oauth_upstream(kit, "legacy", "--sse", "--access-ttl", "2") as srv:
        kit.project("p", ["legacy"])
        done = login(kit, "legacy")
        assert done.returncode == 0, done.stderr
        async with kit.client("p") as c:
            await wait_tools(c, {"legacy__echo"}, timeout=30 * SLACK)
            r = await c.call_tool("legacy__echo", {"text": "old"})
            assert text_of(r) == "legacy: old", text_of(r)
            await anyio.sleep(2.5)
            r = await c.call_tool("legacy__echo", {"text": "renewed"})
            assert not r.is_error and text_of(r) == "legacy: renewed", text_of(r)
        assert srv.get("/test/stats")["refreshes"] >= 1


async def test_a_callback_with_another_state_is_refused_and_the_login_waits_for_the_real_one(kit: Kit) -> None:
    """Any local process can reach the loopback callback: a request without this login's state (a
    forged code, a forged denial, nothing) is answered 400 and ignored, and the login still takes
    the real redirect (before: the first such request ended the login with a state mismatch)."""
    with oauth_upstream(kit, "remote") as srv:
        r = login(kit, "remote", tamper=True)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("ignored a request to the sign-in callback") == 4, r.stderr
        assert "forged" not in r.stderr and "abc" not in r.stderr
        assert srv.get("/test/stats")["code_exchanges"] == 1


@contextlib.contextmanager
def _bare_server(answers: Callable[[str, str], tuple[int, dict[str, str], str] | None]) -> Iterator[str]:
    """A loopback server whose /mcp asks for a Bearer sign-in (401 pointing at its protected-resource
    metadata) and whose other paths answer `answers(path, base)` (status, headers, body) or 404:
    for servers whose OAuth metadata is missing or names someone else. Yields its base URL."""
    import socket
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    base = ""

    async def anything(request: Request) -> Response:
        if request.url.path == "/mcp":
            return Response("no", status_code=401, headers={"WWW-Authenticate": 'Bearer realm="x"'})
        got = answers(request.url.path, base)
        if got is None:
            return Response("not found", status_code=404)
        status, headers, body = got
        return Response(body, status_code=status, headers=headers, media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10 * SLACK)


def _bare(kit: Kit, name: str, base: str) -> None:
    kit.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                   "spec": {"transport": "http", "url": f"{base}/mcp", "auth": {"type": "oauth"}}})


def test_login_to_a_server_with_a_challenge_but_no_oauth_metadata(kit: Kit) -> None:
    """A 401 with a Bearer challenge, and no metadata anywhere: said so, nothing stored."""
    with _bare_server(lambda path, base: None) as base:
        _bare(kit, "bare", base)
        r = login(kit, "bare", browse=False, timeout=10)
        assert r.returncode == 5
        assert "publishes no OAuth metadata" in r.stderr, r.stderr
        assert not os.path.exists(_token_file(kit, "bare")) or "access_token" not in Path(_token_file(kit, "bare")).read_text()


def test_oauth_metadata_naming_another_resource_or_issuer_is_refused_as_that(kit: Kit) -> None:
    """Metadata that names another protected resource (RFC 9728 / 8707), or an authorization server
    whose metadata names another issuer (RFC 8414): refused, and said to be that mismatch, naming
    both (before: "publishes no OAuth metadata")."""
    def other_resource(path: str, base: str) -> tuple[int, dict[str, str], str] | None:
        if path.startswith("/.well-known/oauth-protected-resource"):
            return 200, {}, json.dumps({"resource": "https://other.example/mcp", "authorization_servers": [base]})
        return None

    def other_issuer(path: str, base: str) -> tuple[int, dict[str, str], str] | None:
        if path.startswith("/.well-known/oauth-protected-resource"):
            return 200, {}, json.dumps({"resource": f"{base}/mcp", "authorization_servers": [base]})
        if path.startswith(("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")):
            return 200, {}, json.dumps({"issuer": "https://evil.example", "authorization_endpoint": f"{base}/authorize",
                                        "token_endpoint": f"{base}/token", "response_types_supported": ["code"]})
        return None

    with _bare_server(other_resource) as base:
        _bare(kit, "elsewhere", base)
        r = login(kit, "elsewhere", browse=False, timeout=10)
        assert r.returncode == 5 and "publishes no OAuth metadata" not in r.stderr, r.stderr
        assert "names another protected resource: https://other.example/mcp, not " in r.stderr, r.stderr
    with _bare_server(other_issuer) as base:
        _bare(kit, "spoofed", base)
        r = login(kit, "spoofed", browse=False, timeout=10)
        assert r.returncode == 5 and "publishes no OAuth metadata" not in r.stderr, r.stderr
        assert "names another issuer: https://evil.example, not " in r.stderr, r.stderr
    assert not os.path.exists(_token_file(kit, "spoofed")) and not os.path.exists(_token_file(kit, "elsewhere"))


def test_a_refused_sign_in_is_said_expired_everywhere_with_the_login_to_run(kit: Kit) -> None:
    """Issue 32: after the server refused the stored sign-in, `get servers -o wide` still said
    `signed-in (until …)` beside `sign-in expired`, and `doctor` said "✔ signed in" and pointed at an
    upstream stderr log that an HTTP server does not have."""
    with oauth_upstream(kit, "remote", "--access-ttl", "3600") as srv:
        kit.project("p", ["remote"])
        assert login(kit, "remote").returncode == 0
        assert "signed-in (until" in mcpctl(kit, "get", "servers", "-o", "wide").stdout
        srv.post("/test/revoke?access=1")                  # the server refuses the tokens and their renewal
        doctor = mcpctl(kit, "doctor", "--project", "p")
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        lines = doctor.stdout.splitlines()
        at = lines.index("server/remote")
        said = "\n".join(lines[at:at + 8])
        assert "✘ sign-in expired (refused by the server) (OAuth)" in said and "signed in (" not in said, said
        assert "→ mcpctl login remote" in said and "upstreams" not in doctor.stdout, doctor.stdout
        wide = mcpctl(kit, "get", "servers", "-o", "wide").stdout
        assert "expired (refused by the server)" in wide and "signed-in" not in wide, wide
        described = mcpctl(kit, "describe", "server", "remote").stdout
        assert "expired (refused by the server): sign in again (mcpctl login remote)" in described, described
        # a new sign-in is believed at once
        assert login(kit, "remote").returncode == 0
        assert "signed-in (until" in mcpctl(kit, "get", "servers", "-o", "wide").stdout
