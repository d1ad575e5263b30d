"""How `mcpctl surface` and `mcpctl tools list` grow with the catalogue (not a test).

    .venv/bin/python benchmarks/bench_cli_scale.py [--small 5000] [--large 50000] [--runs 3] [--calls 2000]
        [--with-embedding] [--commands "tools list,tools search"]

Two stores are built as `bench_surface.py` builds one (real LiveMCPBench definitions, whole servers
registered again under new names until there are enough tools, their listings in the catalogue
cache, a project holding them all, --calls rows in the invocation log): one of --small tools and
one of --large. Each command runs end to end (`mcpctl surface -p big -o json`, `mcpctl tools list
-p big -o json`) against both stores in paired rounds (small then large, --runs times), and the
medians and their ratio are printed. The bar (issue 17): the large run within 10x the small one
for 10x the tools, i.e. close to linear growth. Absolute times move with the machine's load (printed);
the ratio of paired rounds much less. `tools search -p big "create a github issue"` is timed the same
way (not under the bar).

`--with-embedding`: the project's `search.ranker` is `auto`, and while the commands run, each store's
project is being embedded by a process of its own (the CLI's background indexer,
`cli._storage.index_child`, which holds the vector cache's lock, `vectors._computing`, as a gateway
embedding the catalogue does): issue 37's "while a gateway embeds". (A real `mcpctl serve` would
also connect to every one of the store's thousands of servers.) `tools search` must then answer
keyword-only, saying so (a note is printed when it does not), and `tools search` runs first;
the benchmark prints whether each indexer still held the lock at the end.
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
            "tools list": ["tools", "list", "-p", bs.PROJECT, "-o", "json"],
            "tools search": ["tools", "search", "-p", bs.PROJECT, "create a github issue", "-o", "json"]}
UNDER_BAR = ("surface", "tools list")
KEYWORD_ONLY = "this answer is keyword-only"


def build(root: Path, tools: int, calls: int, dataset: Path) -> tuple[Path, int, int]:
    home = root / f"home-{tools}"
    os.environ["MCPCTL_HOME"] = str(home)
    t0 = time.perf_counter()
    n, servers = bs.setup(dataset / "tools.jsonl", tools, calls)
    print(f"store of {n:,} tools on {servers:,} servers built in {time.perf_counter() - t0:.1f} s", flush=True)
    return home, n, servers


def timed(home: Path, argv: list[str], embedding: bool = False) -> float:
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    t0 = time.perf_counter()
    done = subprocess.run([bs.MCPCTL, *argv], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"mcpctl {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    if embedding and argv[:2] == ["tools", "search"] and KEYWORD_ONLY not in done.stderr:
        print(f"  note: {home.name}: tools search did not answer keyword-only (its indexer done?)", flush=True)
    return elapsed


def start_embedding(home: Path) -> subprocess.Popen[bytes]:
    """Set the project's ranker to auto and start embedding its tools in a process of its own
    (the CLI's background indexer); returns once that process holds the vector cache's lock."""
    from mcpctl.catalogue.semantic import computing_elsewhere, model_key
    from mcpctl.resources.store import Store

    os.environ["MCPCTL_HOME"] = str(home)
    store = Store()
    project = store.get("Project", bs.PROJECT)
    project["spec"]["search"] = {"ranker": "auto"}
    store.put(project)
    code = "import sys\nfrom mcpctl.cli._storage import index_child\nindex_child('', sys.argv[1:])\n"
    proc = subprocess.Popen([sys.executable, "-c", code, *project["spec"]["servers"]], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    while not computing_elsewhere(model_key()):
        if proc.poll() is not None:
            sys.exit(f"the indexer of {home} ended ({proc.returncode}) before embedding")
        time.sleep(0.5)
    return proc


def still_embedding(home: Path) -> bool:
    from mcpctl.catalogue.semantic import computing_elsewhere, model_key

    os.environ["MCPCTL_HOME"] = str(home)
    return computing_elsewhere(model_key())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=5000)
    ap.add_argument("--large", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--dataset", type=Path, help="a directory holding tools.jsonl")
    ap.add_argument("--with-embedding", action="store_true",
                    help="time the commands while each store's project is being embedded (search.ranker: auto)")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help=f"which commands to time, comma-separated (default: {','.join(COMMANDS)})")
    args = ap.parse_args()
    dataset = args.dataset or (bs.SHARED_DATASET if (bs.SHARED_DATASET / "tools.jsonl").exists()
                               else bs.VENDORED_DATASET)
    root = Path(tempfile.mkdtemp(prefix="mcpctl-bench-scale-"))
    indexers: list[subprocess.Popen[bytes]] = []
    try:
        small = build(root, args.small, args.calls, dataset)
        large = build(root, args.large, args.calls, dataset)
        if args.with_embedding:
            indexers += [start_embedding(small[0]), start_embedding(large[0])]
            print(f"embedding both projects in the background (pids {' '.join(str(p.pid) for p in indexers)})",
                  flush=True)
        ok = rounds(small, large, args.runs, args.with_embedding, [c.strip() for c in args.commands.split(",")])
        if args.with_embedding:
            for home, n, _ in (small, large):
                print(f"the indexer of the {n:,}-tool store still held the vectors' lock at the end: "
                      f"{still_embedding(home)}")
        print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} on {os.cpu_count()} cores")
        sys.exit(0 if ok else 1)
    finally:
        for proc in indexers:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def rounds(small: tuple[Path, int, int], large: tuple[Path, int, int], runs: int, embedding: bool,
           labels: list[str]) -> bool:
    """Each command against both stores in paired rounds (small, then large); prints the medians
    and their ratio; whether every command under the bar kept within it."""
    ok = True
    order = sorted(labels, key=lambda label: label != "tools search") if embedding else labels
    for label in order:
        argv = COMMANDS[label]
        times: dict[int, list[float]] = {small[1]: [], large[1]: []}
        for _ in range(runs):
            for home, n, _servers in (small, large):
                times[n].append(timed(home, argv, embedding))
        ms, ml = statistics.median(times[small[1]]), statistics.median(times[large[1]])
        ratio = ml / ms
        bar = BAR * large[1] / small[1] / 10
        verdict = ("PASS" if ratio <= bar else "FAIL") if label in UNDER_BAR else "not under the bar"
        ok &= ratio <= bar or label not in UNDER_BAR
        print(f"{label:12}: {small[1]:>7,} tools median {ms:7.2f} s | {large[1]:>7,} tools median {ml:7.2f} s | "
              f"ratio {ratio:5.2f} (bar {bar:g}) [{verdict}] load {os.getloadavg()[0]:.1f}", flush=True)
    return ok


if __name__ == "__main__":
    main()
