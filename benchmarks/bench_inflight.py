"""Calls in flight: where every process's CPU goes, and what that says of calls/s (not a test).

    .venv/bin/python benchmarks/bench_inflight.py [--calls 4000] [--in-flight 16] [--rounds 4]
                                                  [--baseline MCPCTL_EXE]

`tools/call`s of one upstream's `echo` (`bench_call_cpu.upstream_argv`: the shared harness's
`synth_server.py` of 20 tools when present), kept `--in-flight` at a time by a raw client in this
process, called directly and through `mcpctl serve` (and `--baseline`'s) in interleaved rounds.
Each run reports calls/s and the CPU per call of every process on the path: the client (this
process), the upstream, and the gateway (its event loop's thread and the others), with the read
and write syscalls per call of the upstream and the gateway (`/proc/<pid>/io`).

Printed last, per round and as medians: calls/s through the gateway over direct's, and the same
ratio predicted by CPU alone, (client + upstream) / (client + upstream behind the gateway +
gateway): what the ratio tends to when the machine's cores are all busy (every process runnable,
the run CPU-bound). On an idle machine the measured ratio is higher (the processes overlap on idle
cores); under load it approaches the prediction. Compare paired rounds only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_call_cpu import Peer, cpu_seconds, make_home, session, thread_cpu, upstream_argv


def io_calls(pid: int) -> tuple[int, int]:
    """(read syscalls, write syscalls) of `pid` so far."""
    fields = dict(line.split(":") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def window(peer: Peer, name: str, n: int, width: int, first_id: int) -> None:
    """`n` calls, `width` of them in flight: a new one as each answer comes."""
    assert peer.proc.stdout is not None
    sent = 0

    def send() -> None:
        nonlocal sent
        peer.send({"jsonrpc": "2.0", "id": first_id + sent, "method": "tools/call",
                   "params": {"name": name, "arguments": {"text": f"n{sent}"}}})
        sent += 1

    for _ in range(min(width, n)):
        send()
    for _ in range(n):
        line = peer.proc.stdout.readline()
        if b'"result"' not in line:
            raise RuntimeError(f"unexpected reply: {line[:300]!r}")
        if sent < n:
            send()


def run(argv: list[str], env: dict[str, str], n: int, width: int, gateway: bool) -> dict[str, float]:
    """One run after a warm-up of 300 calls: calls/s and µs of CPU per call of each process."""
    peer = Peer(argv, env)
    try:
        name = session(peer)
        window(peer, name, 300, width, 10_000_000)
        pid = peer.proc.pid
        up = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0]) if gateway else pid
        up0, up_io0 = cpu_seconds(f"/proc/{up}/stat"), io_calls(up)
        threads0, gw_io0 = (thread_cpu(pid), io_calls(pid)) if gateway else ({}, (0, 0))
        t0, c0 = time.perf_counter(), time.process_time()
        window(peer, name, n, width, 0)
        wall, client = time.perf_counter() - t0, time.process_time() - c0
        up_io = io_calls(up)
        out = {"calls/s": n / wall, "client": client * 1e6 / n,
               "upstream": (cpu_seconds(f"/proc/{up}/stat") - up0) * 1e6 / n,
               "upstream reads": (up_io[0] - up_io0[0]) / n, "upstream writes": (up_io[1] - up_io0[1]) / n}
        if gateway:
            threads, gw_io = thread_cpu(pid), io_calls(pid)
            per = {tid: (threads[tid] - threads0.get(tid, 0.0)) * 1e6 / n for tid in threads}
            out["gateway loop"] = per.pop(str(pid), 0.0)
            out["gateway others"] = sum(per.values())
            out["gateway"] = out["gateway loop"] + out["gateway others"]
            out["gateway reads"] = (gw_io[0] - gw_io0[0]) / n
            out["gateway writes"] = (gw_io[1] - gw_io0[1]) / n
        return out
    finally:
        peer.close()


def predicted(direct: dict[str, float], through: dict[str, float]) -> float:
    return (direct["client"] + direct["upstream"]) / (through["client"] + through["upstream"] + through["gateway"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl, in the same rounds")
    a = ap.parse_args()
    up, _ = upstream_argv()
    current = str(Path(sys.executable).parent / "mcpctl")
    targets = [("direct", up, False), ("mcpctl", [current, "serve", "--project", "bench"], True)]
    if a.baseline:
        targets.append(("baseline", [a.baseline, "serve", "--project", "bench"], True))
    got: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in targets}
    with tempfile.TemporaryDirectory(prefix="mcpctl-bench-inflight-") as tmp:
        env = {**os.environ, "MCPCTL_HOME": str(make_home(Path(tmp), up))}
        for r in range(a.rounds):
            for label, argv, gateway in (targets if r % 2 == 0 else targets[::-1]):
                got[label].append(run(argv, env, a.calls, a.in_flight, gateway))
            load = os.getloadavg()[0]
            for label, _, _ in targets:
                print(f"round {r + 1} (load {load:.1f}) {label:8s} " + ", ".join(
                    f"{k} {v:.2f}" if "reads" in k or "writes" in k else f"{k} {v:.0f}"
                    for k, v in got[label][-1].items()), file=sys.stderr)
    report(got, a)


def report(got: dict[str, list[dict[str, float]]], a: argparse.Namespace) -> None:
    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    direct = got["direct"]
    print(f"{a.calls} calls, {a.in_flight} in flight, medians of {a.rounds} rounds; load {os.getloadavg()[0]:.1f}")
    print(f"  direct: {med(direct, 'calls/s'):.0f} calls/s; CPU per call (µs): client {med(direct, 'client'):.0f}, "
          f"upstream {med(direct, 'upstream'):.0f}")
    for label, rows in got.items():
        if label == "direct":
            continue
        print(f"  {label}: {med(rows, 'calls/s'):.0f} calls/s; CPU per call (µs): client {med(rows, 'client'):.0f}, "
              f"upstream {med(rows, 'upstream'):.0f}, gateway {med(rows, 'gateway'):.0f} (loop "
              f"{med(rows, 'gateway loop'):.0f}, others {med(rows, 'gateway others'):.0f}); syscalls per call: "
              f"gateway {med(rows, 'gateway reads'):.2f} reads, {med(rows, 'gateway writes'):.2f} writes, upstream "
              f"{med(rows, 'upstream reads'):.2f} reads (direct {med(direct, 'upstream reads'):.2f})")
        measured = [row["calls/s"] / d["calls/s"] for row, d in zip(rows, direct, strict=True)]
        model = [predicted(d, row) for row, d in zip(rows, direct, strict=True)]
        upstream = [row["upstream"] / d["upstream"] for row, d in zip(rows, direct, strict=True)]
        print(f"    calls/s over direct's: {statistics.median(measured):.3f}x measured (rounds "
              f"{', '.join(f'{x:.2f}' for x in measured)}); {statistics.median(model):.3f}x predicted by CPU alone "
              f"(rounds {', '.join(f'{x:.2f}' for x in model)}); the upstream's CPU per call behind it "
              f"{statistics.median(upstream):.3f}x direct's")


if __name__ == "__main__":
    try:
        main()
    except subprocess.SubprocessError as e:
        raise SystemExit(f"bench_inflight: {e}") from None
