"""The `ask` passage index at scale, in process (not a test).

    .venv/bin/python benchmarks/bench_ask.py [--passages 10000] [--ranker auto] [--queries 50]

Builds resources of prose (sentences of the fixture documents, tests/fixtures/ask, shuffled with
a fixed seed, numbered so that no two passages are the same), puts them into a `PassageIndex` and
prints, for `--passages` passages: the time to cut them, to build the ranker (BM25F, and with
`auto`/`hybrid` the MiniLM vectors, computed cold in a fresh MCPCTL_HOME), the median and p95 of
a question, the text indexed and the process's resident memory before and after (VmRSS).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ask"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _sentences() -> list[str]:
    out: list[str] = []
    for path in sorted(DATA.glob("*.jsonl")):
        if path.name == "queries.jsonl":
            continue
        for line in path.read_text().splitlines():
            text = json.loads(line)["text"]
            out += [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n", text) if len(s.strip()) > 30]
    return out


def _resources(passages: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(uri, title, text) with about `passages` passages in all: 10 paragraphs of ~600 characters each."""
    pool = _sentences()
    out = []
    for r in range((passages + 9) // 10):
        paras = []
        for p in range(10):
            words: list[str] = [f"Record {r}.{p}:"]
            while sum(len(w) + 1 for w in words) < 600:
                words.append(rng.choice(pool))
            paras.append(" ".join(words)[:780])
        out.append((f"bench://doc/{r}", f"Document {r}", "\n\n".join(paras)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=10_000)
    ap.add_argument("--ranker", default="auto", choices=("auto", "bm25", "semantic", "hybrid"))
    ap.add_argument("--queries", type=int, default=50)
    a = ap.parse_args()
    os.environ["MCPCTL_HOME"] = tempfile.mkdtemp(prefix="bench-ask-")     # cold vector cache
    from mcpctl.ask.index import PassageIndex
    from mcpctl.catalogue.rank import build_ranker

    rng = random.Random(23)
    resources = _resources(a.passages, rng)
    questions = [json.loads(q)["text"] for q in (DATA / "queries.jsonl").read_text().splitlines()]
    if a.ranker != "bm25":
        build_ranker([], a.ranker)          # load the model first: its own memory is not the index's
    base = _rss_mb()
    index = PassageIndex(a.ranker, max_bytes=2**30)
    t0 = time.perf_counter()
    for uri, title, text in resources:
        index.put("bench", uri, title, text)
    cut_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    ranker, _ = index.ranker()
    build_s, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    after = _rss_mb()
    times = []
    for i in range(a.queries):
        q = questions[i % len(questions)]
        t0 = time.perf_counter()
        index.search(q, 5)
        times.append((time.perf_counter() - t0) * 1000)
    p95 = sorted(times)[max(0, int(len(times) * 0.95) - 1)]
    print(f"loadavg {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")
    print(f"ranker {getattr(ranker, 'kind', a.ranker)} (asked {a.ranker})")
    print(f"passages {len(index):,} from {len(resources):,} resources, text {index.size / 2**20:.1f} MiB")
    print(f"cut {cut_s:.2f} s; build {build_s:.2f} s wall, {build_cpu:.2f} s CPU "
          f"({len(index) / build_s:,.0f} passages/s)")
    print(f"question median {statistics.median(times):.1f} ms, p95 {p95:.1f} ms")
    print(f"memory: VmRSS {base:.0f} MB before the index, {after:.0f} MB after (+{after - base:.0f} MB)")


if __name__ == "__main__":
    main()
