"""Instructions a relayed call costs each thread of `mcpctl serve`, counted by callgrind (not a test).

    .venv/bin/python benchmarks/bench_call_instructions.py [--calls 3000] [--baseline MCPCTL_EXE]
                                                          [--telemetry] [--env NAME=VALUE ...] [--keep DIR]

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

Each thread is printed by what it runs (read from its dump: the OTLP exporter's, the invocation
log's writer, else its number); `--keep DIR` keeps the dumps there for `callgrind_annotate`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_call_cpu import Peer, calls, make_home, session, upstream_argv
from bench_gateway import otlp_sink

WARM_UP = 600


# what a thread's dump names that tells which thread it is (the first found)
# (C objects only: callgrind sees no Python function): the writer's database driver; the OTLP
# client's backoff jitter, drawn before each export
THREAD_NAMES = (("libsqlite3", "log writer"), ("libpq", "log writer"), ("_random.cpython", "exporter"))


def _thread_name(number: int, text: str) -> str:
    if number == 1:
        return "loop"
    for marker, name in THREAD_NAMES:
        if marker in text:
            return name
    return f"thread {number}"


def count(exe: str, env: dict[str, str], n: int, out: Path) -> dict[str, float]:
    """Instructions per call of each thread of `exe serve`, by name ("loop": the main thread, the
    event loop's; "exporter"; "log writer"; else callgrind's thread number)."""
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
    found: dict[str, float] = {}
    for dump in sorted(out.parent.glob(f"{out.name}.1-*")):       # the first dump, one file a thread
        text = dump.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("summary:"):
                name = _thread_name(int(dump.name.rsplit("-", 1)[1]), text)
                found[name] = found.get(name, 0.0) + int(line.split()[1]) / n
                break
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl")
    ap.add_argument("--telemetry", action="store_true", help="also this checkout with metrics and tracing on")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="more environment for the telemetry-on target (repeatable)")
    ap.add_argument("--keep", metavar="DIR", type=Path, help="keep callgrind's dumps in DIR")
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
            if a.keep is not None:
                a.keep.mkdir(parents=True, exist_ok=True)
                for dump in Path(tmp).glob(f"cg{i}.out*"):
                    shutil.copy(dump, a.keep / dump.name)
    print(f"instructions per call ({a.calls} sequential calls after {WARM_UP}; callgrind, thousands):")
    first = None
    for label, threads in results.items():
        main_thread = threads.get("loop", 0.0)
        writer = threads.get("log writer", 0.0)
        total = sum(threads.values())
        first = first or (main_thread, total, total - writer)
        apart = ", ".join(f"{k} {v / 1e3:.1f}k" for k, v in sorted(threads.items()) if k != "loop")
        print(f"  {label:24s} loop {main_thread / 1e3:7.1f}k ({main_thread / first[0]:.3f}x); {apart}; "
              f"together {total / 1e3:7.1f}k ({total / first[1]:.3f}x), "
              f"less the log writer {(total - writer) / 1e3:7.1f}k ({(total - writer) / first[2]:.3f}x)")


if __name__ == "__main__":
    main()
