"""The ninth pass over what a request asks for (tuning_requests_8; docs/ranking.md): longer requests
with their context, a file's contents asked in one sentence of several, files known by a bare name,
facts and links told to the memory in everyday words. Split from test_intent.py (at its size cap)."""

from __future__ import annotations

import pytest

from mcpctl.catalogue.effect import CHANGES, DELETES, READS, RECORDS, RUNS
from mcpctl.catalogue.intent import request_action, understand


@pytest.mark.parametrize(("query", "effect", "words"), [
    ("in settings.py DEBUG is on, flip it to False", CHANGES, "flip"),
    ("Tom isn't allergic after all, take that fact off his entry", DELETES, "take"),
    ("remind me what you know of Tom", READS, "remind me what"),
    ("the essay is done now, call it essay-final.md instead", CHANGES, "call it"),
    ("start a note titled 'Ideas' with one line in it", RECORDS, "start a note"),
    ("begin a list called groceries", RECORDS, "begin a list"),
    ("I need a new file called TODO.txt with three lines", RECORDS, "a new"),
    ("note 23's title is wrong, it should read 'Book ideas 2'", CHANGES, "should be"),
    ("note 7 needs the urgent tag on it too", CHANGES, "should be"),
    ("anyone you know living in Berlin? I'm visiting soon", READS, "anyone"),
    ("start a server on port 8080", RUNS, "start"),                   # a thing run, not one kept
])
def test_ninth_pass_actions(query: str, effect: str, words: str) -> None:
    action = request_action(query)
    assert action is not None and (action.effect, action.words) == (effect, words)


@pytest.mark.parametrize("query", [
    "I need a new pair of running shoes",          # a thing bought, not one kept: no action
    "do a deep dive on the history of the printing press",          # an imperative, not a question
    "Can you help me?",                            # a polite request with no verb still has none
    "I need to tag my anime collection",           # (a verb: "tag" changes; not "needs the ... tag")
])
def test_ninth_pass_requests_without_those_actions(query: str) -> None:
    action = request_action(query)
    assert action is None or action.words not in ("a new", "should be", "?")


@pytest.mark.parametrize(("query", "words"), [
    ("ssh complains that id_rsa is too open, what mode is it set to", "permissions metadata information"),
    ("who owns /etc/shadow", "permissions metadata information"),
    ("how is the src folder organised? folders inside folders and all", "tree recursive"),
    ("screenshot.png is on my desktop but it belongs in ~/Pictures/screens", "move"),
    ("where did I save invoice.pdf? hunt through my documents", "search find"),
    ("is ~/secrets within the paths you can reach?", "allowed access"),
    ("what directories have I given you access to?", "allowed access"),
    ("my new coworker is called Priya Shah, please remember her", "memory knowledge entities"),
    ("record in the graph that Orion depends on the Atlas service", "relation relations"),
    ("Priya reports to Tom, remember how the two of them are linked", "relation relations"),
    ("anyone you know who lives in Berlin?", "search matching"),
    ("remind me what you know of Tom", "entities whole"),
    ("do a deep dive on the history of the printing press", "research"),
    ("the plumber's number: did I ever put it in a note?", "search matching"),
    ("note 7 needs the urgent tag", "update tags"),
    ("my times were 31, 29, 35, 30 and 33 minutes, what's the average", "statistics numbers list"),
    ("what changed between these two versions of the paragraph?", "diff compare"),
    ("Makefile: has anyone modified it since Monday?", "modified time metadata"),
    ("the file is called draft.md but call it final.md instead", "rename"),
    ("the README says 'instal' in the setup section, correct that typo", "edit lines"),   # the part after the file
    ("can I see the Makefile? I want to know what the test target does", "contents read"),   # the file's sentence
    ("config.yaml: is there a timeout setting in there? open it up", "contents read"),
])
def test_ninth_pass_words(query: str, words: str) -> None:
    assert words in understand(query).text


@pytest.mark.parametrize(("query", "absent"), [
    ("I need to find out who owns Uganda Airlines", "permissions"),          # not a file's owner
    ("How are movie franchises organized, and what are the filters?", "tree recursive"),   # no folder
    ("we adopted a cat named Miso, make Miso someone you know about", "search matching"),   # told, not asked
    ("I need to tag my anime collection with a rank of 1", "update tags"),
    ("I am a coach and you can reach me at ann@example.org", "allowed access"),
    ("replace the whole of config.ini with the version below", "edit lines"),      # the whole file, not a part
    ("overwrite data.csv so that only the header row is left", "edit lines"),
    # a task of several steps, the file in one of them: not its contents (LiveMCPBench)
    ("Get line 10 of /root/txt/log.txt, please note that this file is very large and slow", "contents read"),
])
def test_ninth_pass_words_stay_where_they_were_chosen(query: str, absent: str) -> None:
    assert absent not in understand(query).text


@pytest.mark.parametrize("query", [
    "can you open .github/workflows/ci.yml and tell me what the lint step runs",   # a dotted folder is no dotfile
    "look at the crontab in /etc and tell me when the backup job runs",            # a bare file name and its folder
    "read out the crontab file at /etc/crontab",                                  # one file named twice
    "copy notes.txt into ~/backup",                                               # a folder is not a file
])
def test_one_file_is_not_several(query: str) -> None:
    intent = understand(query)
    assert "multiple files" not in intent.text and "one-text-file" in intent.values


def test_a_text_added_at_the_end_of_a_file_changes_it() -> None:
    action = understand("append export PATH=$HOME/bin:$PATH at the very end of my .zshrc").action
    assert action is not None and action.effect == CHANGES
    kept = understand("I need a little push at the beginning of the day, set up a daily message").action
    assert kept is not None and kept.effect == RECORDS          # the beginning of a day is no part of a file
