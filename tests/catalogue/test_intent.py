"""What a request asks for against what a tool does: the action of a request, the effect of a tool,
the values a request carries, and the stage that weighs them in every ranker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpctl.catalogue.effect import CHANGES, DELETES, READS, RECORDS, RUNS, tool_effect
from mcpctl.catalogue.intent import (
    MATCHING_SHARE,
    OTHER_FORM_FACTOR,
    IntentStage,
    param_kinds,
    request_action,
    understand,
)
from mcpctl.catalogue.rank import LexicalRanker, ToolDoc, build_ranker
from mcpctl.evaluation.datasets import load_dataset

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize(("query", "effect", "words"), [
    ("show me what's in settings.json", READS, "show me"),
    ("peek inside docker-compose.yml", READS, "peek"),
    ("what's inside settings.json", READS, "what's"),
    ("when was notes.txt created", READS, "when"),
    ("did I tell you anything about my dog?", READS, "did"),
    ("can you look up the weather in Oslo", READS, "look up"),
    ("add 345 and 789", READS, "add"),                  # adding numbers computes
    ("remember a fact about a person", RECORDS, "remember"),
    ("note that Carol moved to Porto", RECORDS, "note that"),
    ("my sister's birthday is on 3 May, keep that in mind", RECORDS, "keep"),
    ("Nina switched jobs to Globex, record that", RECORDS, "record"),
    ("please jot down a reminder to call the dentist", RECORDS, "jot down"),
    ("update the port in config.yaml", CHANGES, "update"),
    ("could you rename draft.md to final.md", CHANGES, "rename"),
    ("turn off the fake logging", CHANGES, "turn off"),
    ("get rid of note number 3", DELETES, "get rid of"),
    ("forget everything you know about my old landlord", DELETES, "forget"),
    ("I want to erase the entity for ExCorp", DELETES, "erase"),
    ("kick off a long operation", RUNS, "kick off"),
    ("don't forget that Ana's birthday is in May", RECORDS, "don't forget"),    # though "don't" asks
    ("link Kenji to the Aurora project as a contributor", RECORDS, "link"),
    ("swap 'foo' for 'bar' in utils.py", CHANGES, "swap"),
    # the fourth pass (tuning_requests_3)
    ("in app.py change the port from 8000 to 9000", CHANGES, "change"),      # a leading file set aside
    ("let me look at the nginx config", READS, "look at"),
    ("Mia doesn't live in Madrid anymore, take that fact out", DELETES, "take"),     # a verb and its particle apart
    ("start a new note called Books to read", RECORDS, "start a new"),     # what is begun is made
    # the fifth pass (tuning_requests_4): shell words
    ("ls ~/projects", READS, "ls"),
    ("mkdir backups", RECORDS, "mkdir"),
    # the seventh pass (tuning_requests_6)
    ("my build fails, can you have a look at the Makefile", READS, "have a look"),
    ("go through the CONTRIBUTING file and tell me the rules", READS, "go through"),
    ("I want you to know that Paulo prefers tea to coffee", RECORDS, "know that"),
    ("note 10 is out of date, rewrite its body", CHANGES, "rewrite"),          # "note 10": a thing, not a verb
    ("before I change anything I'd like to see what nginx.conf looks like", READS, "see"),    # a subordinate clause set aside
    ("stick the tag urgent on note 15", RECORDS, "stick"),
    # the eighth pass (tuning_requests_7)
    ("paste the contents of config/app.toml here", READS, "paste … here"),      # put here: shown
    ("report-final.docx should be called report-v2.docx", CHANGES, "should be"),   # a new name as a wish
    ("there's a typo in README.md, 'recieve' should be 'receive'", CHANGES, "should be"),
    ("note 4 should be titled Groceries", CHANGES, "should be"),
    ("note 14 is done with, bin it", DELETES, "bin"),
    ("scratch the bit about Marco living in Lyon, it's outdated", DELETES, "scratch"),
    ("tie Nimbus to Lea: she is the one leading it", RECORDS, "tie"),
    ("Marco's birthday is on 3 May, don't lose that", RECORDS, "don't lose"),
    ("start tracking a project called Nimbus in the knowledge graph", RECORDS, "start tracking"),
    ("track down every file ending in .bak under /srv", READS, "track down"),
    ("file invoice.pdf away under finance/2024", CHANGES, "file"),               # a verb and its particle apart
    ("bump the version in setup.cfg to 2.1.0", CHANGES, "bump"),
])
def test_a_request_says_its_action(query: str, effect: str, words: str) -> None:
    action = request_action(query)
    assert action is not None and (action.effect, action.words) == (effect, words)


@pytest.mark.parametrize("query", ["md5 checksum of 'hello'", "the squares of 1 to 10", "the weather in Oslo",
                                   "Nina switched jobs to Globex", "the last 20 lines of error.log please",
                                   "For my word association exercise, I need 6 new words", ""])
def test_a_request_without_an_action_verb_has_none(query: str) -> None:
    assert request_action(query) is None


@pytest.mark.parametrize(("query", "text", "values"), [
    ("peek inside docker-compose.yml", "peek inside file yml contents read", {"path", "specific", "one-text-file"}),
    ("view the photo holiday.jpg", "view the photo image file jpg image", {"path", "specific"}),
    ("when was notes.txt created", "when was file txt created modified creation time metadata",
     {"path", "specific", "one-text-file"}),                                     # not about notes
    ("fetch the contents of /etc/hosts", "fetch the contents of etc file contents read",
     {"path", "specific", "one-text-file"}),
    ("sum the column in /root/excel/sales.xlsx", "sum the column in root excel file xlsx",
     {"path", "specific", "one-text-file"}),
    ("read main.py and utils.py", "read file py and file py multiple files", {"path", "specific"}),
    ("show me the contents of the src directory", "show me the contents of the src directory list directory listing",
     set()),                                                                   # a folder's contents: its listing
    ("tell me everything you know about Mia", "tell me everything you know about Mia memory knowledge entities whole",
     {"specific"}),                                                            # everything, about one thing
    ("remember that Jonas is my dentist", "remember that Jonas is my dentist memory knowledge entities",
     {"specific"}),                                                            # a fact about a person
    ("open https://docs.python.org/3/ and tell me what it says",
     "open https docs.python.org 3 web page url and tell me what it says web page url internet", {"url", "specific"}),
    ("mail bob@example.com the report", "mail email address the report", {"email", "specific"}),
    ("convert 3pm Pacific to Berlin time", "convert 3pm Pacific to Berlin time", {"time", "specific"}),
    ("e.g. Dr. Smith said v1.2.3 is out", "e.g. Dr. Smith said v1.2.3 is out", set()),   # not files
    ("show me the whole knowledge graph", "show me the whole knowledge graph", {"everything"}),
    ("what do you know about my dog", "what do you know about my dog memory knowledge", {"specific"}),
])
def test_values_are_ranked_as_their_kind(query: str, text: str, values: set[str]) -> None:
    intent = understand(query)
    assert (intent.text, set(intent.values)) == (text, values)


@pytest.mark.parametrize(("query", "text"), [
    # dotfiles and the files known without an extension are files, not words
    ("check what's in .env.example", "check what's in file contents read"),
    ("I need the text of LICENSE", "I need the text of file contents read"),
    ("build the Dockerfile", "build the file"),
    # several files named: a tool that reads several at once
    ("go through main.py, utils.py and tests.py for me",
     "go through file py , file py and file py for me multiple files"),
    # a folder written with its slash is a folder; a folder named beside one file is not "multiple"
    ("move a.txt into backup/", "move file txt into backup directory"),
    ("show me what's inside /var/www/", "show me what's inside var www directory list directory listing"),
])
def test_files_folders_and_several_files_are_said_as_such(query: str, text: str) -> None:
    intent = understand(query)
    assert intent.text == text and "path" in intent.values


@pytest.mark.parametrize(("query", "added"), [
    ("Omar reports to Julia, remember that relationship", "relation relations"),
    ("remove the link between Omar and Julia", "relation relations"),
    ("what time is it in Tokyo right now", "current"),
    ("is it already evening in Dubai?", "current time"),
    ("give me the whole structure of the project folder, nested", "tree recursive"),
    ("which files in this folder are the biggest", "sizes size"),
    ("find my notes that mention the dentist", "search matching"),
    ("what does README.md say", "contents read"),
    ("put report.pdf into the archive folder", "move"),
    ("how many kilometres is 26.2 miles", "convert units"),
    ("convert 180 pounds to kg", "convert units"),
    ("when did I last modify notes.md", "modified creation time metadata"),
    ("is there a file called Dockerfile somewhere in the repo", "search find"),
    ("fix the typo 'recieve' in docs/intro.md", "edit lines"),
    ("forget Max entirely", "entities whole"),
    ("drop the fact that Carl lives in Berlin", "observations"),
    ("look for any png files in the project", "search find"),
    ("how large is video.mp4", "size metadata information"),
    ("is backup.tar a file or a folder", "size metadata information"),
    ("what part of the disk are you permitted to read", "allowed access"),
    ("dump package.json for me", "contents read"),
    ("jot down: call the plumber tomorrow", "note create"),      # (the twelfth pass: a note made)
    ("what is 17 times 23", "multiply product"),
    ("what did I write in the note about the trip", "search matching"),
    ("don't forget that Ana's birthday is in May", "remember memory observations"),     # (the twelfth pass: her birthday)
    ("what time is it in Tokyo", "current"),
])
def test_words_people_use_add_the_words_tools_use(query: str, added: str) -> None:
    assert understand(query).text.endswith(added)


@pytest.mark.parametrize("query", ["the mile is long", "a note about my plans", "what's in the box",
                                   "put the kettle on"])
def test_a_single_unit_or_a_plain_request_adds_nothing(query: str) -> None:
    assert understand(query).text == query


@pytest.mark.parametrize(("query", "words"), [
    ("add 'buy batteries' to the body of note 12", "add … part of"),
    ("delete line 12 of app.py", "delete … part of"),
    ("tag note 9 as urgent", "tag"),
])
def test_adding_to_or_taking_from_a_part_changes_it(query: str, words: str) -> None:
    action = understand(query).action
    assert action is not None and (action.effect, action.words) == (CHANGES, words)


def test_parameters_say_which_values_a_tool_takes() -> None:
    assert param_kinds({"properties": {"path": {}, "content": {}}}) == {"path"}
    assert param_kinds({"type": "object", "properties": {}}) == {"no-parameters"}
    assert param_kinds({"properties": {"target": {"type": "string", "format": "uri"}}}) == {"url"}
    assert param_kinds({"properties": {"sourceFile": {}, "when": {"format": "date-time"}}}) == {"path", "time"}
    assert param_kinds({"properties": {"timezone": {}}}) == frozenset()
    assert param_kinds({}) == {"no-parameters"}


@pytest.mark.parametrize(("name", "description", "annotations", "effect", "source"), [
    ("read_file", "", {"readOnlyHint": True}, READS, "annotations"),
    ("delete_x", "", {"readOnlyHint": True}, READS, "annotations"),          # the server's hint wins
    ("delete_entities", "", {"readOnlyHint": False, "destructiveHint": True}, DELETES, "annotations"),
    ("create_entities", "", {"readOnlyHint": False, "destructiveHint": False}, RECORDS, "annotations"),
    ("gizmo", "", {"readOnlyHint": False, "destructiveHint": False}, RECORDS, "annotations"),
    ("gizmo", "", {"readOnlyHint": False}, CHANGES, "annotations"),          # destructive by default
    ("toggle-logging", "", {"readOnlyHint": False, "destructiveHint": False}, CHANGES, "annotations"),
    ("sendMessage", "", None, RUNS, "name"),
    ("get_posts", "Get the posts", None, READS, "name"),
    ("search_and_replace", "", None, CHANGES, "name"),
    ("notes", "Permanently delete a note by its id.", None, DELETES, "description"),
    ("gizmo", "Does a thing.", None, None, ""),
])
def test_a_tool_has_an_effect_from_its_annotations_else_its_words(
        name: str, description: str, annotations: Any, effect: str | None, source: str) -> None:
    found = tool_effect(name, description, annotations)
    assert (found.effect, found.source) == (effect, source), found.evidence


def doc(name: str, description: str, effect_ann: dict[str, bool], **schema: Any) -> ToolDoc:
    return ToolDoc(f"fs/{name}", "fs", name, description, {"properties": schema}, annotations=effect_ann)


READER = {"readOnlyHint": True}
WRITER = {"readOnlyHint": False, "destructiveHint": True}

FILES = [
    doc("edit_file", "Edit the contents of a file: show a diff of the change", WRITER, path={}),
    doc("write_file", "Write contents to a file", WRITER, path={}),
    doc("read_file", "Read the contents of a file", READER, path={}),
    doc("weather", "The weather of a city", READER, city={}),
]


def test_a_read_request_puts_the_reading_tool_above_those_that_change() -> None:
    query = "show me the contents of the file settings.json"
    plain = LexicalRanker(FILES, intent=False).search(query, 4)
    assert plain[0][0] == "fs/edit_file"        # more shared words: what ranked first before
    ranked = [t for t, _ in LexicalRanker(FILES).search(query, 4)]
    assert ranked[0] == "fs/read_file"
    assert ranked.index("fs/read_file") < ranked.index("fs/edit_file")


def test_the_stage_keeps_changers_below_the_best_matching_reader_in_their_order() -> None:
    stage = IntentStage([CHANGES, DELETES, READS, READS], [frozenset()] * 4)
    intent = understand("show me the thing")
    out = stage.apply({0: 10.0, 1: 9.0, 2: 6.0, 3: 1.0}, intent)     # factors alone leave 0 above 2
    assert out[2] > out[0] > out[1] and out[3] == 1.0
    # a reader far below the best is not a match: nothing is capped for it
    out = stage.apply({0: 10.0, 1: 9.0, 3: 1.0}, intent)
    assert out[0] == pytest.approx(10.0 * 0.35) and out[1] == pytest.approx(9.0 * 0.25)


def test_no_action_and_no_values_change_nothing() -> None:
    stage = IntentStage([CHANGES, READS], [frozenset(), frozenset()])
    scores = {0: 2.0, 1: 1.0}
    assert stage.apply(scores, understand("the weather in Oslo")) is scores


def test_adding_to_a_numbered_note_changes_it() -> None:
    intent = understand("append 'call Mum' to note 2")
    assert intent.action is not None and intent.action.effect == CHANGES


def test_one_file_is_read_by_the_tool_for_one_text_file() -> None:
    """A request naming one file that is not media weighs tools made for several files or for media
    by OTHER_FORM_FACTOR (named so: `read_multiple_files`, `read_media_file`); two files or an image do not."""
    schema = {"properties": {"path": {"type": "string"}}}
    names = ["read_text_file", "read_multiple_files", "read_media_file"]
    stage = IntentStage([READS] * 3, [param_kinds(schema, n) for n in names])
    one = stage.factors(understand("what does config/app.ini say"))
    assert one is not None and one[1] == one[2] == pytest.approx(OTHER_FORM_FACTOR * one[0])
    two = stage.factors(understand("read main.py and utils.py"))
    image = stage.factors(understand("display the picture logo.png"))
    assert two is not None and image is not None and two[0] == two[1] == two[2] and image[0] == image[2]


def test_ask_passages_are_ranked_without_the_stage() -> None:
    docs = [ToolDoc("n/1", "n", "Delete notes", "how to delete old notes"),
            ToolDoc("n/2", "n", "Reading", "reading notes")]
    ranker = build_ranker(docs, "bm25", intent=False)
    assert ranker.search("show me how to delete notes", 2)[0][0] == "n/1"


# -- the property, over the reference servers and every request of the people-phrased sets --------------------


def _read_requests() -> list[str]:
    queries = []
    for name in ("user_requests", "people_requests", "tuning_requests", "tuning_requests_2", "tuning_requests_3",
                 "tuning_requests_4", "tuning_requests_5", "tuning_requests_6", "tuning_requests_7", "tuning_requests_8",
                 "tuning_requests_9", "tuning_requests_10", "tuning_requests_11"):
        ds = load_dataset(FIXTURES / name)
        queries += [q.text for q in ds.queries if (a := request_action(q.text)) is not None and a.effect == READS]
    return queries


@pytest.mark.parametrize("kind", ["bm25", "auto"])
@pytest.mark.timeout(600)            # auto embeds 60 tools where the model is installed
def test_no_tool_that_changes_or_deletes_ranks_above_the_best_matching_reader(kind: str) -> None:
    """For every read-phrased request of the thirteen people-phrased sets (two to test, eleven to tune), over the real tool lists of the reference and
    example servers: in the ranking `search` returns, no tool that changes or deletes comes before
    the best *matching* reading tool (one scoring at least MATCHING_SHARE of the best before the
    action is weighed)."""
    ds = load_dataset(FIXTURES / "people_requests")
    ranker = build_ranker(ds.tools, kind)
    effects = {d.id: d.effect.effect for d in ds.tools}
    queries = _read_requests()
    assert len(queries) >= 60
    checked = 0
    for query in queries:
        base = _base_scores(ranker, query)
        top = max(base.values())
        if top <= 0:
            continue
        matching = {t for t, s in base.items() if effects[t] == READS and s >= MATCHING_SHARE * top}
        if not matching:
            continue
        ranked = [t for t, _ in ranker.search(query, len(ds.tools))]
        best_reader = min(ranked.index(t) for t in matching)
        above = [t for t in ranked[:best_reader] if effects[t] in (CHANGES, DELETES)]
        assert not above, f"{query!r}: {above} rank above {ranked[best_reader]}"
        checked += 1
    assert checked >= 50


def _base_scores(ranker: Any, query: str) -> dict[str, float]:
    """Every tool's score before the action is weighed (BM25F, or the fused score)."""
    intent = ranker.lexical.intent(query) if hasattr(ranker, "fused") else ranker.intent(query)
    if hasattr(ranker, "fused"):
        fused = ranker.fused(intent, ranker.vectors)[1]
        return {t: float(fused[i]) for i, t in enumerate(ranker.ids)}
    scores = ranker.index.scores(intent.text)
    return {t: scores.get(i, 0.0) for i, t in enumerate(ranker.index.ids)}


def test_every_gap_in_the_words_patterns_is_bounded() -> None:
    # an unbounded gap (".*" between two parts) made a 50,000-character query take 19 s
    from mcpctl.catalogue.synonyms import SYNONYMS

    assert [rx.pattern for rx, _ in SYNONYMS if ".*" in rx.pattern or ".+" in rx.pattern] == []


@pytest.mark.parametrize(("query", "effect"), [
    ("add 'bring passport' to my packing note", CHANGES),      # added to one that is kept
    ("add a note titled Ideas", RECORDS),
    ("add to what you know about Max that he is vegetarian", RECORDS),
])
def test_adding_to_a_note_or_list_that_is_kept_changes_it(query: str, effect: str) -> None:
    action = understand(query).action
    assert action is not None and action.effect == effect


# -- the fifth pass (tuning_requests_4) ---------------------------------------------------------------


@pytest.mark.parametrize(("query", "read_as_contents"), [
    ("can you check what's in docker-compose.yml", True),      # one text file read, nothing else said: its contents
    ("pull up notes.md so I can review it", True),
    ("I need to check the version number in pyproject.toml", True),
    ("how big is the database dump backup.sql", False),        # its metadata
    ("show the first lines of server.log", False),             # its lines (a part: read_text_file's head)
    ("pull the README from the raw github url", False),        # the web
    ("locate any file named .gitignore", False),               # a search
    ("ls ~/projects", False),                                  # a folder
    ("Read the customer information in /root/csv/customers-100.csv and tell me Sheryl's email", False),  # a task of steps
])
def test_one_text_file_read_is_its_contents(query: str, read_as_contents: bool) -> None:
    assert understand(query).text.endswith(" contents read") is read_as_contents


def test_a_fact_that_no_longer_holds_is_taken_out_of_memory() -> None:
    intent = understand("Priya no longer has a cat, update your memory")
    assert intent.action is not None and intent.action.effect == DELETES and "observations" in intent.text
    note = understand("the meeting is no longer on Friday, update note 3")       # not memory: a change
    assert note.action is not None and note.action.effect == CHANGES


@pytest.mark.parametrize(("query", "words"), [
    ("are there any png images in assets", "search find"),
    ("make a URL-friendly version of 'My First Blog Post!'", "slug slugify url"),
    ("have the server ask the model for a completion", "sampling llm"),
    ("swap 'localhost' for '0.0.0.0' in config.yaml", "edit lines"),
    ("log that Tom started at Initech last week", "memory knowledge entities"),
    # the sixth pass (tuning_requests_5)
    ("replace everything in notes.txt with an empty file", "overwrite write"),
    ("what's in the src folder", "list directory listing"),
    ("how old is the file invoice.pdf", "size metadata information"),
    ("remember: Omar's birthday is 12 June", "memory knowledge entities"),
    ("connect the entity Berlin Office to Acme Corp as a branch", "relation relations"),
    ("who in your memory is a plumber", "search matching"),
    ("also note on Dev's entry that he charges 60 an hour", "memory observations entities"),
    ("show me all my notes", "list"),
    ("how spread out are these numbers: 2, 4, 4, 4, 5, 5, 7, 9", "statistics variance deviation"),
    # the seventh pass (tuning_requests_6)
    ("please remember that my manager is called Ines", "memory knowledge entities"),
    ("show me every entity and relation you have", "read graph entire"),
    ("find people in memory who like tea", "search matching"),
    ("take a note that the server password rotates monthly", "note create"),
    ("what size is movie.mp4", "size metadata information"),
    ("tell me which roots on disk the file server lets me use", "allowed access"),
    ("relocate the logs folder into var/", "move"),
    ("create poem.md with a short haiku about autumn", "file write"),
    ("add a person named Yuki to your knowledge graph", "entities entity person create"),
])

def test_fifth_pass_words(query: str, words: str) -> None:
    assert words in understand(query).text       # (later passes' words may follow)


@pytest.mark.parametrize(("query", "absent"), [
    ("I need a gift idea for my best friend who is a foodie", "search matching"),     # a relative clause, not a question
    ("the historical volatility, beta and standard deviation for the Apple stock", "statistics"),  # a finance term
    ("make a note in your memory that Ravi manages the Berlin office", "note create"),     # the memory's, not a note
    ("put report.pdf into the archive folder", "file write"),                              # a move, not a file written
    ("I'm researching about relocation to Darmstadt", "move"),                             # no folder: not a move
    ("My sister is a chemistry teacher and she would like it", "memory knowledge entities"),  # no name: not an entity
])
def test_words_stay_where_they_were_chosen(query: str, absent: str) -> None:
    assert absent not in understand(query).text


# -- the eighth pass (tuning_requests_7) ----------------------------------------------------------------


@pytest.mark.parametrize(("query", "text"), [
    ("what's inside ~/Downloads", "what's inside directory list directory listing"),      # a path without an extension
    ("what is in /etc/nginx", "what is in etc directory list directory listing"),
    ("peek into ~/projects/website", "peek into projects directory"),
    ("fetch the contents of /etc/hosts", "fetch the contents of etc file contents read"),   # a file known by its name
    ("redirect users to /login", "redirect users to file"),                              # one part, not a root folder
    ("look for any .xlsx", "look for any files xlsx search find"),                        # an extension alone: files
])
def test_a_path_without_an_extension_is_a_folder(query: str, text: str) -> None:
    assert understand(query).text == text


def test_a_path_in_a_task_of_several_steps_stays_as_it_was() -> None:
    long = "Generate a PDF report titled x.pdf in /root/pdf, summarizing current reading trends and including a word cloud"
    assert "root file" in understand(long).text and "directory" not in understand(long).text


@pytest.mark.parametrize(("query", "words"), [
    ("map out everything under the project folder, subfolders included", "tree recursive"),
    ("how is this repo laid out, all the way down?", "tree recursive"),
    ("shift old.log over to the archive folder", "move"),
    ("file invoice.pdf away under finance/2024", "move"),
    ("track down every file ending in .bak under /srv", "search find"),
    ("is backup.iso bigger than 4 GB?", "size metadata information"),
    ("add my dentist, Dr. Okafor, to your memory as a new person", "entities entity person create"),
    ("start tracking a project called Nimbus in the knowledge graph", "entities entity create"),
    ("tie Nimbus to Lea: she is the one leading it", "relation relations"),
    ("put on Marco's record that he moved to Lyon", "observations"),
    ("scratch the bit about Marco living in Lyon, it's outdated", "observations"),
    ("did I ever make a note about car insurance?", "search matching"),
    ("my call is at 9am Pacific, when is that for me in Madrid?", "convert"),
    ("what hour is it in UTC", "current"),
    ("is it already past midnight in Auckland?", "current time"),
    ("is this caption under 280 characters: shipping day is here", "count characters words"),
    ("get the everything server to request a completion from my LLM", "sampling llm"),
    ("report-final.docx should be called report-v2.docx", "rename"),
    ("what have I got on my Desktop", "directory"),
    ("17 plus 25 is what", "add sum"),
    ("anything stored on Marco in your knowledge graph?", "search matching"),
    ("which parts of the filesystem are open to you", "allowed access"),
    ("Lea works at Acme, store that connection", "relation relations"),
    ("give me an overview of my notes", "list"),
    ("repeat after me: testing 1 2 3", "echo"),
    ("in worker.py, rename the function process to handle", "edit lines"),        # the file first, then its part
    ("bump the version in setup.cfg to 2.1.0", "edit lines"),
    ("Marco's birthday is on 3 May, don't lose that", "remember memory"),
])
def test_eighth_pass_words(query: str, words: str) -> None:
    assert words in understand(query).text


@pytest.mark.parametrize(("query", "absent"), [
    ("did I ever make a note about car insurance?", "note create"),                # asked about, not made
    ("I want to learn more about a company called MagicForm.", "entities"),         # no record verb: not an entity
    ("What is the difference between 'destroy' and 'sacrifice' in MTG?", "diff compare"),   # dropped: a question of meaning
    ("tell me the names of the subfolders in build/", "tree recursive"),            # subfolders alone: a listing
])
def test_eighth_pass_words_stay_where_they_were_chosen(query: str, absent: str) -> None:
    assert absent not in understand(query).text


def test_about_everybody_is_not_a_particular_thing() -> None:
    assert "everything" in understand("spill everything you have stored about everybody").values
    assert "specific" in understand("what do you know about Ines").values


def test_a_part_of_a_file_taken_out_changes_it() -> None:
    action = understand("strip the debug print statements out of worker.py").action
    assert action is not None and action.effect == CHANGES


def test_initials_are_not_a_file() -> None:
    intent = understand("how many hours are between Moscow and Washington, D.C.?")
    assert "path" not in intent.values and "D.C" in intent.text
