"""How `mcpctl surface` and `mcpctl tools list` grow with the catalogue (not a test).

    .venv/bin/python benchmarks/bench_cli_scale.py [--small 5000] [--large 50000] [--runs 3] [--calls 2000]

Two stores are built as `bench_surface.py` builds one (real LiveMCPBench definitions, whole servers
registered again under new names until there are enough tools, their listings in the catalogue
cache, a project holding them all, --calls rows in the invocation log): one of --small tools and
one of --large. Each command runs end to end (`mcpctl surface -p big -o json`, `mcpctl tools list
-p big -o json`) against both stores in paired rounds (small then large, --runs times), and the
medians and their ratio are printed. The bar (issue 17): the large run within 10x the small one
for 10x the tools, i.e. close to linear growth. Absolute times move with the machine's load (printed);
the ratio of paired rounds much less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_surface as bs

BAR = 10.0
COMMANDS = {"surface": ["surface", "-p", bs.PROJECT, "-o", "json"],
            "tools list": ["tools", "list", "-p", bs.PROJECT, "-o", "json"]}


def build(root: Path, tools: int, calls: int, dataset: Path) -> tuple[Path, int, int]:
    home = root / f"home-{tools}"
    os.environ["MCPCTL_HOME"] = str(home)
    t0 = time.perf_counter()
    n, servers = bs.setup(dataset / "tools.jsonl", tools, calls)
    print(f"store of {n:,} tools on {servers:,} servers built in {time.perf_counter() - t0:.1f} s", flush=True)
    return home, n, servers


def timed(home: Path, argv: list[str]) -> float:
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    t0 = time.perf_counter()
    done = subprocess.run([bs.MCPCTL, *argv], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"mcpctl {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=5000)
    ap.add_argument("--large", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--dataset", type=Path, help="a directory holding tools.jsonl")
    args = ap.parse_args()
    dataset = args.dataset or (bs.SHARED_DATASET if (bs.SHARED_DATASET / "tools.jsonl").exists()
                               else bs.VENDORED_DATASET)
    root = Path(tempfile.mkdtemp(prefix="mcpctl-bench-scale-"))
    try:
        small = build(root, args.small, args.calls, dataset)
        large = build(root, args.large, args.calls, dataset)
        ok = True
        for label, argv in COMMANDS.items():
            times: dict[int, list[float]] = {small[1]: [], large[1]: []}
            for _ in range(args.runs):                      # paired rounds: small, then large
                for home, n, _servers in (small, large):
                    times[n].append(timed(home, argv))
            ms, ml = statistics.median(times[small[1]]), statistics.median(times[large[1]])
            ratio = ml / ms
            bar = BAR * large[1] / small[1] / 10
            ok &= ratio <= bar
            print(f"{label:10}: {small[1]:>7,} tools median {ms:7.2f} s | {large[1]:>7,} tools median {ml:7.2f} s | "
                  f"ratio {ratio:5.2f} (bar {bar:g}) [{'PASS' if ratio <= bar else 'FAIL'}]", flush=True)
        print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} on {os.cpu_count()} cores")
        sys.exit(0 if ok else 1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
