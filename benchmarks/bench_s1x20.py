"""The shared harness's `s1x20` scenario in paired, interleaved rounds (not a test).

    .venv/bin/python benchmarks/bench_s1x20.py [--rounds 5] [--baseline MCPCTL_EXE]

`../shared/bench/mcpbench.py` (required) against one `synth_server.py` of 20 tools called directly
and through `mcpctl serve` (and the `--baseline` installation's, in the same rounds; the order is
reversed every other round), as `run_peers.py` runs `s1x20`: sequential calls, then 16 in flight
for 5 s. Printed: each round's figures and load, then the medians of the per-round ratios to
direct of the gateway's CPU per call and of calls/s with 16 in flight (issue 37's "≤ 1.2x" and
"≥ 0.9x"), and the call's added latency. Only ratios paired within a round mean anything on a
shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_call_cpu import SYNTH, make_home

HARNESS = SYNTH.parent / "mcpbench.py"


def run(label: str, argv: list[str], home: Path) -> dict[str, Any]:
    cmd = [sys.executable, str(HARNESS), "--label", label, "--expect-tools", "20", "--cold-runs", "1",
           "--max-seconds", "90", "--env", f"MCPCTL_HOME={home}", "--", *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rec: dict[str, Any] = json.loads((p.stdout.strip().splitlines() or ["{}"])[-1])
    if not rec.get("ok") or "call" not in rec or "conc" not in rec:
        raise SystemExit(f"{label}: the harness failed: {rec.get('error') or p.stderr[-400:]}")
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl, in the same rounds")
    a = ap.parse_args()
    if not HARNESS.exists():
        raise SystemExit(f"the shared harness is not at {HARNESS}")
    synth = [sys.executable, str(SYNTH), "--tools", "20", "--name", "s0"]
    targets = [("direct", synth), ("mcpctl", [str(Path(sys.executable).parent / "mcpctl"), "serve", "--project", "bench"])]
    if a.baseline:
        exe = shutil.which(a.baseline)
        if exe is None:
            ap.error(f"--baseline: {a.baseline} is not an executable")
        targets.append(("baseline", [exe, "serve", "--project", "bench"]))
    got: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in targets}
    with tempfile.TemporaryDirectory(prefix="mcpctl-bench-s1x20-") as tmp:
        home = make_home(Path(tmp), synth)
        for r in range(a.rounds):
            for label, argv in (targets if r % 2 == 0 else targets[::-1]):
                rec = run(label, argv, home)
                got[label].append(rec)
                c, k = rec["call"], rec["conc"]
                print(f"round {r + 1} {label:8s} p50 {c['p50_ms']:.3f} ms, CPU/call {c['cpu_ms_per_call_root']:.3f} ms,"
                      f" {k['calls_per_s']:.0f} calls/s @16; load {os.getloadavg()[0]:.1f}", flush=True)
    direct = got["direct"]
    print(f"\nmedians of {a.rounds} paired rounds (ratio: per round, to direct)")
    for label, rows in got.items():
        if label == "direct":
            continue
        pairs = list(zip(rows, direct, strict=True))
        cpu = statistics.median(g["call"]["cpu_ms_per_call_root"] / d["call"]["cpu_ms_per_call_root"] for g, d in pairs)
        cps = [g["conc"]["calls_per_s"] / d["conc"]["calls_per_s"] for g, d in pairs]
        added = statistics.median(g["call"]["p50_ms"] - d["call"]["p50_ms"] for g, d in pairs)
        print(f"  {label}: CPU per call {cpu:.2f}x direct, calls/s @16 {statistics.median(cps):.2f}x direct "
              f"(rounds {min(cps):.2f}-{max(cps):.2f}), +{added:.3f} ms a call at the median")


if __name__ == "__main__":
    main()
