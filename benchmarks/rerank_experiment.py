"""Issue 31 experiment: can a small learned re-ranking of the hybrid ranker's top K raise R@1?

    nice .venv/bin/python benchmarks/rerank_experiment.py cv [--k 10]
    nice .venv/bin/python benchmarks/rerank_experiment.py guard [--n 400]    # shared sets' dev portions
    nice .venv/bin/python benchmarks/rerank_experiment.py test               # once, the design frozen

For each request the hybrid ranker's top K (its final, staged order) are described by the scores
its stages already compute and a few cheap new features (FEATURES), and a linear model is fitted
on gold-vs-other pairs (L2-regularised logistic regression, numpy, gradient descent) on dev data
only: the ten tuning_requests* sets and the dev portions of user_requests and people_requests.
Features and regularisation are chosen by leave-one-set-out cross-validation over those twelve
dev sets (`cv`); `guard` scores the fitted model on samples of MetaTool's and ToolLens's dev
portions (never trained on); `test` scores every test portion once. After re-ranking, the read
rule is applied again (no tool that changes or deletes above the best matching reader for a
read-phrased request). docs/ranking.md ("A learned re-ranking stage") has the result: +2 of 1,066
dev requests in CV, no first pick changed on the people-phrased test portions, a little R@1 lost on
MetaTool and ToolLens; not adopted (the ranker is unchanged). `--cache FILE` keeps the dev sets'
features between runs (featurising them takes minutes on a loaded machine).
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from mcpctl.catalogue import semantic
from mcpctl.catalogue.effect import CHANGES, DELETES, READS, name_verb, stem_of
from mcpctl.catalogue.intent import CAP_TRUST, MATCHING_SHARE
from mcpctl.catalogue.rank import build_ranker
from mcpctl.evaluation.datasets import Dataset, Query, load_dataset
from mcpctl.evaluation.metrics import DEPTH, MetricTotals, score_query

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
SHARED = REPO.parent / "shared" / "data" if (REPO.parent / "shared" / "data").is_dir() else Path("/work/shared/data")
TUNING = sorted(p for p in FIX.iterdir() if p.name.startswith("tuning_requests"))
DEV_SETS = [*TUNING, FIX / "user_requests", FIX / "people_requests"]

FEATURES = ("staged_rel", "log_rank", "fused_rel", "lex_rel", "cos_gap", "factor", "effect_match", "effect_miss",
            "name_cov", "name_obj_cov", "name_verb_in_q", "query_cov", "name_cos_gap", "desc_cos_gap")


@dataclass
class Item:
    """One request's top K: their tool indexes, features (K x F), which are gold, and the read rule."""

    tools: np.ndarray
    x: np.ndarray
    gold: np.ndarray
    groups: tuple[frozenset[str], ...]
    ids: list[str]
    demote: np.ndarray      # per candidate: changes/deletes trusted (read-phrased requests only)
    reader: np.ndarray      # per candidate: a matching trusted reader


class Featurizer:
    """Everything the features need over one catalogue: the hybrid ranker and a few per-tool texts."""

    def __init__(self, ds: Dataset) -> None:
        r = build_ranker(list(ds.tools), "hybrid")
        assert isinstance(r, semantic.HybridRanker) and r.vectors is not None, "the hybrid ranker needs the model"
        self.r = r
        an = r.lexical.index.analyzer
        self.name_terms = [set(an(semantic.readable(d.name))) for d in ds.tools]
        verbs = [name_verb(d.name) for d in ds.tools]
        self.name_verb = [stem_of(v[1]) if v else "" for v in verbs]
        self.name_obj = [t - {v} for t, v in zip(self.name_terms, self.name_verb, strict=True)]
        self.doc_terms = [set(an(f"{d.name} {d.description}")) for d in ds.tools]
        names = semantic.embed_texts(r.model, r.model_key, [semantic.readable(d.name) for d in ds.tools])
        descs = semantic.embed_texts(r.model, r.model_key, [d.description.split(". ")[0] or d.name for d in ds.tools])
        assert names is not None and descs is not None
        self.name_vec, self.desc_vec = names, descs
        self.effects = [d.effect for d in ds.tools]

    def item(self, q: Query, k: int) -> Item:
        r = self.r
        vectors = r.vectors
        assert vectors is not None
        intent = r.lexical.intent(q.text)
        lex, fused = r.fused(intent, vectors)
        cos = r.semantic_scores(intent.text, vectors)
        staged = r.scores(q.text, vectors)
        factors = r.lexical.stage.factors(intent)
        n = len(staged)
        top = sorted(np.argpartition(-staged, min(k, n) - 1)[:k].tolist(), key=lambda i: (-staged[i], i))
        t = np.array(top)
        qv = r._query_vector(intent.text)
        qterms = set(r.lexical.index.analyzer(intent.text))
        action = intent.action.effect if intent.action else None
        s_top = max(float(staged[t[0]]), 1e-9)
        f_top, l_top = max(float(fused[t].max()), 1e-9), max(float(lex[t].max()), 1e-9)
        ncos, dcos = self.name_vec[t] @ qv, self.desc_vec[t] @ qv
        rows = []
        for j, i in enumerate(top):
            e = self.effects[i]
            known = action is not None and e.effect is not None
            nt, no = self.name_terms[i], self.name_obj[i]
            rows.append([staged[i] / s_top, np.log1p(j), fused[i] / f_top, lex[i] / l_top, cos[i] - cos[t].max(),
                         factors[i] if factors else 1.0,
                         float(known and e.effect == action) * e.trust, float(known and e.effect != action) * e.trust,
                         len(nt & qterms) / max(len(nt), 1), len(no & qterms) / max(len(no), 1),
                         float(bool(self.name_verb[i]) and self.name_verb[i] in qterms),
                         len(qterms & self.doc_terms[i]) / max(len(qterms), 1),
                         ncos[j] - ncos.max(), dcos[j] - dcos.max()])
        ids = [r.ids[i] for i in top]
        gold = np.array([any(tid in g for g in q.groups) for tid in ids])
        read = action == READS
        demote = np.array([read and self.effects[i].effect in (CHANGES, DELETES) and self.effects[i].trust >= CAP_TRUST
                           for i in top])
        floor = MATCHING_SHARE * float(fused.max())
        reader = np.array([read and self.effects[i].effect == READS and self.effects[i].trust >= CAP_TRUST
                           and fused[i] >= floor for i in top])
        return Item(t, np.array(rows, dtype=np.float64), gold, q.groups, ids, demote, reader)


def items_of(path: Path, portion: str, k: int, limit: int | None = None) -> list[Item]:
    ds = load_dataset(path)
    qs = ds.select(portion)
    if limit is not None and len(qs) > limit:
        qs = random.Random(31).sample(qs, limit)
    f = Featurizer(ds)
    return [f.item(q, k) for q in qs]


def pairs(items: Sequence[Item], cols: list[int], gate: float = 0.0) -> np.ndarray:
    """gold - other feature differences among the candidates within `gate` of the top (staged_rel), one
    row per pair."""
    out = []
    for it in items:
        near = it.x[:, 0] >= gate
        gold, other = it.gold & near, ~it.gold & near
        if gold.any() and other.any():
            g, o = it.x[gold][:, cols], it.x[other][:, cols]
            d = (g[:, None, :] - o[None, :, :]).reshape(-1, len(cols))
            out.append(d)
    return np.concatenate(out) if out else np.zeros((0, len(cols)))


def fit(items: Sequence[Item], cols: list[int], l2: float, gate: float = 0.0) -> np.ndarray:
    """L2-regularised logistic regression on pairs (no intercept: a pair has no side), by Newton's method."""
    d = pairs(items, cols, gate)
    w = np.zeros(len(cols))
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-(d @ w)))
        grad = d.T @ (p - 1.0) / len(d) + l2 * w
        hess = (d * (p * (1 - p))[:, None]).T @ d / len(d) + l2 * np.eye(len(cols))
        w -= np.linalg.solve(hess, grad)
    return w


def order(it: Item, cols: list[int], w: np.ndarray | None, gate: float = 0.0) -> list[int]:
    """The candidates' order after re-ranking (None: the ranker's), the read rule applied again: those
    within `gate` of the top (staged_rel) are re-ranked among themselves, the others keep their places."""
    if w is None:
        return list(range(len(it.ids)))
    s = it.x[:, cols] @ w
    near = int((it.x[:, 0] >= gate).sum())     # staged order: the near ones lead
    idx = sorted(range(near), key=lambda j: (-s[j], j)) + list(range(near, len(s)))
    readers = [p for p, j in enumerate(idx) if it.reader[j]]
    if readers:
        cut = readers[0]
        above = [j for j in idx[:cut] if it.demote[j]]
        if above:
            kept = [j for j in idx[:cut + 1] if not it.demote[j]]
            idx = kept + above + idx[cut + 1:]
    return idx


def score(items: Sequence[Item], cols: list[int], w: np.ndarray | None, gate: float = 0.0) -> dict[str, float]:
    totals = MetricTotals()
    for it in items:
        totals.add(score_query([it.ids[j] for j in order(it, cols, w, gate)][:DEPTH], it.groups))
    return totals.means()


def cv(k: int, cache: Path | None = None) -> None:
    if cache is not None and cache.is_file():
        folds = pickle.loads(cache.read_bytes())
    else:
        folds = {p.name: items_of(p, "dev", k) for p in DEV_SETS}
        if cache is not None:
            cache.write_bytes(pickle.dumps(folds))
    designs = {"all": list(range(len(FEATURES))),
               "stages": [0, 1, 2, 3, 4, 5, 6, 7],
               "stages+name": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12],
               "final+new": [0, 1, 8, 9, 10, 11, 12, 13],
               "no-final": [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
               "final+lexnew": [0, 1, 8, 9, 10, 11],
               "final+cos": [0, 1, 12, 13]}
    best: tuple[float, int, int, str, float, float] | None = None
    print(f"gold in top {k}: {sum(it.gold.any() for f in folds.values() for it in f)} of "
          f"{sum(len(f) for f in folds.values())}")
    for (name, cols), gate in itertools.product(designs.items(), (0.0, 0.8, 0.9)):
        for l2 in (1e-3, 1e-2, 1e-1, 1.0):
            base = after = n = 0.0
            per = []
            moved = 0
            for held, test in folds.items():
                w = fit([it for f, its in folds.items() if f != held for it in its], cols, l2, gate)
                b, a = score(test, cols, None)["R@1"], score(test, cols, w, gate)["R@1"]
                base, after, n = base + b * len(test), after + a * len(test), n + len(test)
                moved += sum(order(it, cols, w, gate)[0] != 0 for it in test)
                per.append(f"{held.replace('tuning_requests', 't')}:{round(b * len(test))}->{round(a * len(test))}")
            key = (after / n, -moved, -len(cols), name, gate, l2)
            best = key if best is None or key > best else best
            print(f"{name:12s} gate={gate} l2={l2:<6g} R@1 {base / n:.4f} -> {after / n:.4f} top changed {moved}  hits {' '.join(per)}")
        sys.stdout.flush()
    assert best is not None
    print(f"chosen (best CV R@1, then fewest top changes, then fewest features): {best[3]} gate={best[4]} l2={best[5]}")


# The design chosen by `cv` (its last line), frozen before `guard` and `test` ran.
FROZEN_COLS: Final = [0, 1, 8, 9, 10, 11]     # final+lexnew
FROZEN_GATE: Final = 0.9
FROZEN_L2: Final = 0.01


def frozen(k: int, cache: Path | None) -> np.ndarray:
    """The frozen design's weights, fitted on every dev set."""
    if cache is not None and cache.is_file():
        folds = pickle.loads(cache.read_bytes())
    else:
        folds = {p.name: items_of(p, "dev", k) for p in DEV_SETS}
    w = fit([it for its in folds.values() for it in its], FROZEN_COLS, FROZEN_L2, FROZEN_GATE)
    print("weights:", ", ".join(f"{FEATURES[c]} {v:+.3f}" for c, v in zip(FROZEN_COLS, w, strict=True)))
    return w


def report(name: str, items: Sequence[Item], w: np.ndarray) -> None:
    b, a = score(items, FROZEN_COLS, None), score(items, FROZEN_COLS, w, FROZEN_GATE)
    moved = sum(order(it, FROZEN_COLS, w, FROZEN_GATE)[0] != 0 for it in items)
    print(f"{name:24s} n={len(items):5d}  R@1 {b['R@1']:.4f} -> {a['R@1']:.4f}   R@5 {b['R@5']:.4f} -> {a['R@5']:.4f}"
          f"   MRR@10 {b['MRR@10']:.4f} -> {a['MRR@10']:.4f}   top changed {moved}")
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("cv", "guard", "test"))
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--cache", type=Path, default=None, help="keep the dev sets' features here between runs")
    a = ap.parse_args()
    if a.what == "cv":
        cv(a.k, a.cache)
        return
    w = frozen(a.k, a.cache)
    if a.what == "guard":      # the shared sets' dev portions, sampled; never trained on
        for folder in ("metatool", "toollens"):
            report(f"{folder} dev (sample)", items_of(SHARED / folder, "dev", a.k, a.n), w)
        return
    for path in (FIX / "user_requests", FIX / "people_requests", SHARED / "livemcpbench", SHARED / "metatool",
                 SHARED / "toollens"):
        report(f"{path.name} test", items_of(path, "test", a.k), w)


if __name__ == "__main__":
    main()
