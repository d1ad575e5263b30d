"""The bake-off's pieces without a gateway: intervals, the without-instruction presentation."""

from __future__ import annotations

import math

from mcpctl.bakeoff.metrics import t_mean, t_quantile, wilson
from mcpctl.bakeoff.workspace import project_spec
from mcpctl.presentation import names as nm
from mcpctl.presentation.modes import FavouriteIndexPresentation, presentation_for
from mcpctl.resources.kinds import ProjectSpec


def test_wilson_and_t() -> None:
    w = wilson(2, 5)
    assert w.value == 0.4 and math.isclose(w.low, 0.1176, abs_tol=1e-3) and math.isclose(w.high, 0.7693, abs_tol=1e-3)
    assert wilson(0, 10).low == 0.0 and math.isclose(wilson(10, 10).high, 1.0)
    assert abs(t_quantile(4) - 2.776) < 0.03 and abs(t_quantile(30) - 2.042) < 0.005
    m = t_mean([1.0, 2.0, 3.0, 4.0, 5.0])
    assert m.value == 3.0 and math.isclose(m.high - 3.0, 2.776 * math.sqrt(2.5) / math.sqrt(5), rel_tol=0.01)
    assert t_mean([0.0, 0.0, 9.0]).low == 0.0          # clipped: counts are never negative


def test_without_instruction_drops_only_the_instruction() -> None:
    spec = project_spec({"servers": ["a"], "favouriteIndex": {"tools": ["a/x"], "enabled": True}},
                        "favourite-index-without-instruction", None, None)
    assert spec["presentation"] == "favourite-index" and spec["favouriteIndex"]["instruction"] is False
    project = ProjectSpec.from_resource({"metadata": {"name": "p"}, "spec": spec})
    assert project.favourite_index.instruction is False and project.presentation == "favourite-index"
    namer = nm.Namer("portable", 48, set(), reserved=frozenset(), servers=frozenset({"a"}))
    told = presentation_for("favourite-index").instructions(namer, ["favourite__x"], True)
    untold = presentation_for("favourite-index", instruction=False)
    assert isinstance(untold, FavouriteIndexPresentation)          # the same listing
    text = untold.instructions(namer, ["favourite__x"], True)
    assert "PREFER" in told and "favourite__x" in told
    assert "PREFER" not in text and "favourite__x" not in text and "search_tools" in text
    flat = project_spec({"servers": ["a"], "favouriteIndex": {"tools": ["a/x"], "enabled": True}}, "flat", None, None)
    assert flat["presentation"] == "flat" and "enabled" not in flat["favouriteIndex"]
