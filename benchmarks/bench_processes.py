"""What one mcpctl process costs from start to exit, against another installation (not a test).

    .venv/bin/python benchmarks/bench_processes.py [--rounds 8] [--baseline MCPCTL_EXE] [--json out.jsonl]
        [--kinds '--help,get --help,completion']

Most of what an agent, a script or the test suite pays for mcpctl is processes that start, do a
little and exit: a CLI verb, an example server a gateway starts, a gateway a client starts and
closes. Each kind below runs end to end; the CPU it used (user + system, its children included:
a gateway's upstreams are part of its cost) and its wall time from start to exit are measured:

- `--version`: the CLI's floor;
- `--help`: the root's help (every command's name and summary); `get --help`, `tools --help`: a
  command's and a group's;
- `completion`: what the shell runs on TAB after `mcpctl get `;
- `get servers`, `describe server calc`, `favourites list --project demo`: verbs that read the store
  (and the catalogue cache);
- `tools list`: a verb that reads the catalogue cache;
- `example-server`: `mcpctl example-server calc` answering initialize and tools/list, stdin closed;
- `gateway session`: `mcpctl serve --project demo` over the three example servers: initialize,
  tools/list, one tools/call, stdin closed, until the gateway and its upstreams have exited.

The store is the demo's (`mcpctl demo --home`, built once with this checkout and copied for the
baseline, so neither reads the other's early-answer record or status). With `--baseline`
every kind runs for both executables in each round, the order reversed every other round, and the
summary gives medians and current/baseline as the median of the per-round ratios (2 noisy cores:
only paired ratios mean much).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MCPCTL = str(Path(sys.executable).parent / "mcpctl")
HANDSHAKE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "1"}}}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _session(argv: list[str], env: dict[str, str], call: dict[str, Any] | None) -> None:
    """initialize, tools/list (and `call`) over stdio with a raw client; stdin closed; wait for exit."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert p.stdin is not None and p.stdout is not None

    def ask(msg: dict[str, Any]) -> dict[str, Any]:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        if "id" not in msg:
            return {}
        while line := p.stdout.readline():          # notifications (list_changed) may come first
            got = json.loads(line)
            if got.get("id") == msg["id"]:
                return dict(got)
        raise SystemExit(f"{argv}: closed stdout before answering {msg['method']}")

    ask(HANDSHAKE)
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    if call is not None:
        got = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        if got.get("result", {}).get("isError") is not False:
            raise SystemExit(f"{argv}: the call failed: {got}")
    p.stdin.close()
    if p.wait(timeout=60) != 0:
        raise SystemExit(f"{argv}: exited {p.returncode}")


def kinds(exe: str) -> dict[str, Callable[[dict[str, str]], None]]:
    def run(*args: str) -> Callable[[dict[str, str]], None]:
        def go(env: dict[str, str]) -> None:
            subprocess.run([exe, *args], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return go

    def complete(env: dict[str, str]) -> None:      # what the shell runs on TAB after `mcpctl get `
        subprocess.run([exe], env=env | {"_MCPCTL_COMPLETE": "complete_bash", "COMP_WORDS": "mcpctl get ",
                                         "COMP_CWORD": "2"}, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    return {
        "--version": run("--version"),
        "--help": run("--help"),
        "get --help": run("get", "--help"),
        "tools --help": run("tools", "--help"),
        "completion": complete,
        "get servers": run("get", "servers"),
        "describe server": run("describe", "server", "calc"),
        "favourites list": run("favourites", "list", "--project", "demo"),
        "tools list": run("tools", "list", "--project", "demo"),
        "example-server": lambda env: _session([exe, "example-server", "calc"], env, None),
        "gateway session": lambda env: _session([exe, "serve", "--project", "demo"], env,
                                                {"name": "calc__add", "arguments": {"a": 1, "b": 2}}),
    }


def measure(fn: Callable[[dict[str, str]], None], env: dict[str, str]) -> tuple[float, float]:
    c0, t0 = _children_cpu(), time.perf_counter()
    fn(env)
    return _children_cpu() - c0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--baseline", metavar="MCPCTL_EXE", help="another installation's mcpctl, measured in the same rounds")
    ap.add_argument("--json", type=Path, help="append the per-round numbers to this file")
    ap.add_argument("--kinds", help="only these kinds, comma-separated (default: all)")
    a = ap.parse_args()
    targets = {"current": MCPCTL} | ({"baseline": a.baseline} if a.baseline else {})
    only = set(a.kinds.split(",")) if a.kinds else None
    if only and only - set(kinds(MCPCTL)):
        raise SystemExit(f"unknown kinds: {sorted(only - set(kinds(MCPCTL)))}")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        subprocess.run([MCPCTL, "demo", "--home", str(home)], check=True, stdout=subprocess.DEVNULL)
        envs = {}
        for t, exe in targets.items():
            if t != "current":
                shutil.copytree(home, Path(tmp) / t)
            envs[t] = {**os.environ, "MCPCTL_HOME": str(home if t == "current" else Path(tmp) / t),
                       "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ['PATH']}"}
        runs = {t: {k: fn for k, fn in kinds(exe).items() if only is None or k in only} for t, exe in targets.items()}
        got: dict[str, dict[str, list[tuple[float, float]]]] = {t: {k: [] for k in runs[t]} for t in targets}
        for _ in range(2):                          # warm the page cache and the catalogue cache
            for t in targets:
                for fn in runs[t].values():
                    measure(fn, envs[t])
        for r in range(a.rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for kind in runs["current"]:
                for t in order:
                    got[t][kind].append(measure(runs[t][kind], envs[t]))
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")
    print(f"{a.rounds} rounds, medians; cpu = user+system of the process and its children"
          f"{'; ratio = median of per-round current/baseline' if a.baseline else ''}")
    print(f"{'':18s} {'cpu s':>8s} {'wall s':>8s}" + (f" {'base cpu':>9s} {'base wall':>9s} {'cpu ratio':>9s} {'wall ratio':>10s}"
                                                     if a.baseline else ""))
    summary: dict[str, Any] = {}
    for kind in runs["current"]:
        cur = got["current"][kind]
        row = {"cpu_s": statistics.median(c for c, _ in cur), "wall_s": statistics.median(w for _, w in cur)}
        line = f"{kind:18s} {row['cpu_s']:8.3f} {row['wall_s']:8.3f}"
        if a.baseline:
            base = got["baseline"][kind]
            row |= {"base_cpu_s": statistics.median(c for c, _ in base), "base_wall_s": statistics.median(w for _, w in base),
                    "cpu_ratio": statistics.median(c / b for (c, _), (b, _) in zip(cur, base, strict=True)),
                    "wall_ratio": statistics.median(c / b for (_, c), (_, b) in zip(cur, base, strict=True))}
            line += (f" {row['base_cpu_s']:9.3f} {row['base_wall_s']:9.3f} {row['cpu_ratio']:8.3f}x"
                     f" {row['wall_ratio']:9.3f}x")
        summary[kind] = row
        print(line)
    if a.json:
        with a.json.open("a") as f:
            f.write(json.dumps({"rounds": a.rounds, "summary": summary, "per_round": got}) + "\n")


if __name__ == "__main__":
    main()
