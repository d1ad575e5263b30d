"""Helpers for the OAuth tests: a real authorization + protected MCP server, and `mcpctl login`
driven end to end with a scripted browser (an HTTP client that follows the sign-in URL)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gwkit import MCPCTL, REPO, SLACK, SRC_ENV, Kit, wait_listening

OAUTH_SERVER = REPO / "tests" / "servers" / "oauth_server.py"
_URL_RE = re.compile(r"http://127\.0\.0\.1:\d+/authorize\?\S+")


@dataclass
class OAuthServer:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    sse: bool = False

    @property
    def url(self) -> str:
        return f"{self.base}/sse" if self.sse else f"{self.base}/mcp"

    def get(self, path: str) -> Any:
        import httpx2

        return httpx2.get(self.base + path, timeout=10 * SLACK).json()

    def post(self, path: str, body: Any = None) -> Any:
        import httpx2

        return httpx2.post(self.base + path, json=body, timeout=10 * SLACK).json()


def start_oauth_server(kit: Kit, *args: str) -> OAuthServer:
    proc = subprocess.Popen([sys.executable, str(OAUTH_SERVER), "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "MCPCTL_TEST_MARK": kit.mark})
    assert proc.stdout is not None
    deadline = time.monotonic() + 20 * SLACK
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, "the OAuth server did not report its port"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 64)
            assert chunk, "the OAuth server exited before reporting its port"
            line += chunk
    port = int(line)
    wait_listening(port, proc, "the OAuth server")
    return OAuthServer(proc, port, sse="--sse" in args)


@contextlib.contextmanager
def oauth_upstream(kit: Kit, name: str, *args: str, auth: dict[str, Any] | None = None) -> Iterator[OAuthServer]:
    srv = start_oauth_server(kit, "--name", name, *args)
    kit.store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                   "spec": {"transport": "sse" if srv.sse else "http", "url": srv.url, "auth": auth or {"type": "oauth"},
                            "timeouts": {"connect": 10, "call": 30}}})
    try:
        yield srv
    finally:
        if srv.proc.poll() is None:
            srv.proc.terminate()
            try:
                srv.proc.wait(timeout=10 * SLACK)
            except subprocess.TimeoutExpired:
                srv.proc.kill()
                srv.proc.wait()


def env(kit: Kit) -> dict[str, str]:
    return {**os.environ, "MCPCTL_HOME": str(kit.home), **SRC_ENV}


def mcpctl(kit: Kit, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPCTL, *args], capture_output=True, text=True, env=env(kit), timeout=timeout * SLACK)


def login(kit: Kit, name: str, *extra: str, browse: bool = True, timeout: float = 30.0,
          tamper: bool = False) -> subprocess.CompletedProcess[str]:
    """`mcpctl login NAME --no-browser`; the scripted browser opens the printed URL and follows the
    redirects to the loopback callback (unless `browse` is False; `tamper`: first another local
    process's requests to the callback, with another state, a denial with another state and none;
    each must be refused, then the real redirect)."""
    import httpx2

    err_path = kit.home / f"login-{name}-{time.monotonic_ns()}.err"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([MCPCTL, "login", name, "--no-browser", "--timeout", str(timeout), *extra],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env(kit))
    deadline = time.monotonic() + timeout * SLACK
    url = None
    while browse and url is None:
        m = _URL_RE.search(err_path.read_text())
        if m:
            url = m.group(0)
            break
        if proc.poll() is not None:
            break
        assert time.monotonic() < deadline, "mcpctl login printed no sign-in URL"
        time.sleep(0.05)
    if url is not None and tamper:
        hop = httpx2.get(url, follow_redirects=False, timeout=10 * SLACK)
        real = hop.headers["location"]
        callback = real.split("?", 1)[0]
        for forged in (re.sub(r"state=[^&]+", "state=forged", real), f"{callback}?error=access_denied&state=x",
                       f"{callback}?code=abc", callback):
            assert httpx2.get(forged, timeout=10 * SLACK).status_code == 400, forged
        assert httpx2.get(real, timeout=10 * SLACK).status_code == 200
    elif url is not None:
        page = httpx2.get(url, follow_redirects=True, timeout=10 * SLACK)
        assert page.status_code == 200, page.text
    out, _ = proc.communicate(timeout=timeout * SLACK + 10)
    text = err_path.read_text()
    err_path.unlink()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, text)


def files_under(root: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(root):
        for n in names:
            yield Path(dirpath) / n


def leaks(root: Path, secrets: list[str], texts: list[str]) -> list[str]:
    """Where any of `secrets` appears: a file under `root`, or one of `texts` (command output)."""
    found = []
    for p in files_under(root):
        try:
            data = p.read_bytes()
        except OSError:
            continue
        found += [f"{p}: {s[:6]}…" for s in secrets if s.encode() in data]
    found += [f"output #{i}: {s[:6]}…" for i, t in enumerate(texts) for s in secrets if s in t]
    return found
