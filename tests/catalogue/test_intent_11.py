"""The eleventh pass over what a request asks for (tuning_requests_10; docs/ranking.md): bare dotfiles
shown, texts appended or inserted into named files, dotted names renamed, the memory told and asked
in everyday words."""

from __future__ import annotations

import pytest

from mcpctl.catalogue.effect import CHANGES, READS, RECORDS
from mcpctl.catalogue.intent import SPECIFIC, request_action, understand


@pytest.mark.parametrize(("query", "effect", "words"), [
    ("slip `127.0.0.1 dev.local` into /etc/hosts", CHANGES, "slip … part of"),       # into a file under folders
    ("in requirements.txt, add requests==2.31.0 under numpy", CHANGES, "add … part of"),  # a version: no sum
    ("the CHANGELOG.md needs a line for 1.4.2 near the top", CHANGES, "should be"),
    ("note 5 should carry the 'waiting' tag", CHANGES, "should be"),
    ("Sofia's coming over tonight, refresh me on what you remember of her", READS, "refresh me on"),
    ("put 'hello world' into a new file called hello.txt", RECORDS, "put"),          # a new file: written
    ("add 2.5 and 7.25", READS, "add"),                                             # still a sum
])
def test_eleventh_pass_actions(query: str, effect: str, words: str) -> None:
    action = understand(query).action
    assert action is not None and (action.effect, action.words) == (effect, words)


@pytest.mark.parametrize("query", [
    "I need a line graph depicting the population growth of major cities",     # "I need", not "the file needs"
])
def test_a_wish_of_ones_own_is_no_change(query: str) -> None:
    assert request_action(query) is None


@pytest.mark.parametrize(("query", "words"), [
    ("append `export EDITOR=nvim` to ~/.bashrc", "edit lines"),
    ("add `*.pyc` to the .gitignore", "edit lines"),
    ("stick a new section called [tool.ruff] into pyproject.toml", "edit lines"),
    ("show me ~/.gitconfig", "contents read"),                                  # a dotfile at the end of a path
    ("update his entry: Marco now works at Stripe", "memory observations entities"),
    ("Raj is allergic to peanuts, remember that about him", "memory observations entities"),
    ("take Zoe out of your memory", "entities"),
    ("has budget-2026.xlsx been touched since Friday? check its modified date", "modified time metadata"),
    ("dump the env vars the test server runs with", "environment variables"),
    ("pop up a form asking me for my name and age", "elicitation request user input"),
    ("what have I got in my notes? just the titles", "list"),
    ("find every file with 'note' in its name under src", "search find files"),
    ("Jun and Mei are siblings, make a note of that connection", "relation relations"),
    ("keep in mind there's a project called Orion, led by me", "entities entity create"),
    ("Bram doesn't work with Elif anymore, remove that", "relation relations"),
    ("Priya is a new colleague of mine, a designer, please keep her in mind", "entities entity person create"),
    ("who do you know that works on billing?", "search matching"),
    ("do you remember anyone called Lee?", "search matching"),
    ("bring up Nadia's and Omar's records from your memory", "open nodes names"),
    ("extract the URLs from this paragraph", "regex match"),
    ("my sister's in Tokyo, is it too late to ring her? what's the time there", "current"),
    ("standup is 15:00 New York, what's that on the clock in Berlin", "convert"),
    # chosen on the misses of the earlier tuning sets, after the first round
    ("Sara and Ben are no longer married, drop that link", "relation relations"),
    ("link Kenji to the Aurora project as a contributor", "relation relations"),
    ("ask me a question through a form", "elicitation request user input"),
    ("which notes do I have", "list"),
    ("who is Ben again?", "memory knowledge search matching"),
    ("have the client's model write something for you", "sampling llm"),
    ("where am I allowed to write files", "allowed access"),
    ("pull all the email addresses out of this text", "regex match"),
    ("Priya is my sister, remember that", "memory knowledge entities"),
])
def test_eleventh_pass_words(query: str, words: str) -> None:
    assert understand(query).text.endswith(words)


@pytest.mark.parametrize(("query", "absent"), [
    ("Jun and Mei are siblings, make a note of that connection", "note create"),     # the memory's link, not a note
    ("save this poem into x.txt", "edit lines"),                                      # written whole
    ("put 'hello world' into a new file called hello.txt", "edit lines"),
    ("Nina switched jobs to Globex, record that", "entities"),       # news of one known: not a new entity
])
def test_eleventh_pass_words_stay_where_they_were_chosen(query: str, absent: str) -> None:
    assert absent not in understand(query).text


def test_dotted_names_are_files_not_domains() -> None:
    renamed = understand("rename settings.local.json to settings.dev.json")
    assert "url" not in renamed.values and renamed.text.startswith("rename file json to file json")
    old = understand("mv app.config.js.old app.config.js")     # a js file kept aside under another extension
    assert old.text.startswith("mv file js file js")
    assert "url" in understand("open settings.dev and tell me what it says").values


def test_a_place_asked_about_access_names_nothing_for_the_tool() -> None:
    intent = understand("is ~/secrets within the paths you can reach, or is it off limits for you?")
    assert "allowed access" in intent.text and SPECIFIC not in intent.values and "path" in intent.values
