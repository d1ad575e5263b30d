"""The twelfth pass over what a request asks for (tuning_requests_11, written blind; docs/ranking.md):
everyday verbs ("nuke", "gimme", "bounce … back"), a new note asked for without a verb, and the words
people use for observations, relations, the clock, counts, statistics and elicitation."""

from __future__ import annotations

import pytest

from mcpctl.catalogue.effect import DELETES, READS, RECORDS
from mcpctl.catalogue.intent import understand


@pytest.mark.parametrize(("query", "effect", "words"), [
    ("nuke note 4, it's done", DELETES, "nuke"),
    ("gimme the list of my notes", READS, "gimme"),
    ("bounce this text back to me", READS, "bounce"),
    ("new note, title 'ideas', body: a bike rack", RECORDS, "new"),
    ("fresh file for the minutes please", RECORDS, "new"),
])
def test_twelfth_pass_actions(query: str, effect: str, words: str) -> None:
    action = understand(query).action
    assert action is not None and (action.effect, action.words) == (effect, words)


@pytest.mark.parametrize("query", [
    "I want to filter anime by the genre",           # "filter" was tried as a verb and dropped (shared sets)
    "New York is lovely in May",                     # "new" before a thing kept only
])
def test_twelfth_pass_leaves_these_without_an_action(query: str) -> None:
    assert understand(query).action is None


@pytest.mark.parametrize(("query", "words"), [
    ("Omar's new address is 4 Elm Street, update what you know about him", "observations"),
    ("Lena's email is lena@example.org", "observations"),
    ("wipe everything you know about the Falcon project", "entities whole"),
    ("save Ana and Bo as new contacts", "entities entity person create"),
    ("note that Kim leads the platform team", "relation relations"),
    ("open the entities named Oslo and Bergen", "open nodes names"),
    ("add to the Lisbon entity: rainy in March", "observations"),
    ("my dad is in Perth, would he be awake?", "current time"),
    ("the exact time in Lagos please", "current time"),
    ("show my notes labelled travel", "list tag"),
    ("have we written anything down about the lease?", "search matching notes"),
    ("note 9 has the wrong heading", "title"),
    ("median of 4 8 15 16 23", "statistics numbers list"),
    ("std dev of the response times", "statistics numbers list"),
    ("what would the permalink be for 'Hello There'", "slug slugify url"),
    ("jot this down: the wifi code is 1234", "create"),
    ("how many sentences are in this text", "count words characters"),
    ("bounce it back so I see it arrives", "echo"),
    ("which lines in this output begin with WARN", "regex match"),
    ("run the thing that takes a while and reports progress", "long running"),
    ("ask me something through the client", "elicitation request user input"),
    ("what is set in the server's environment", "environment variables"),
    ("I'd like to see what app.toml says", "contents read"),
])
def test_twelfth_pass_words(query: str, words: str) -> None:
    assert words in understand(query).text


@pytest.mark.parametrize(("query", "absent"), [
    ("I'm heading to Paris next week", "title"),                                 # "heading" a verb
    ("save this as a note tagged ideas", "list"),                                 # one note made, not the list
    ("tell me what my horoscope says for today", "contents read"),                # no file named
    ("the temperature of the environment my plants grow in", "environment"),      # not a server's
    ("it takes forever to load the page", "long running"),
    ("As a person with diabetes I watch my sugar", "entities"),                   # "as a person" with no verb that records
    ("did I jot anything about the car?", "create"),                              # a search, not a note made
])
def test_twelfth_pass_words_stay_where_they_were_chosen(query: str, absent: str) -> None:
    assert absent not in understand(query).text.replace(query, "")
