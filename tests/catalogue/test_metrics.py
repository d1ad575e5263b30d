from __future__ import annotations

import math

import pytest

from mcpctl.evaluation.metrics import METRIC_NAMES, mean_scores, score_query


def g(*ids: str) -> frozenset[str]:
    return frozenset(ids)


def test_single_gold_found_at_rank_three() -> None:
    s = score_query(["x", "y", "a", "z"], [g("a")])
    assert s == {"R@1": 0.0, "R@5": 1.0, "R@10": 1.0, "MRR@10": pytest.approx(1 / 3),
                 "nDCG@10": pytest.approx(1 / math.log2(4)), "C@10": 1.0}


def test_two_groups_one_found_at_rank_one_other_at_rank_seven() -> None:
    ranking = ["a", "x1", "x2", "x3", "x4", "x5", "b", "x6"]
    s = score_query(ranking, [g("a"), g("b")])
    assert s["R@1"] == 0.5
    assert s["R@5"] == 0.5
    assert s["R@10"] == 1.0
    assert s["MRR@10"] == 1.0
    assert s["C@10"] == 1.0
    # DCG = 1/log2(2) + 1/log2(8) = 1 + 1/3; IDCG = 1 + 1/log2(3)
    assert s["nDCG@10"] == pytest.approx((1 + 1 / 3) / (1 + 1 / math.log2(3)))


def test_a_group_is_satisfied_by_any_member_and_counts_once() -> None:
    # "s1/search" and "s2/search" are alternatives; finding both does not count twice.
    s = score_query(["s2/search", "s1/search", "fetch"], [g("s1/search", "s2/search"), g("fetch")])
    assert s["R@1"] == 0.5
    assert s["R@5"] == 1.0
    assert s["MRR@10"] == 1.0
    # gains at ranks 1 and 3 (rank 2 finds an already-found group)
    assert s["nDCG@10"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def test_nothing_found_in_the_top_ten() -> None:
    ranking = [f"x{i}" for i in range(10)] + ["a"]   # rank 11 is past the cut-off
    s = score_query(ranking, [g("a"), g("b")])
    assert s == dict.fromkeys(METRIC_NAMES, 0.0)


def test_completeness_needs_every_group() -> None:
    assert score_query(["a", "b"], [g("a"), g("b"), g("c")])["C@10"] == 0.0
    assert score_query(["a", "b"], [g("a"), g("b"), g("c")])["R@5"] == pytest.approx(2 / 3)


def test_more_than_ten_groups_caps_the_ideal_dcg_at_ten() -> None:
    groups = [g(f"t{i}") for i in range(12)]
    s = score_query([f"t{i}" for i in range(10)], groups)
    assert s["nDCG@10"] == pytest.approx(1.0)
    assert s["R@10"] == pytest.approx(10 / 12)
    assert s["C@10"] == 0.0


def test_a_query_without_gold_is_an_error() -> None:
    with pytest.raises(ValueError):
        score_query(["a"], [])


def test_means_average_over_queries() -> None:
    means = mean_scores([(["a"], [g("a")]), (["x", "a"], [g("a")])])
    assert means["R@1"] == 0.5
    assert means["MRR@10"] == pytest.approx(0.75)
    assert mean_scores([]) == dict.fromkeys(METRIC_NAMES, 0.0)
