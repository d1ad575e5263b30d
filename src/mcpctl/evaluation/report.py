"""`mcpctl eval`'s results on a terminal: one row per dataset and ranker with its metrics, as a rich
table the CLI prints (`-o json` prints each `Result.as_dict()`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

    from mcpctl.evaluation.evaluate import Result


def results_table(results: Sequence[Result]) -> Table:
    """DATASET, RANKER, SPLIT, LEARNED (when any run learned), QUERIES, TOOLS and each metric."""
    from rich.table import Table

    from mcpctl.evaluation.metrics import METRIC_NAMES

    table = Table(box=None, pad_edge=False)
    learning = any(r.learned for r in results)
    cols = ("DATASET", "RANKER", "SPLIT", *(("LEARNED",) if learning else ()), "QUERIES", "TOOLS", *METRIC_NAMES)
    for col in cols:
        table.add_column(col, justify="left" if col in ("DATASET", "RANKER", "SPLIT", "LEARNED") else "right",
                         no_wrap=True)
    for r in results:
        table.add_row(r.dataset, r.ranker, r.portion, *((r.learned or "nothing",) if learning else ()), str(r.queries),
                      str(r.tools), *(f"{r.metrics[m]:.3f}" for m in METRIC_NAMES))
    return table
