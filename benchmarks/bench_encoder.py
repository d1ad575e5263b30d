"""The numpy MiniLM encoder against its own earlier version, in one process, paired rounds.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_encoder.py [--baseline REV] [--rounds 7]
                                                                [--data ../shared/data]

Loads `catalogue/minilm.py` as it is at git revision REV (default HEAD) next to the working
tree's, on the same weights (the installed package that `mcpctl tools install-semantic` adds),
and times, alternating which goes first in each round:
  - query: embedding real queries one at a time (MetaTool and ToolLens queries, 4-60 words;
    what a `search_tools` call that misses the query cache costs), median per round;
  - tools: embedding LiveMCPBench tool texts in batches (--tools of its 527: what a new
    catalogue costs once).
Prints each side's median over rounds, the ratio new/baseline, and the largest difference
between the two sides' vectors (cosine): a faster encoder must give the same vectors.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from mcpctl.catalogue import semantic  # imports numpy, after setting one BLAS thread as mcpctl does
from mcpctl.evaluation.datasets import load_dataset

REPO = Path(__file__).resolve().parent.parent


def _module_at(rev: str) -> ModuleType:
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:src/mcpctl/catalogue/minilm.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="mcpctl-bench-encoder-")) / "minilm_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("minilm_baseline", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="HEAD")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--queries", type=int, default=60, help="queries per round")
    ap.add_argument("--tools", type=int, default=200, help="LiveMCPBench tool texts per round (of 527)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = ap.parse_args()
    import numpy as np  # only after `semantic` (above) has chosen the BLAS threads

    model_dir = semantic.find_model_dir()
    new = semantic.MiniLM(model_dir)
    old = _module_at(args.baseline).MiniLM(model_dir)
    queries = [q.text for name in ("metatool", "toollens")
               for q in load_dataset(args.data / name).select("test")[:: 37]][: args.queries]
    tools = [semantic.tool_text(d) for d in load_dataset(args.data / "livemcpbench").tools][: args.tools]
    words = sorted(len(q.split()) for q in queries)
    print(f"{len(queries)} queries ({words[0]}-{words[-1]} words, median {statistics.median(words):.0f}), "
          f"{len(tools)} tool texts, {args.rounds} paired rounds, baseline {args.baseline}", file=sys.stderr)

    sides = {"baseline": old, "new": new}
    query_ms: dict[str, list[float]] = {k: [] for k in sides}
    tools_ms: dict[str, list[float]] = {k: [] for k in sides}
    for q in queries[:5]:                      # warm the tokenizer caches and BLAS
        old.embed([q]), new.embed([q])
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for name in order:
            model = sides[name]
            query_ms[name].append(statistics.median(_timed(lambda q=q, m=model: m.embed([q])) for q in queries))
        for name in order:
            model = sides[name]
            tools_ms[name].append(_timed(lambda m=model: m.embed(tools)))
        print(f"  round {r + 1}: query {query_ms['baseline'][-1]:.2f} / {query_ms['new'][-1]:.2f} ms, "
              f"tools {tools_ms['baseline'][-1]:.0f} / {tools_ms['new'][-1]:.0f} ms", file=sys.stderr)

    a, b = old.embed(queries + tools[:64]), new.embed(queries + tools[:64])
    worst = float(np.min(np.sum(a * b, axis=1)))
    print(f"{'':24}{'baseline ms':>12}{'new ms':>10}{'ratio':>8}")
    for label, rows in (("query embedding p50", query_ms), (f"{len(tools)} tool texts", tools_ms)):
        base, mine = statistics.median(rows["baseline"]), statistics.median(rows["new"])
        print(f"{label:24}{base:>12.2f}{mine:>10.2f}{mine / base:>8.3f}")
    print(f"lowest cosine between the two sides' vectors: {worst:.7f}")
    return 0 if worst > 0.99999 else 1


if __name__ == "__main__":
    sys.exit(main())
