"""A tools/call's latency through `serve --shared`'s relay against an unshared gateway (not a test).

    .venv/bin/python benchmarks/bench_shared.py [--rounds 3] [--calls 300]

The demo's store (`mcpctl demo --home`); each round, in alternating order, one client of an
unshared `mcpctl serve --project demo` and one of a relay (`--shared`, its daemon started by the
relay and awaited gone after the round) run the handshake, 20 calls to warm up, then `--calls`
sequential `calc add` calls, each timed from its request's write to its answer's read. Prints the
medians over rounds of each round's median and 90th percentile, in microseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MCPCTL = str(Path(sys.executable).parent / "mcpctl")
HANDSHAKE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


class Client:
    def __init__(self, env: dict[str, str], shared: bool) -> None:
        self.p = subprocess.Popen([MCPCTL, "serve", "--project", "demo", *(["--shared"] if shared else [])],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.n = 0

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method, **({"params": params} if params is not None else {})}
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()
        while line := self.p.stdout.readline():
            got = json.loads(line)
            if got.get("id") == self.n:
                return dict(got)
        raise SystemExit(f"the gateway closed stdout before answering {method}")

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        self.p.wait(60)


def daemons(home: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"--shared-daemon" in (d / "cmdline").read_bytes() \
                    and f"MCPCTL_HOME={home}".encode() + b"\0" in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def measure(env: dict[str, str], shared: bool, calls: int) -> list[float]:
    c = Client(env, shared)
    try:
        c.ask("initialize", HANDSHAKE)
        assert c.p.stdin is not None
        c.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        c.p.stdin.flush()
        add = next(t["name"] for t in c.ask("tools/list")["result"]["tools"] if t["name"].endswith("add"))
        took = []
        for i in range(20 + calls):
            t0 = time.perf_counter()
            got = c.ask("tools/call", {"name": add, "arguments": {"a": i, "b": 1}})
            took.append((time.perf_counter() - t0) * 1e6)
            assert "result" in got, got
        return took[20:]
    finally:
        pids = daemons(env["MCPCTL_HOME"]) if shared else []
        c.close()
        for pid in pids:             # the daemon exits after its grace: the next round starts afresh
            fd = os.pidfd_open(pid)
            select.select([fd], [], [], 60)
            os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args()
    got: dict[str, list[tuple[float, float]]] = {"unshared": [], "shared": []}
    with tempfile.TemporaryDirectory() as tmp:
        home = str(Path(tmp) / "home")
        subprocess.run([MCPCTL, "demo", "--home", home], check=True, stdout=subprocess.DEVNULL)
        env = {**os.environ, "MCPCTL_HOME": home}
        for r in range(a.rounds):
            for shared in ((False, True) if r % 2 == 0 else (True, False)):
                took = sorted(measure(env, shared, a.calls))
                got["shared" if shared else "unshared"].append((statistics.median(took), took[int(len(took) * 0.9)]))
    load = os.getloadavg()
    print(f"{a.rounds} rounds x {a.calls} sequential calls, microseconds; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, rows in got.items():
        print(f"{name:9s} median {statistics.median(m for m, _ in rows):8.0f}  p90 {statistics.median(p for _, p in rows):8.0f}")


if __name__ == "__main__":
    main()
