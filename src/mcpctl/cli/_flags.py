"""Poisoning flags (`catalogue.poison`) where the risk is: the moments a definition becomes trusted.

`doctor` and `surface` report every flag; these say them where a user would otherwise pass a
poisoned description without a word: `create server` (its first listing becomes the pinned,
trusted one), `tools list` (a mark, and one line per flagged tool), `tools changes` (the flags
of the listed definition beside its diff) and `tools approve` (which names the flags and asks
for `--yes`). Flagged, never blocked: the detector decides nothing, the user does. The words
(`MARK`, `describe`, `lines`, `headline`) are `catalogue.poison.flags`'s; this module says them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._common import err, safe

if TYPE_CHECKING:
    from mcpctl.catalogue.poison import Flag



def say(found: Mapping[str, list[Flag]], headline: str, hint: str) -> None:
    """A warning on stderr: the headline, one line per flag, and what to do."""
    if not found:
        return
    from mcpctl.catalogue.poison.flags import lines

    err.print(f"[yellow]warning:[/yellow] {safe(headline)}", markup=True, highlight=False)
    for line in lines(found):
        err.print(safe(line, markup=False), markup=False, highlight=False)
    err.print(f"  → {safe(hint, markup=False)}", markup=False, highlight=False)
