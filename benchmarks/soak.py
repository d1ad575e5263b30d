"""Soak the HTTP gateway under mixed, hostile load and check nothing is lost or crossed (not a test).

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--kill-every 30] [--flood 300] [--json out.json]

For `--minutes` (default 10): two HTTP clients (one per protocol era, each with its own token)
call tools with unique nonces, list tools and search, 8 requests in flight each; one upstream
process is killed (SIGKILL) every `--kill-every` seconds and restarted by the gateway; a
junk-socket flood (unfinished request heads, idle connections) keeps `--flood` sockets open
against the gateway (0: no flood). Each client reconnect is printed with its cause (the
exception the connection ended with). At the end it checks, and prints PASS/FAIL for each:

- 0 misrouted responses (every answered echo carries its own nonce; a call that reached a dead
  upstream is an `isError` naming it, never another call's result); a client whose connection
  the flood broke reconnects, as a real client does, and the reconnects are reported;
- 0 processes left behind after the gateway exits (upstreams, their children, guards);
- invocation log rows == tools/call requests answered (calls and searches; upstream kills are not
  gateway kills, so no loss window applies), plus the calls whose answers were lost with a
  connection the flood broke (logged: they were made; at most 8 per reconnect);
- gateway RSS at the end within 10 % of its RSS after warm-up (RSS each minute is printed too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MCPCTL = str(Path(sys.executable).parent / "mcpctl")
FAULT = REPO / "tests" / "servers" / "fault_server.py"


def _mark_pids(mark: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if f"MCPCTL_TEST_MARK={mark}".encode() in (d / "environ").read_bytes():
                stat = (d / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(d.name))
        except OSError:
            continue
    return pids


def _upstream_pids(mark: str) -> list[int]:
    out = []
    for pid in _mark_pids(mark):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"fault_server.py" in cmd:
            out.append(pid)
    return out


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def _setup(home: Path, mark: str) -> tuple[str, str]:
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    code = (
        "import json,sys\nfrom mcpctl.resources.store import Store\nst=Store(); mark=sys.argv[1]\n"
        "for n in ('alpha','beta'):\n"
        "    st.put({'apiVersion':'mcpctl/v1','kind':'Server','metadata':{'name':n},'spec':{'command':sys.executable,"
        f"'args':['{FAULT}','--name',n],'env':{{'MCPCTL_TEST_MARK':mark}},'timeouts':{{'connect':20,'call':10}}}}}})\n"
        "st.put({'apiVersion':'mcpctl/v1','kind':'Project','metadata':{'name':'soak'},"
        "'spec':{'servers':['alpha','beta'],'search':{'recordQueries':True},"
        "'profiles':{'caller':{'deny':['alpha/crash','beta/crash','alpha/hang','beta/hang']}}}})\n"
    )
    subprocess.run([sys.executable, "-c", code, mark], env=env, check=True)
    tokens = []
    for name in ("era-a", "era-b"):
        done = subprocess.run([MCPCTL, "create", "token", name, "--project", "soak", "--profile", "caller"],
                              env=env, check=True, capture_output=True, text=True)
        tokens.append(done.stdout.strip())
    return tokens[0], tokens[1]


FLOOD = """
import socket, sys, time
port, target = int(sys.argv[1]), int(sys.argv[2])
held, opened = [], 0
while True:
    held = [s for s in held if s.fileno() != -1]
    while len(held) < target:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            if opened % 2:
                s.sendall(f"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n".encode())
            held.append(s)
            opened += 1
        except OSError:
            break
    print(opened, flush=True)
    time.sleep(1.0)
    alive = []
    for s in held:       # the gateway closes junk after its header timeout: reopen that many
        try:
            s.setblocking(False)
            if s.recv(1, socket.MSG_PEEK) == b"":
                s.close()
                continue
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        alive.append(s)
    held = alive
"""


class Flood:
    """Holds junk sockets open against the gateway (unfinished heads and idle connections), from
    its own process, as an attacker would."""

    def __init__(self, port: int, target: int = 300) -> None:
        self.port, self.target = port, target
        self.proc: subprocess.Popen[str] | None = None
        self.opened = 0

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", FLOOD, str(self.port), str(self.target)],
                                     stdout=subprocess.PIPE, text=True)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        lines = out.split()
        self.opened = int(lines[-1]) if lines else 0


async def _client(url: str, token: str, mode: str, name: str, stop: asyncio.Event, stats: dict[str, Any]) -> None:
    """One agent: 8 requests in flight; when its connection breaks (a flood can close a pooled
    connection before its first request), it reconnects, as a client does, and it is counted."""
    import httpx2
    import mcp.types as t
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    while not stop.is_set():
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          timeout=httpx2.Timeout(30, read=60)) as h, \
                    Client(streamable_http_client(url, http_client=h), mode=mode,
                           client_info=t.Implementation(name=name, version="1")) as c:
                workers = [asyncio.create_task(_worker(c, name, w, stop, stats)) for w in range(8)]
                await asyncio.gather(*workers)
        except Exception as e:        # (nested exception groups from the SDK's task groups)
            stats["reconnects"] += 1
            stats.setdefault("last_error", repr(e)[:300])
            causes = stats.setdefault("reconnect_causes", {})
            for leaf in _leaves(e):
                key = f"{type(leaf).__name__}: {str(leaf)[:80]}"
                causes[key] = causes.get(key, 0) + 1
            await asyncio.sleep(0.2)


def _leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or `e` itself."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


async def _worker(c: Any, name: str, w: int, stop: asyncio.Event, stats: dict[str, Any]) -> None:
    i = 0
    while not stop.is_set():
        i += 1
        kind = i % 10
        if kind == 0:
            await c.list_tools()
            stats["lists"] += 1
            continue
        if kind == 5:
            await c.session.call_tool("search_tools", {"query": "echo text back", "top_k": 3})
            stats["answered"] += 1
            stats["searches"] += 1
            continue
        nonce = f"{name}-{w}-{i}-{uuid.uuid4().hex[:6]}"
        server = "alpha" if i % 2 else "beta"
        r = await c.session.call_tool(f"{server}__echo", {"text": nonce})
        stats["answered"] += 1
        text = "".join(getattr(x, "text", "") for x in r.content)
        if r.is_error:
            stats["errors"] += 1
            if nonce in text or server not in text:
                stats["misrouted"] += 1
        elif text != nonce:
            stats["misrouted"] += 1
        else:
            stats["ok"] += 1


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mcpctl-soak-"))
    home, mark = root / "home", uuid.uuid4().hex
    tok_a, tok_b = _setup(home, mark)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MCPCTL_HOME": str(home), "MCPCTL_TEST_MARK": mark}
    err = open(root / "gateway.stderr", "w")  # noqa: SIM115
    gw = subprocess.Popen([MCPCTL, "serve", "--project", "soak", "--transport", "http", "--port", str(port)],
                          env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}/mcp"
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        await asyncio.sleep(0.1)
    stats: dict[str, Any] = {"answered": 0, "ok": 0, "errors": 0, "misrouted": 0, "lists": 0, "searches": 0,
                             "kills": 0, "reconnects": 0}
    stop = asyncio.Event()
    flood = Flood(port, args.flood)
    result: dict[str, Any] = {}
    try:
        clients = [asyncio.create_task(_client(url, tok_a, "legacy", "soak-a", stop, stats)),
                   asyncio.create_task(_client(url, tok_b, "auto", "soak-b", stop, stats))]
        await asyncio.sleep(10)                      # warm-up: upstreams up, caches warm
        rss_start = _rss_mb(gw.pid)
        if args.flood:
            flood.start()
        t_end = time.monotonic() + args.minutes * 60
        next_kill = time.monotonic() + args.kill_every
        rss_minutes: list[float] = []
        next_sample = time.monotonic() + 60
        while time.monotonic() < t_end:
            await asyncio.sleep(1)
            if time.monotonic() >= next_sample:
                rss_minutes.append(round(_rss_mb(gw.pid), 1))
                next_sample += 60
            if time.monotonic() >= next_kill:
                pids = _upstream_pids(mark)
                if pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pids[stats["kills"] % len(pids)], signal.SIGKILL)
                    stats["kills"] += 1
                next_kill += args.kill_every
        flood.stop()
        stop.set()
        for c in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(c, 60)
        failures = [repr(c.exception()) for c in clients if c.done() and not c.cancelled() and c.exception()]
        await asyncio.sleep(5)                       # let the gateway close the junk and settle
        rss_end = _rss_mb(gw.pid)
        result = {"stats": stats, "rss_start_mb": round(rss_start, 1), "rss_end_mb": round(rss_end, 1),
                  "rss_per_minute_mb": rss_minutes,
                  "junk_sockets_opened": flood.opened, "client_failures": failures}
    finally:
        gw.send_signal(signal.SIGTERM)
        try:
            gw.wait(30)
        except subprocess.TimeoutExpired:
            gw.kill()
        err.close()
    deadline = time.monotonic() + 10
    while _mark_pids(mark) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    leaked = _mark_pids(mark)
    for pid in leaked:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    sys.path.insert(0, str(REPO / "src"))
    os.environ["MCPCTL_HOME"] = str(home)
    from mcpctl.audit.log import InvocationLog

    with InvocationLog() as log:
        rows = log.count("soak")
    result.update(leaked=leaked, log_rows=rows)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--kill-every", type=float, default=30.0)
    ap.add_argument("--flood", type=int, default=300, help="junk sockets held open (0: no flood)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    r = asyncio.run(run(args))
    s = r.get("stats", {})
    checks = {
        "0 misrouted responses": s.get("misrouted", 1) == 0 and not r.get("client_failures"),
        "0 processes left behind": not r["leaked"],
        # every answered call is logged; a call whose answer was lost with a connection the flood
        # broke is logged too (it was made), at most the 8 in flight per reconnect
        "log rows == tools/call answered (+ lost with a broken connection)":
            0 <= r["log_rows"] - s.get("answered", 0) <= 8 * s.get("reconnects", 0),
        "RSS back within 10 % of its start": r.get("rss_end_mb", 1e9) <= 1.10 * r.get("rss_start_mb", 0),
    }
    print(f"soak: {args.minutes:g} min, {s.get('answered', 0)} calls answered ({s.get('ok', 0)} ok, "
          f"{s.get('errors', 0)} isError while an upstream restarted), {s.get('searches', 0)} of them searches, "
          f"{s.get('lists', 0)} listings, {s.get('kills', 0)} upstream kills, "
          f"{r.get('junk_sockets_opened', 0)} junk sockets, {s.get('reconnects', 0)} client reconnects "
          f"({s.get('last_error', '-')})")
    for cause, n in sorted(s.get("reconnect_causes", {}).items(), key=lambda kv: -kv[1]):
        print(f"      reconnect cause x{n}: {cause}")
    print(f"      log rows {r['log_rows']}, RSS {r.get('rss_start_mb')} MB -> {r.get('rss_end_mb')} MB "
          f"(each minute: {r.get('rss_per_minute_mb')}), "
          f"leaked {r['leaked']}, client failures {r.get('client_failures')}")
    for name, ok in checks.items():
        print(f"[{'PASS' if ok else 'FAIL'}] {name}")
    if args.json:
        args.json.write_text(json.dumps({**r, "checks": checks}, indent=2))
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
