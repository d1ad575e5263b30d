"""The hybrid ranker's fusion weights on the dev portions only (never the test portions).

    PYTHONPATH=src .venv/bin/python benchmarks/sweep_fusion.py [--data ../shared/data] [--every 4]
                                                               [--lexical .2,.3,.4] [--about 0,.15,.3]

For each dev query (MetaTool folds 0-3 and ToolLens train, every --every-th; user_requests dev,
all 36), the BM25F scores and the semantic scores (tool cosine, and the server's about cosine
apart) are computed once, then every (lexical weight, about weight) pair is scored from them:
rank by lw * minmax(bm25f) + (1 - lw) * minmax(cos_tool + aw * cos_about). Prints R@5 / R@10
per dev set and their mean. What `semantic.LEXICAL_WEIGHT` and `semantic.ABOUT_WEIGHT` are set
from (docs/ranking.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mcpctl.catalogue import semantic
from mcpctl.evaluation.datasets import Dataset, load_dataset
from mcpctl.evaluation.metrics import DEPTH, mean_scores

REPO = Path(__file__).resolve().parent.parent


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def sweep(ds: Dataset, every: int, lexical: Sequence[float], about: Sequence[float]) -> dict[tuple[float, float], dict[str, float]]:
    queries = ds.select("dev")
    queries = queries[::every] if len(queries) > 1000 else queries
    ranker = semantic.HybridRanker(ds.tools, about_weight=1.0)   # about vectors computed; weighted below
    assert ranker.vectors is not None
    n = len(ranker.ids)
    about_vecs = ranker.about_vectors if ranker.about_vectors is not None else np.zeros((0, ranker.model.dim))
    rankings: dict[tuple[float, float], list[tuple[list[str], tuple[frozenset[str], ...]]]] = {
        (lw, aw): [] for lw in lexical for aw in about}
    for q in queries:
        qv = semantic.query_vectors.get(ranker.model, ranker.model_key, q.text)
        cos = ranker.vectors @ qv
        cos_about = np.append(about_vecs @ qv, np.float32(0.0))[ranker._server_of]
        lex = np.zeros(n, dtype=np.float32)
        for d, s in ranker.lexical.index.scores(q.text).items():
            lex[d] = s
        lex_n = _minmax(lex)
        for aw in about:
            sem_n = _minmax(cos + aw * cos_about)
            for lw in lexical:
                fused = lw * lex_n + (1 - lw) * sem_n
                top = np.argsort(-fused, kind="stable")[:DEPTH]
                rankings[(lw, aw)].append(([ranker.ids[i] for i in top], q.groups))
    return {key: mean_scores(rows) for key, rows in rankings.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--lexical", default=".2,.25,.3,.35,.4,.5")
    ap.add_argument("--about", default="0,.15,.3")
    args = ap.parse_args()
    lexical, about = _floats(args.lexical), _floats(args.about)
    folders = [Path(args.data) / "metatool", Path(args.data) / "toollens", REPO / "tests/fixtures/user_requests"]
    results = {}
    for folder in folders:
        ds = load_dataset(folder)
        print(f"{ds.name}: {len(ds.select('dev'))} dev queries", file=sys.stderr)
        results[ds.name] = sweep(ds, args.every, lexical, about)
    names = list(results)
    print(f"{'lexical':>7} {'about':>5}  " + "  ".join(f"{n + ' R@5/R@10':>24}" for n in names) + "  mean R@5")
    for lw in lexical:
        for aw in about:
            cells = [results[n][(lw, aw)] for n in names]
            mean = sum(c["R@5"] for c in cells) / len(cells)
            print(f"{lw:7.2f} {aw:5.2f}  " + "  ".join(f"{c['R@5']:>15.3f} / {c['R@10']:.3f}" for c in cells)
                  + f"  {mean:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
