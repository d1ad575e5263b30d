"""Cutting a large result into sections (`presentation.sections`), in process (not a test).

    .venv/bin/python benchmarks/bench_sections.py [--rounds 15] [--size 2097152] [--max-tokens 8000]

Prints the median and p95 milliseconds of the content stage on a result of `--size` characters of
prose and of a pretty-printed JSON array (the fault server's `--large-tools` payloads), with the
project's estimator (cl100k with the `tokens` extra, else characters / 4) and, when tiktoken is
installed, with the chars/4 estimate too; and of the stage on a small result (the cheap check
every call pays). Each round cuts a fresh copy of the result and stores the rest.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "servers"))

import payloads

from mcpctl.catalogue.tokens import ESTIMATE, TokenCounter, token_counter
from mcpctl.presentation.sections import Sections, SectionStore


def _time(fn: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _cut_once(stage: Sections, text: str) -> int:
    return stage.apply(("s", None), {"content": [{"type": "text", "text": text}]}).sections


def _row(name: str, kind: str, sections: int | str, ms: list[float]) -> None:
    p95 = sorted(ms)[max(0, int(len(ms) * 0.95) - 1)]
    print(f"{name:<12} {kind:<10} {sections:>8} {statistics.median(ms):>10.3f} {p95:>8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--size", type=int, default=2 * 1024 * 1024)
    ap.add_argument("--max-tokens", type=int, default=8000)
    a = ap.parse_args()
    counters: list[TokenCounter] = [token_counter()]
    if counters[0] is not ESTIMATE:
        counters.append(ESTIMATE)
    cases = {"text": payloads.large_text(a.size), "json": payloads.large_json(a.size), "small": "ok " * 300}
    print(f"loadavg {os.getloadavg()[0]:.1f}; {len(cases['text']):,} characters of text, "
          f"{len(cases['json']):,} of JSON; maxTokens {a.max_tokens}")
    print(f"{'case':<12} {'estimator':<10} {'sections':>8} {'median ms':>10} {'p95 ms':>8}")
    for counter in counters:
        for name, text in cases.items():
            stage = Sections(a.max_tokens, SectionStore(), lambda c=counter: c.count)   # type: ignore[misc]
            n = _cut_once(stage, text)
            _row(name, counter.kind, n, _time(functools.partial(_cut_once, stage, text), a.rounds))
    # the floor for JSON: the json module parsing the same text once
    _row("json.loads", "-", "-", _time(functools.partial(json.loads, cases["json"]), a.rounds))


if __name__ == "__main__":
    main()
