"""The HTTP gateway's probes and `serve --allow-host`, on real `mcpctl serve --transport http` processes.

`GET /healthz` (200 while the process serves) and `GET /readyz` (200 once the first lists would no
longer wait for an upstream and, with a database, the database answers; else 503 and a reason)
need no token and pass any Host (a probe's Host is a pod address), while /mcp still wants both.
With a database (tests/pg_support.py's cluster), /readyz is 503 while the database is stopped and
200 again once it is back. `--allow-host` (and the setting `serve.allowHosts`) adds Host names to
the DNS-rebinding check: a Service's name passes, any other name is still refused.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pg_support import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from gwkit import MCPCTL, SLACK, SRC_ENV, Kit, listening_port, stop

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def kit(tmp_home: Path) -> Iterator[Kit]:
    k = Kit(tmp_home)                   # after pg_db when a test asks for both: the kit writes to the database
    yield k
    assert k.leftovers() == []


@contextlib.contextmanager
def gateway(kit: Kit, *extra: str, env: dict[str, str] | None = None) -> Iterator[tuple[int, str]]:
    """`mcpctl serve --project p --transport http --port 0 EXTRA...`; yields (port, project token)."""
    kit.home.mkdir(parents=True, exist_ok=True)     # on a database nothing else may have made it
    err = kit.home / f"gw-{uuid.uuid4().hex[:6]}.stderr"
    with open(err, "w") as log:
        proc = subprocess.Popen([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", "0", *extra],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                env={**os.environ, **SRC_ENV, "MCPCTL_TEST_MARK": kit.mark, **(env or {})})
        try:
            port = listening_port(proc, err)
            yield port, (kit.home / "state" / "tokens" / "p.token").read_text().strip()
        finally:
            stop(proc, timeout=15)


def request(port: int, path: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            body: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30 * SLACK)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def until_status(port: int, path: str, want: int, timeout: float = 30.0) -> tuple[float, bytes]:
    """Poll `path` (every 0.1 s, bounded) until it answers `want`; (seconds it took, body)."""
    started = time.monotonic()
    deadline = started + timeout * SLACK
    while True:
        status, body = request(port, path)
        if status == want:
            return time.monotonic() - started, body
        assert time.monotonic() < deadline, f"{path} still {status} {body!r} after {timeout * SLACK:.0f}s"
        time.sleep(0.1)


def test_probes_need_no_token_and_tell_nothing_else(kit: Kit) -> None:
    kit.server("alpha", "--start-delay", "6", connect=60)
    kit.project("p", ["alpha"])
    with gateway(kit) as (port, token):
        assert request(port, "/healthz") == (200, b'{"status":"ok"}')
        status, body = request(port, "/readyz")              # alpha never listed: the first lists would wait
        assert status == 503 and json.loads(body) == {"status": "not ready",
                                                      "reason": "starting: upstreams not listed yet"}
        took, body = until_status(port, "/readyz", 200)
        assert body == b'{"status":"ready"}'
        print(f"/readyz 200 {took:.1f} s after listening (the upstream starts in 6 s)")
        # a probe's Host is the pod's address: the probes pass any Host, /mcp does not
        assert request(port, "/healthz", headers={"Host": "10.1.2.3:8765"})[0] == 200
        assert request(port, "/readyz", headers={"Host": "10.1.2.3:8765"})[0] == 200
        assert request(port, "/readyz", method="HEAD")[0] == 200
        assert request(port, "/readyz", method="POST", body="{}")[0] == 405
        # /mcp still wants the token, and the Host check still holds for it
        assert request(port, "/mcp", method="POST", body=INITIALIZE, headers=MCP_HEADERS)[0] == 401
        assert request(port, "/mcp")[0] == 401
        auth = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        assert request(port, "/mcp", method="POST", body=INITIALIZE, headers={**auth, "Host": "10.1.2.3"})[0] == 421
        assert request(port, "/mcp", method="POST", body=INITIALIZE, headers=auth)[0] == 200
        for path in ("/healthz/", "/ready", "/", "/mcp/readyz"):      # only the two exact paths are open
            assert request(port, path)[0] == 401, path
        assert request(port, "/readyz?verbose=1") == (200, b'{"status":"ready"}')


def test_readyz_follows_the_database(pg_db: str, pg_cluster: Cluster, kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    with gateway(kit, env={"MCPCTL_DATABASE_URL": pg_db}) as (port, _):
        until_status(port, "/readyz", 200)
        pg_cluster.stop()
        try:
            took_down, body = until_status(port, "/readyz", 503)
            assert json.loads(body) == {"status": "not ready", "reason": "database unreachable"}
            assert request(port, "/healthz")[0] == 200           # alive: a liveness probe must not restart it
        finally:
            pg_cluster.start()
        took_up, _ = until_status(port, "/readyz", 200)
    print(f"/readyz 503 {took_down:.2f} s after the database stopped, 200 {took_up:.2f} s after it started")


def _initialize(port: int, token: str, host: str, origin: str | None = None) -> int:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "Host": host}
    if origin is not None:
        headers["Origin"] = origin
    return request(port, "/mcp", method="POST", body=INITIALIZE, headers=headers)[0]


def test_allow_host_adds_service_names_and_refuses_the_rest(kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    with gateway(kit) as (port, token):
        assert _initialize(port, token, "mcpctl-gateway:8765") == 421          # loopback names only by default
    with gateway(kit, "--allow-host", "mcpctl-gateway,GW.Team.Internal", "--allow-host", "10.0.0.7") as (port, token):
        for host in ("mcpctl-gateway:8765", "mcpctl-gateway", "gw.team.internal:443", "10.0.0.7:1",
                     f"127.0.0.1:{port}"):
            assert _initialize(port, token, host) == 200, host
        assert _initialize(port, token, "mcpctl-gateway:8765", "https://mcpctl-gateway") == 200
        for host in ("GW.Team.Internal:443", "MCPCTL-Gateway", "LOCALHOST:1"):    # host names have no case
            assert _initialize(port, token, host) == 200, host                    # (before: the SDK's 421)
        assert _initialize(port, token, "Mcpctl-Gateway", "HTTPS://MCPCTL-GATEWAY:443") == 200
        for host in ("evil.example:8765", "mcpctl-gateway.evil.example", "mcpctl-gateway:80@evil", "10.0.0.8"):
            assert _initialize(port, token, host) in (400, 421), host
        assert _initialize(port, token, "mcpctl-gateway:8765", "http://evil.example") == 403
    settings = kit.home / "config" / "settings.yaml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("serve:\n  allowHosts: [from-settings]\n")
    with gateway(kit, "--allow-host", "from-flag") as (port, token):
        assert _initialize(port, token, "from-settings:8765") == 200
        assert _initialize(port, token, "from-flag:8765") == 200


@pytest.mark.parametrize(("argv", "says"), [
    (["--transport", "http", "--allow-host", "svc:8765"], "--allow-host 'svc:8765'"),
    (["--transport", "http", "--allow-host", "user@svc"], "--allow-host 'user@svc'"),
    (["--transport", "http", "--allow-host", "svc/path"], "--allow-host 'svc/path'"),
    (["--allow-host", "svc"], "--allow-host is for --transport http"),
])
def test_a_bad_allow_host_is_an_error_naming_the_flag(kit: Kit, argv: list[str], says: str) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    r = subprocess.run([MCPCTL, "serve", "--project", "p", "--port", "0", *argv], capture_output=True, text=True,
                       timeout=60 * SLACK, stdin=subprocess.DEVNULL, env={**os.environ, **SRC_ENV, "COLUMNS": "200"})
    assert r.returncode != 0
    assert says in r.stderr, r.stderr


def test_a_bad_allow_hosts_setting_names_the_file(kit: Kit) -> None:
    kit.server("alpha")
    kit.project("p", ["alpha"])
    settings = kit.home / "config" / "settings.yaml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("serve:\n  allowHosts: svc\n")
    r = subprocess.run([MCPCTL, "serve", "--project", "p", "--transport", "http", "--port", "0"], capture_output=True,
                       text=True, timeout=60 * SLACK, stdin=subprocess.DEVNULL, env={**os.environ, **SRC_ENV, "COLUMNS": "200"})
    assert r.returncode != 0
    assert "serve.allowHosts must be a list" in r.stderr and "settings.yaml" in r.stderr, r.stderr
