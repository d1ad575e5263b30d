"""How long `mcpctl surface` takes on a large catalogue (not a test): the issue's bar is 500 tools in under 2 s.

    .venv/bin/python benchmarks/bench_surface.py [--tools 500] [--calls 20000] [--runs 5] [--dataset DIR]

Real tool definitions: LiveMCPBench (`../shared/data/livemcpbench/tools.jsonl`, 527 tools; else
the vendored slice `tests/fixtures/livemcpbench_slice`, whose servers are registered again under
new names until there are enough tools), whole servers until at least --tools. In a temporary
MCPCTL_HOME the servers are registered (as `tests/servers/dataset_server.py` commands) and their
listings written to the catalogue cache, as a gateway would have left them; a project holds them
all, with a few favourites and a disabled glob. The invocation log gets --calls rows over the
last 30 days (sessions of 1-12 calls, each to a tool of the catalogue or, one in 50, to a name no
tool has; 1 in 12 failing), written with `InvocationLog.record_many`.

Measured, each --runs times (minimum and median, seconds):
  - in process: `cli.surface.surface_report` (cache read, catalogue and three presentation views,
    log query, report) + JSON rendering, the tokenizer already loaded;
  - end to end: `mcpctl surface --project P -o json` as a subprocess (interpreter start, imports,
    tokenizer load, the report, JSON to stdout); `mcpctl --version` alone for reference.
The bar applies to the end-to-end median. The machine's load average is printed with it: on a
shared machine every number grows with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASET = REPO.parent / "shared" / "data" / "livemcpbench"
VENDORED_DATASET = REPO / "tests" / "fixtures" / "livemcpbench_slice"
DATASET_SERVER = REPO / "tests" / "servers" / "dataset_server.py"
MCPCTL = str(Path(sys.executable).parent / "mcpctl")
PROJECT = "big"
BAR_S = 2.0


def load(path: Path) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            groups[row["server"]].append(row)
    return dict(groups)


def resource_name(raw: str, taken: set[str]) -> str:
    import re

    base = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", raw.lower())).strip("-")[:55].strip("-") or "server"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def setup(tools_path: Path, want: int, calls: int) -> tuple[int, int]:
    """Servers, cache and project in the current MCPCTL_HOME; returns (tools, servers)."""
    from mcpctl.audit.log import CallRecord, InvocationLog
    from mcpctl.catalogue.cache import FilesCache
    from mcpctl.resources.store import Store

    cache = FilesCache()
    groups = load(tools_path)
    order = sorted(groups, key=lambda s: (-len(groups[s]), s))
    store = Store()
    taken: set[str] = set()
    picked: list[tuple[str, list[dict[str, Any]]]] = []
    while sum(len(t) for _, t in picked) < want:
        for dataset_name in order:                # again under new names when the dataset is small
            if sum(len(t) for _, t in picked) >= want:
                break
            name = resource_name(dataset_name, taken)
            rows = groups[dataset_name]
            store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": name},
                       "spec": {"command": sys.executable, "args": [str(DATASET_SERVER), "--tools-file",
                                                                    str(tools_path), "--server", dataset_name]}})
            cache.write_server_tools(name, [{"name": r["name"], "description": r.get("description") or "",
                                             "inputSchema": r.get("inputSchema") or {"type": "object"}}
                                            for r in rows])
            picked.append((name, rows))
    ids = [f"{name}/{r['name']}" for name, rows in picked for r in rows]
    store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": PROJECT},
               "spec": {"servers": [n for n, _ in picked], "tools": {"disabled": [f"{picked[-1][0]}/*"]},
                        "favouriteIndex": {"enabled": True, "tools": ids[:8]}}})
    rng = random.Random(7)
    now = time.time()
    hot = ids[: max(1, len(ids) // 5)]          # most calls go to a fifth of the tools
    recs: list[CallRecord] = []
    session = 0
    while len(recs) < calls:
        session += 1
        ts = now - rng.uniform(0, 30 * 86400 - 3600)
        for _ in range(rng.randint(1, 12)):
            cid = rng.choice(hot if rng.random() < 0.8 else ids)
            unknown = rng.random() < 0.02
            outcome = "protocol_error" if unknown else ("tool_error" if rng.random() < 1 / 12 else "ok")
            server, tool = cid.split("/", 1)
            recs.append(CallRecord(ts, rng.uniform(1, 400), PROJECT, "no_such_tool" if unknown else
                                   f"{server}__{tool}", None if unknown else cid, outcome,
                                   client_name="bench", client_version="1", session_id=f"s{session}"))
            ts += rng.uniform(1, 90)
    with InvocationLog() as log:
        for i in range(0, len(recs), 5000):
            log.record_many(recs[i:i + 5000])
    return len(ids), len(picked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", type=int, default=500)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dataset", type=Path, help="a directory holding tools.jsonl")
    args = ap.parse_args()
    dataset = args.dataset or (SHARED_DATASET if (SHARED_DATASET / "tools.jsonl").exists() else VENDORED_DATASET)
    root = Path(tempfile.mkdtemp(prefix="mcpctl-bench-surface-"))
    os.environ["MCPCTL_HOME"] = str(root / "home")
    try:
        tools, servers = setup(dataset / "tools.jsonl", args.tools, args.calls)
        from mcpctl.catalogue.tokens import token_counter
        from mcpctl.cli._storage import open_storage
        from mcpctl.cli.surface import surface_report
        from mcpctl.presentation.surface_formats import report_json

        open_storage()          # what the CLI's root does for a command line
        counter = token_counter()
        print(f"mcpctl surface benchmark: {tools} tools on {servers} servers from {dataset / 'tools.jsonl'}, "
              f"{args.calls:,} calls in the log; {counter.label}")
        inproc: list[float] = []
        report = None
        for _ in range(args.runs):
            t0 = time.perf_counter()
            report, _failed = surface_report(PROJECT, window_days=30.0)
            json.dumps(report_json(report))
            inproc.append(time.perf_counter() - t0)
        assert report is not None
        e2e: list[float] = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            done = subprocess.run([MCPCTL, "surface", "--project", PROJECT, "-o", "json"], capture_output=True,
                                  text=True, env=os.environ.copy())
            e2e.append(time.perf_counter() - t0)
            if done.returncode != 0:
                sys.exit(f"mcpctl surface failed ({done.returncode}): {done.stderr}")
        base: list[float] = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([MCPCTL, "--version"], capture_output=True, check=True)
            base.append(time.perf_counter() - t0)
        out = json.loads(done.stdout)
        print(f"report: {out['total']['tools']} tools, {out['total']['enabled']} enabled, "
              f"{len(out['collisions'])} name collisions, {len(out['nearDuplicates']['pairs'])} near-duplicate "
              f"pairs, {out['use']['calls']:,} calls, {len(out['recommendations'])} recommendations; flat "
              f"{next(m['tokens'] for m in out['modes'] if m['mode'] == 'flat'):,} tokens")
        print(f"in process  : min {min(inproc):.3f} s, median {statistics.median(inproc):.3f} s ({args.runs} runs)")
        print(f"end to end  : min {min(e2e):.3f} s, median {statistics.median(e2e):.3f} s ({args.runs} runs)")
        print(f"startup     : min {min(base):.3f} s, median {statistics.median(base):.3f} s (mcpctl --version, "
              "for reference)")
        print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} on {os.cpu_count()} cores")
        ok = statistics.median(e2e) < BAR_S
        print(f"[{'PASS' if ok else 'FAIL'}] mcpctl surface on {tools} tools: median {statistics.median(e2e):.2f} s "
              f"< {BAR_S:g} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
