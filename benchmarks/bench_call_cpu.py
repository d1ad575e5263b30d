"""Where a relayed call's CPU goes: each thread of `mcpctl serve`, and the upstream (not a test).

    .venv/bin/python benchmarks/bench_call_cpu.py [--calls 3000] [--rounds 3] [--baseline MCPCTL_EXE]
                                                  [--telemetry]

Sequential `tools/call`s of one upstream's `echo` (`../shared/bench/synth_server.py` with 20 tools
when present, else `tests/servers/fault_server.py`), from a raw newline-delimited JSON-RPC client:
  - through `mcpctl serve`: the CPU per call of each of the gateway's threads (the event loop's,
    the invocation log's writer, ...: `/proc/<pid>/task/*/stat`) and of the upstream process;
  - the same upstream called directly with the same requests: its CPU per call without the hop.
Rounds alternate the targets (order reversed every other round); medians over rounds are printed,
with `--baseline` (the `mcpctl` of another installation) measured in the same rounds, and with
`--telemetry` this checkout's gateway once more with metrics and tracing on (every trace kept,
spans sent over OTLP/HTTP to a sink in this process: the `otel` extra), so that what telemetry
costs each thread is read per round (against this checkout with both off, and against the
baseline when given: issue 36's "both on within 1.10x of before"). `bench_call_instructions.py`
counts the same calls' instructions per thread instead (callgrind), which the load moves far
less. On a shared machine compare medians of paired rounds only; CPU time is far steadier than
wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from bench_gateway import otlp_sink

REPO = Path(__file__).resolve().parents[1]
SYNTH = REPO.parent / "shared" / "bench" / "synth_server.py"
FAULT = REPO / "tests" / "servers" / "fault_server.py"
TICK = os.sysconf("SC_CLK_TCK")


def upstream_argv() -> tuple[list[str], str]:
    if SYNTH.exists():
        return [sys.executable, str(SYNTH), "--tools", "20", "--name", "s0"], "echo"
    return [sys.executable, str(FAULT), "--name", "s0"], "echo"


def cpu_seconds(stat_path: str) -> float:
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of `pid`, keyed by thread id (the main thread is `pid`)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = cpu_seconds(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
    return out


def children_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return sum(cpu_seconds(f"/proc/{c}/stat") for c in f.read().split())


class Peer:
    """A child spoken to over stdio, one line each way per message."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env)

    def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.send(msg)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.proc.args!r} closed its stdout")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def session(peer: Peer) -> str:
    """Initialize and return the name of the echo tool as this peer presents it."""
    peer.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = peer.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    return str(next(t["name"] for t in tools if t["name"].endswith("echo")))


def calls(peer: Peer, name: str, n: int, first_id: int) -> None:
    for i in range(n):
        reply = peer.ask({"jsonrpc": "2.0", "id": f"b-{first_id + i}", "method": "tools/call",
                          "params": {"name": name, "arguments": {"text": f"n{first_id + i}"}}})
        if reply.get("id") != f"b-{first_id + i}" or "result" not in reply:
            raise RuntimeError(f"unexpected reply: {reply!r}"[:300])


class Sample(NamedTuple):
    threads: dict[str, float]       # "loop" (the main thread), "other threads"
    upstream: float


def measure(argv: list[str], env: dict[str, str], n: int, gateway: bool) -> Sample:
    """µs of CPU per call over `n` sequential calls after a warm-up of 100."""
    peer = Peer(argv, env)
    try:
        name = session(peer)
        calls(peer, name, 100, 10_000_000)
        pid = peer.proc.pid
        before = thread_cpu(pid) if gateway else {str(pid): cpu_seconds(f"/proc/{pid}/stat")}
        kids = children_cpu(pid) if gateway else 0.0
        calls(peer, name, n, 0)
        after = thread_cpu(pid) if gateway else {str(pid): cpu_seconds(f"/proc/{pid}/stat")}
        per = {tid: (after[tid] - before.get(tid, 0.0)) * 1e6 / n for tid in after}
        if not gateway:
            return Sample({}, per[str(pid)])
        main = per.pop(str(pid), 0.0)
        return Sample({"loop": main, "other threads": sum(per.values())}, (children_cpu(pid) - kids) * 1e6 / n)
    finally:
        peer.close()


def make_home(root: Path, argv: list[str]) -> Path:
    home = root / "home"
    code = ("import json,sys\nfrom mcpctl.resources.store import Store\nst=Store()\n"
            "st.put({'apiVersion':'mcpctl/v1','kind':'Server','metadata':{'name':'s0'},"
            "'spec':{'command':sys.argv[1],'args':json.loads(sys.argv[2])}})\n"
            "st.put({'apiVersion':'mcpctl/v1','kind':'Project','metadata':{'name':'bench'},"
            "'spec':{'servers':['s0']}})\n")
    subprocess.run([sys.executable, "-c", code, argv[0], json.dumps(argv[1:])],
                   env={**os.environ, "MCPCTL_HOME": str(home)}, check=True)
    return home


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl, in the same rounds")
    ap.add_argument("--telemetry", action="store_true", help="also this checkout with metrics and tracing on")
    a = ap.parse_args()
    with otlp_sink() if a.telemetry else contextlib.nullcontext() as sink:
        rounds(a, None if sink is None else sink.url)


def rounds(a: argparse.Namespace, otlp_url: str | None) -> None:
    up, _ = upstream_argv()
    current = str(Path(sys.executable).parent / "mcpctl")
    with tempfile.TemporaryDirectory(prefix="mcpctl-bench-cpu-") as tmp:
        env = {**os.environ, "MCPCTL_HOME": str(make_home(Path(tmp), up))}
        runs: list[tuple[str, Callable[[], Sample]]] = [
            ("direct", lambda: measure(up, env, a.calls, gateway=False)),
            ("current", lambda: measure([current, "serve", "--project", "bench"], env, a.calls, gateway=True))]
        if a.baseline:
            base = a.baseline
            runs.append(("baseline", lambda: measure([base, "serve", "--project", "bench"], env, a.calls, True)))
        if otlp_url is not None:
            on = {**env, "MCPCTL_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_url, "OTEL_TRACES_SAMPLER": "always_on"}
            runs.append(("telemetry on", lambda: measure([current, "serve", "--project", "bench"], on, a.calls, True)))
        got: dict[str, list[Sample]] = {label: [] for label, _ in runs}
        for r in range(a.rounds):
            for label, run in (runs if r % 2 == 0 else runs[::-1]):
                got[label].append(run())
            print(f"round {r + 1}: load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print(f"CPU per call (µs), medians of {a.rounds} rounds of {a.calls} sequential calls; load {os.getloadavg()[0]:.1f}")
    print(f"  upstream called directly: {statistics.median(s.upstream for s in got['direct']):.0f}")
    for label in got:
        if label == "direct":
            continue
        rows = got[label]
        parts = ", ".join(f"{k} {statistics.median(s.threads[k] for s in rows):.0f}" for k in rows[0].threads)
        total = statistics.median(sum(s.threads.values()) for s in rows)
        print(f"  {label}: gateway {total:.0f} ({parts}); the upstream behind it "
              f"{statistics.median(s.upstream for s in rows):.0f}")
        for other in ("current", "baseline"):     # baseline / current; telemetry on / either
            if label in ("current", other) or other not in got or (label, other) == ("baseline", "baseline"):
                continue
            ratio = statistics.median(sum(s.threads.values()) / sum(c.threads.values())
                                      for s, c in zip(rows, got[other], strict=True))
            loop = statistics.median(s.threads["loop"] / c.threads["loop"] for s, c in zip(rows, got[other], strict=True))
            print(f"    {label} / {other}, gateway CPU per call: {ratio:.3f}x, the loop's thread {loop:.3f}x "
                  "(medians of per-round ratios)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
