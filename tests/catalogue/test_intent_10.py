"""The tenth pass over what a request asks for (tuning_requests_9; docs/ranking.md): requests in
mixed registers, tool-like nouns in another sense, edits inside named dotfiles, the memory asked
in a conversation."""

from __future__ import annotations

import pytest

from mcpctl.catalogue.effect import RECORDS, RUNS
from mcpctl.catalogue.intent import request_action, understand


@pytest.mark.parametrize(("query", "effect", "words"), [
    ("could you start a packing list note for the trip: passport, charger, sunscreen", RECORDS, "start a list"),
    ("begin a reading journal for me", RECORDS, "begin a journal"),
    ("start a note titled 'Ideas'", RECORDS, "start a note"),
    ("start a long running operation", RUNS, "start"),                # nothing kept is begun
])
def test_tenth_pass_actions(query: str, effect: str, words: str) -> None:
    action = request_action(query)
    assert action is not None and (action.effect, action.words) == (effect, words)


@pytest.mark.parametrize("query", [
    "here's the old clause and the new clause of the contract, line up the differences for me",
    "spot the differences between my old bio and the new one below",
])
def test_differences_lined_up_are_a_diff(query: str) -> None:
    assert "diff compare" in understand(query).text


@pytest.mark.parametrize("query", [
    "What are the differences between these two cars?",         # a question of knowledge, not two texts
    "I need to know the time difference between London and Tokyo",
])
def test_a_difference_asked_about_is_no_diff(query: str) -> None:
    assert "diff compare" not in understand(query).text
