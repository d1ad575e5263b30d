"""Instructions a relayed call costs each thread of `mcpctl serve`, counted by callgrind (not a test).

    .venv/bin/python benchmarks/bench_call_instructions.py [--calls 3000] [--baseline MCPCTL_EXE]
                                                          [--telemetry] [--env NAME=VALUE ...]

CPU time on a shared machine moves by more than a change to the call path (`bench_call_cpu.py`
pairs rounds to see through it); the instructions a thread executes do not. Each target runs
`mcpctl serve` under `valgrind --tool=callgrind` (the `valgrind` package) with instrumentation
off until 600 warm-up calls are done, then counts `--calls` sequential `tools/call`s of one
stdio upstream's `echo` (the same raw client and upstream as `bench_call_cpu.py`), one dump per
thread: printed per call, the event loop's thread (the main one) apart from the others. The
main thread's count repeats within about 1%; the others' move with batching (the invocation
log's writer commits what has queued; the OTLP exporter's thread sends every 512 spans, so over
3,000 calls its count is within one batch, some 8%). Instructions are not time: the event loop's
thread runs far fewer of them a microsecond than a tight loop does (its caches are cold).

Targets: this checkout with telemetry off; `--baseline` (another installation's `mcpctl`);
with `--telemetry`, this checkout with metrics and tracing on, every trace kept (the default
sampler; `--env OTEL_TRACES_SAMPLER=always_on` for another), spans sent over OTLP/HTTP to a
sink in this process. About 3 minutes a target for 3,000 calls.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_call_cpu import Peer, calls, make_home, session, upstream_argv
from bench_gateway import otlp_sink

WARM_UP = 600


def count(exe: str, env: dict[str, str], n: int, out: Path) -> dict[int, float]:
    """Instructions per call of each thread of `exe serve` (by callgrind's thread number; 1 is the main)."""
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
            f"--callgrind-out-file={out}", str(Path(exe).parent / "python"), exe, "serve", "--project", "bench"]
    peer = Peer(argv, env)
    try:
        name = session(peer)
        calls(peer, name, WARM_UP, 10_000_000)
        pid = str(peer.proc.pid)
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        calls(peer, name, n, 0)
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
    finally:
        peer.close()
    found: dict[int, float] = {}
    for dump in out.parent.glob(f"{out.name}.1-*"):       # the first dump, one file a thread
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                found[int(dump.name.rsplit("-", 1)[1])] = int(line.split()[1]) / n
                break
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl")
    ap.add_argument("--telemetry", action="store_true", help="also this checkout with metrics and tracing on")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="more environment for the telemetry-on target (repeatable)")
    a = ap.parse_args()
    up, _ = upstream_argv()
    current = str(Path(sys.executable).parent / "mcpctl")
    with tempfile.TemporaryDirectory(prefix="mcpctl-bench-ir-") as tmp, \
            otlp_sink() if a.telemetry else contextlib.nullcontext() as sink:
        env = {**os.environ, "MCPCTL_HOME": str(make_home(Path(tmp), up))}
        targets = [("current, telemetry off", current, env)]
        if a.baseline:
            targets.append(("baseline", a.baseline, env))
        if sink is not None:
            on = {**env, "MCPCTL_METRICS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
                  **dict(kv.split("=", 1) for kv in a.env)}
            targets.append(("current, telemetry on", current, on))
        results = {}
        for i, (label, exe, target_env) in enumerate(targets):
            results[label] = count(exe, target_env, a.calls, Path(tmp) / f"cg{i}.out")
            print(f"  {label}: done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print(f"instructions per call ({a.calls} sequential calls after {WARM_UP}; callgrind, thousands):")
    first = None
    for label, threads in results.items():
        main_thread = threads.get(1, 0.0)
        others = sum(v for k, v in threads.items() if k != 1)
        first = first or (main_thread, others)
        print(f"  {label:24s} main {main_thread / 1e3:7.1f}k ({main_thread / first[0]:.3f}x), other threads "
              f"{others / 1e3:6.1f}k, together {(main_thread + others) / 1e3:7.1f}k "
              f"({(main_thread + others) / sum(first):.3f}x)")


if __name__ == "__main__":
    main()
