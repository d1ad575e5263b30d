"""Per presentation × model: the bake-off's numbers, with 95 % confidence intervals.

- Proportions (first pick, success): Wilson score interval over every episode (tasks × trials).
- Means (wander, prompt tokens, turns, wall time): Student t interval over tasks, each task
  the mean of its trials (trials of one task are not independent draws; tasks are), with the t
  quantile from the Cornish-Fisher expansion (within 0.01 of the table for 3+ degrees of freedom).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

Z95: Final = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


def wilson(k: int, n: int, z: float = Z95) -> Interval:
    if n == 0:
        return Interval(math.nan, math.nan, math.nan)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def t_quantile(df: int, z: float = Z95) -> float:
    """Two-sided 95 % Student t quantile (Cornish-Fisher; exact for df -> infinity)."""
    if df <= 0:
        return math.inf
    if df == 1:
        return 12.706
    if df == 2:
        return 4.303
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3


def t_mean(values: Sequence[float]) -> Interval:
    """Mean and 95 % t interval of non-negative values (the lower end clipped at 0)."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan)
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, math.nan, math.nan)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return Interval(mean, max(0.0, mean - half), mean + half)     # every mean here is of counts >= 0


def _per_task(rows: Sequence[dict[str, Any]], key: str) -> list[float]:
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_task[str(r["task"])].append(float(r[key]))
    return [sum(v) / len(v) for v in by_task.values()]


@dataclass
class Summary:
    run: str
    model: str
    presentation: str
    episodes: int
    tasks: int
    first_pick: Interval
    success: Interval
    wander: Interval
    wander_total: int
    searches: float
    tool_def_tokens: float
    prompt_tokens: Interval
    prompt_tokens_source: str
    turns: Interval
    wall_s: Interval
    errors: int

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = v.as_dict() if isinstance(v, Interval) else v
        return out


def summarise(rows: Sequence[dict[str, Any]]) -> Summary:
    """One group's numbers. An episode that ended in an error (the endpoint failed a request: an
    HTML page, a 500, malformed JSON, a timeout) measured nothing about the model: it is counted in
    `errors` and left out of every rate and mean, which are "-" when nothing else is left."""
    first = rows[0]
    scored = [r for r in rows if r.get("stop") != "error"]
    n = len(scored)
    sources = {r.get("prompt_tokens_source", "endpoint") for r in scored} or {"endpoint"}
    return Summary(
        run=str(first["run"]["id"]), model=str(first["model"]), presentation=str(first["presentation"]),
        episodes=len(rows), tasks=len({r["task"] for r in rows}),
        first_pick=wilson(sum(1 for r in scored if r["first_pick"]), n),
        success=wilson(sum(1 for r in scored if r["success"]), n),
        wander=t_mean(_per_task(scored, "wander")), wander_total=sum(int(r["wander"]) for r in scored),
        searches=sum(int(r["searches"]) for r in scored) / n if n else math.nan,
        tool_def_tokens=sum(int(r["tool_def_tokens"]) for r in rows) / len(rows),
        prompt_tokens=t_mean(_per_task(scored, "prompt_tokens")),
        prompt_tokens_source="/".join(sorted(sources)),
        turns=t_mean(_per_task(scored, "turns")), wall_s=t_mean(_per_task(scored, "wall_s")),
        errors=len(rows) - n)


def group(rows: Iterable[dict[str, Any]]) -> list[Summary]:
    """One summary per (run, model, presentation): runs, then models, then presentations, each in
    the order first seen (a model's presentations side by side)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    order: dict[str, dict[str, int]] = {"run": {}, "model": {}, "presentation": {}}
    for r in rows:
        key = (str(r["run"]["id"]), str(r["model"]), str(r["presentation"]))
        for part, value in zip(order, key, strict=True):
            order[part].setdefault(value, len(order[part]))
        groups.setdefault(key, []).append(r)
    ranked = sorted(groups, key=lambda k: tuple(order[p][v] for p, v in zip(order, k, strict=True)))
    return [summarise(groups[k]) for k in ranked]
