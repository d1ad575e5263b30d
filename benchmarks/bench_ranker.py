"""Ranker benchmark: quality on the evaluation sets, index build time and query latency.

    .venv/bin/python benchmarks/bench_ranker.py [--data ../shared/data] [--rankers bm25,hybrid]
                                               [--sizes 500,2000,10000] [--repeats 5] [--learned K] [--json]

Quality: every dataset folder under --data (default: ../shared/data relative to the repo root)
and tests/fixtures/user_requests (--extra; what people type, over real MCP servers):
LiveMCPBench all 95 queries (no split: report only, never tune on it), MetaTool test = fold 4
and dev = folds 0-3, ToolLens test = split test and dev = split train, user_requests test/dev
as its README says. `plain` is the floor (BM25 over name + description, k1 1.2, b .75, no
stemming or stop words).

Speed: catalogues of 500 / 2,000 / 10,000 tools made by replicating the LiveMCPBench catalogue
(real MCP tools and schemas) on renamed servers. Build is the median of --repeats builds; query
latency p50 / p95 is `search(query, 5)` (search_tools' default top_k) over real queries.
Semantic rankers (`dense` = MiniLM alone, `hybrid` = what `semantic`/`hybrid` select) are listed
only when the embedding model loads (`mcpctl tools install-semantic`); their query time is
dominated by embedding the query: p50/p95 are for queries never seen before (the query-vector
cache cleared first), `repeat p50` for the same queries asked again (served from that cache).
p50/p95 are wall-clock; `cpu p50` is the CPU time of the searching thread, which other work on a
shared machine does not inflate (BLAS runs in that thread: one BLAS thread, see semantic.py);
`short p50` is the wall-clock p50 over the 108 user_requests queries (what people type: 4-10
words), also new to the model.
Their vectors go to a temporary cache: the 500-tool row reports the cold first build
(embedding every tool); larger replicated catalogues reuse their originals' vectors (warm build).

`--learned K`: each ranker is measured a second time, in the same run, over the same catalogue
having learned K queries per tool from use (`catalogue.learn`, with its bounds: 20 a tool, 5,000
in all; the queries drawn from the other tools' pool), as `<ranker>+L`; its `vs` column is its p50
over the p50 of the same ranker without learning (median of per-query ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcpctl.catalogue.analyze import analyze
from mcpctl.catalogue.bm25 import BM25FIndex, BM25FParams
from mcpctl.catalogue.rank import Ranker, ToolDoc, build_ranker
from mcpctl.evaluation.datasets import Dataset, find_datasets, load_dataset, replicate
from mcpctl.evaluation.evaluate import evaluate

REPO = Path(__file__).resolve().parent.parent
TARGETS = {   # (dataset, portion) -> {metric: (floor, lexical target, semantic target)}
    # Lexical R@5 targets: the BM25F of before issue 12 (.394 / .659 / .337); semantic R@5: issue 12.
    ("livemcpbench", "test"): {"R@5": (.246, .394, .45), "R@10": (.330, .45, .51), "MRR@10": (.346, .44, .52)},
    ("metatool", "test"): {"R@1": (.275, .44, .56), "R@5": (.445, .659, .80)},
    ("toollens", "test"): {"R@5": (.172, .337, .37), "R@10": (.223, .40, .44)},
    ("user_requests", "test"): {"R@5": (0.0, 0.0, .80), "R@1": (0.0, 0.0, .85)},
    ("people_requests", "test"): {"R@1": (0.0, 0.0, .90)},
}


class PlainBM25:
    """The floor the targets are measured against."""

    kind = "plain"

    def __init__(self, docs: Sequence[ToolDoc]) -> None:
        self.index = BM25FIndex([d.id for d in docs], [{"text": f"{d.name} {d.description}"} for d in docs],
                                BM25FParams(weights={"text": 1.0}, k1=1.2, b=0.75),
                                analyzer=lambda s: analyze(s, stem=False, stop=False))

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return self.index.search(query, top_k)


def make(kind: str, docs: Sequence[ToolDoc]) -> Ranker:
    if kind == "plain":
        return PlainBM25(docs)
    if kind == "dense":   # MiniLM alone, for comparison (not offered as a project setting)
        from mcpctl.catalogue import semantic

        return semantic.HybridRanker(docs, lexical_weight=0.0, about_weight=0.0)
    return build_ranker(docs, kind)


def prefill_vector_cache(base: Sequence[ToolDoc], docs: Sequence[ToolDoc]) -> None:
    """Give every replicated tool its original's vector, so large catalogues build warm.

    Cold embedding throughput is measured on the real 500-tool catalogue instead.
    """
    from mcpctl.catalogue import semantic

    model, key = semantic.load_model()
    cache = semantic.VectorCache(key)
    stored = cache.load()
    with_server = len({d.server for d in base}) > 1
    vectors = semantic.embed_tools(model, key, base)   # (tool_text's default: with the server)
    assert vectors is not None
    period = len(base)
    for i, d in enumerate(docs):
        stored.setdefault(semantic.VectorCache.key(semantic.tool_text(d, with_server)),
                          vectors[i % period].astype("float16"))
    cache.save(stored)


def semantic_available() -> bool:
    try:
        from mcpctl.catalogue import semantic

        semantic.load_model()
    except Exception as e:
        print(f"(semantic rankers skipped: {type(e).__name__}: {e})", file=sys.stderr)
        return False
    return True


def quality(datasets: Sequence[Dataset], kinds: Sequence[str], dev_every: int) -> list[dict[str, Any]]:
    rows = []
    for ds in datasets:
        portions = ["test"] if all(q.portion is None for q in ds.queries) else ["test", "dev"]
        for kind in kinds:
            t0 = time.perf_counter()
            ranker = make(kind, ds.tools)
            build_s = time.perf_counter() - t0
            neural = hasattr(ranker, "_query_vector")   # dense and hybrid share the query-vector cache
            for portion in portions:
                queries = ds.select(portion)
                if neural and portion == "dev" and len(queries) > 1000:   # the large dev sets only
                    queries = queries[::dev_every]
                t0 = time.perf_counter()
                metrics = evaluate(ranker, queries)
                rows.append({"dataset": ds.name, "portion": portion, "ranker": kind, "queries": len(queries),
                             "build_s": build_s, "eval_s": time.perf_counter() - t0, **metrics})
                print(f"  {ds.name} {portion} {kind}: R@5 {metrics['R@5']:.3f}", file=sys.stderr)
    return rows


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def with_learned(docs: Sequence[ToolDoc], pool: Sequence[str], per_tool: int) -> list[ToolDoc]:
    """`docs` having learned `per_tool` queries each (two sessions apiece), under learn's bounds."""
    from mcpctl.audit.records import SearchEvidence
    from mcpctl.catalogue.learn import learn

    evidence = [SearchEvidence(pool[(i * per_tool + j) % len(pool)], d.id, f"s{i}-{j}-{k}", 1.0, True)
                for i, d in enumerate(docs) for j in range(per_tool) for k in range(2)]
    return learn(evidence, min_sessions=2, window_days=1e9, now=2.0).apply(docs)


def speed(base: Sequence[ToolDoc], queries: Sequence[str], sizes: Sequence[int], kinds: Sequence[str],
          repeats: int, short: Sequence[str] = (), learned: int = 0) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        plain = replicate(base, size)
        for kind, docs, tag in [(k, plain, k) for k in kinds] + (
                [(k, with_learned(plain, queries, learned), f"{k}+L") for k in kinds] if learned else []):
            row: dict[str, Any] = {"tools": size, "ranker": tag, "cold_build_s": None}
            if kind in ("dense", "hybrid"):
                if size <= len(base):   # a real catalogue, nothing cached: the first start
                    os.environ["MCPCTL_HOME"] = tempfile.mkdtemp(prefix="mcpctl-bench-cold-")
                    t0 = time.perf_counter()
                    make(kind, docs)
                    row["cold_build_s"] = time.perf_counter() - t0
                else:
                    prefill_vector_cache(base, docs)
            builds: list[float] = []
            ranker: Ranker | None = None
            for _ in range(repeats):
                t0 = time.perf_counter()
                ranker = make(kind, docs)
                builds.append(time.perf_counter() - t0)
            assert ranker is not None
            warm, timed = queries[:20], queries[20:]
            for q in warm:   # warm the analyzer's cache, as a running gateway has
                ranker.search(q, 5)
            neural = kind in ("dense", "hybrid")
            if neural:
                _query_cache().clear()         # every timed query is new to the model
            lat: list[float] = []
            cpu: list[float] = []
            for q in timed:
                c0, t0 = time.thread_time(), time.perf_counter()
                ranker.search(q, 5)
                lat.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.thread_time() - c0) * 1000)
            again: list[float] = []
            for q in timed[: _query_cache().size] if neural else ():
                t0 = time.perf_counter()
                ranker.search(q, 5)
                again.append((time.perf_counter() - t0) * 1000)
            brief: list[float] = []
            if neural and short:
                _query_cache().clear()
                for q in short:
                    t0 = time.perf_counter()
                    ranker.search(q, 5)
                    brief.append((time.perf_counter() - t0) * 1000)
            row.update(build_s=statistics.median(builds), p50_ms=_pct(lat, .5), p95_ms=_pct(lat, .95),
                       cpu_p50_ms=_pct(cpu, .5), short_p50_ms=_pct(brief, .5) if brief else None,
                       repeat_p50_ms=_pct(again, .5) if again else None, queries=len(lat), lat=lat)
            if tag != kind:      # the same queries without learning, measured earlier in this run
                before = next(r for r in rows if r["tools"] == size and r["ranker"] == kind)["lat"]
                row["vs"] = statistics.median(a / b for a, b in zip(lat, before, strict=True) if b > 0)
            rows.append(row)
            print(f"  {size} {kind}: build {row['build_s']:.2f}s p50 {row['p50_ms']:.2f}ms", file=sys.stderr)
    return rows


def _query_cache() -> Any:
    from mcpctl.catalogue import semantic

    return semantic.query_vectors


def _fmt_quality(rows: list[dict[str, Any]]) -> str:
    head = f"{'dataset':13} {'split':5} {'ranker':8} {'queries':>7}  R@1    R@5    R@10   MRR@10 nDCG@10 C@10   targets (lexical / semantic)"
    lines = [head, "-" * len(head)]
    for r in rows:
        tgt = TARGETS.get((r["dataset"], r["portion"]), {})
        level = 2 if r["ranker"] in ("semantic", "hybrid", "dense") else 1
        marks = []
        for m, t in tgt.items():
            if r["ranker"] == "plain":
                continue
            marks.append(f"{m} {t[level]:.2f} {'ok' if r[m] >= t[level] - 5e-4 else 'MISS'}")
        lines.append(f"{r['dataset']:13} {r['portion']:5} {r['ranker']:8} {r['queries']:>7}  "
                     + " ".join(f"{r[m]:.3f}" for m in ("R@1", "R@5", "R@10", "MRR@10", "nDCG@10", "C@10"))
                     + ("   " + ", ".join(marks) if marks else ""))
    return "\n".join(lines)


def _fmt_speed(rows: list[dict[str, Any]]) -> str:
    head = (f"{'tools':>6} {'ranker':9} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} {'short p50':>9} "
            f"{'repeat p50':>10} {'vs':>6}  {'cold build s (embedding)':>24}")
    lines = [head, "-" * len(head)]
    for r in rows:
        cold = f"{r['cold_build_s']:>24.1f}" if r["cold_build_s"] is not None else ""
        again = f"{r['repeat_p50_ms']:>10.2f}" if r.get("repeat_p50_ms") is not None else " " * 10
        brief = f"{r['short_p50_ms']:>9.2f}" if r.get("short_p50_ms") is not None else " " * 9
        vs = f"{r['vs']:>5.2f}x" if r.get("vs") is not None else " " * 6
        lines.append(f"{r['tools']:>6} {r['ranker']:9} {r['build_s']:>8.3f} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
                     f"{r['cpu_p50_ms']:>8.2f} {brief} {again} {vs}  {cold}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--extra", type=Path, action="append", default=None,
                    help="more dataset folders (default: tests/fixtures/user_requests)")
    ap.add_argument("--rankers", default="plain,bm25,dense,hybrid",
                    help="plain (the floor), bm25, dense (MiniLM alone), hybrid (= semantic)")
    ap.add_argument("--sizes", default="500,2000,10000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--latency-queries", type=int, default=500)
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--dev-every", type=int, default=4,
                    help="semantic rankers score every Nth dev query (test portions are always complete)")
    ap.add_argument("--learned", type=int, default=0,
                    help="also measure each ranker having learned K queries per tool (as <ranker>+L)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    folders = find_datasets(args.data)
    if not folders:
        print(f"no datasets under {args.data}", file=sys.stderr)
        return 1
    kinds = [k for k in args.rankers.split(",") if k]
    neural = ("semantic", "hybrid", "dense")
    if any(k in neural for k in kinds):
        if semantic_available():
            # Vectors go to a throw-away cache: the first build is cold, as on a first start.
            os.environ["MCPCTL_HOME"] = tempfile.mkdtemp(prefix="mcpctl-bench-")
        else:
            kinds = [k for k in kinds if k not in neural]
    extra = args.extra if args.extra is not None else [REPO / "tests" / "fixtures" / "user_requests",
                                                       REPO / "tests" / "fixtures" / "people_requests"]
    datasets = [load_dataset(f) for f in [*folders, *extra]]
    by_name = {d.name: d for d in datasets}

    if any(k in neural for k in kinds):   # quality: every query embedded once, for dense and hybrid
        _query_cache().size = 1_000_000
    qual = [] if args.skip_quality else quality(datasets, kinds, max(1, args.dev_every))
    if any(k in neural for k in kinds):
        from mcpctl.catalogue import semantic

        _query_cache().clear()
        _query_cache().size = semantic.QUERY_CACHE_SIZE
    base = by_name.get("livemcpbench", datasets[0])
    pool: list[str] = [q.text for q in base.queries]
    for other in datasets:   # more real queries, interleaved so each dataset is represented
        if other is not base and other.name not in ("user_requests", "people_requests"):
            pool.extend(q.text for q in other.select("test")[: args.latency_queries // 2])
    pool = pool[: args.latency_queries]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    short = [q.text for q in by_name["user_requests"].queries] if "user_requests" in by_name else []
    spd = speed(base.tools, pool, sizes, [k for k in kinds if k != "plain"], args.repeats, short, args.learned)
    for r in spd:
        r.pop("lat", None)

    if args.json:
        print(json.dumps({"quality": qual, "speed": spd}, indent=2))
        return 0
    if qual:
        print("Quality (datasets under", args.data, ")")
        print(_fmt_quality(qual))
        print()
    print(f"Speed: catalogue = LiveMCPBench replicated; {len(pool)} real queries; "
          f"build = median of {args.repeats}; search(q, top_k=5)")
    print(_fmt_speed(spd))
    return 0


if __name__ == "__main__":
    sys.exit(main())


