"""What a catalogue learns from its own use (`catalogue.learn`) and how the log gives it the pairs
(`search_evidence`): per tool, from enough distinct sessions, in the window, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpctl.audit.log import InvocationLog
from mcpctl.audit.records import SEARCH_TOOL_ID, CallRecord, SearchEvidence
from mcpctl.catalogue import learn as L
from mcpctl.catalogue.rank import ToolDoc, build_ranker
from mcpctl.evaluation.datasets import Query
from mcpctl.evaluation.learning import arrival, simulated, time_split

NOW = 1_800_000_000.0
DAY = 86400.0


def ev(query: str, tool: str, session: str, age_days: float = 0.0, ok: bool = True) -> SearchEvidence:
    return SearchEvidence(query, tool, session, NOW - age_days * DAY, ok)


def test_a_tool_learns_once_enough_distinct_sessions_called_it_after_a_search() -> None:
    one = [ev("stash my list", "n/create", "s1"), ev("stash my list", "n/create", "s1")]
    assert not L.learn(one, min_sessions=2, now=NOW)
    two = [*one, ev("Stash   my LIST", "n/create", "s2")]
    got = L.learn(two, min_sessions=2, now=NOW)
    assert got.queries == {"n/create": ("stash my list",)} and got.uses == {"n/create": 2}


def test_failed_calls_old_pairs_and_unknown_tools_teach_nothing() -> None:
    pairs = [ev("q", "n/create", "s1", ok=False), ev("q", "n/create", "s2", ok=False),
             ev("q", "n/read", "s3", age_days=40), ev("q", "n/read", "s4", age_days=40),
             ev("q", "gone/tool", "s5"), ev("q", "gone/tool", "s6")]
    assert not L.learn(pairs, min_sessions=2, window_days=30, now=NOW, known={"n/create", "n/read"})
    assert L.learn(pairs, min_sessions=2, window_days=60, now=NOW).uses == {"n/read": 2, "gone/tool": 2}


def test_what_is_learned_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [ev(f"query number {i} " + "x" * 500, "t/a", f"s{i}") for i in range(50)]
    got = L.learn(pairs, min_sessions=1, now=NOW)
    assert len(got.queries["t/a"]) == L.MAX_QUERIES_PER_TOOL
    assert all(len(q) <= L.MAX_QUERY_CHARS for q in got.queries["t/a"])
    monkeypatch.setattr(L, "MAX_QUERIES", 7)
    many = [ev(f"q{i}", f"t/{i % 3}", f"s{i}") for i in range(30)]
    got = L.learn(many, min_sessions=1, now=NOW)
    assert sum(map(len, got.queries.values())) == 7
    assert sorted(map(len, got.queries.values())) == [2, 2, 3]          # rank by rank, fairly


def test_the_most_asked_queries_are_kept_first() -> None:
    pairs = [ev("rare", "t/a", "s0")] + [ev("common", "t/a", f"s{i}") for i in range(1, 4)]
    assert L.learn(pairs, min_sessions=1, now=NOW).queries["t/a"] == ("common", "rare")


def test_learned_queries_and_uses_reach_the_docs_and_rank_the_tool() -> None:
    docs = [ToolDoc("n/create", "n", "create_note", "Create a note"),
            ToolDoc("n/list", "n", "list_notes", "List the notes you have")]
    assert build_ranker(docs, "bm25").search("squirrel away my list", 1)[0][0] == "n/list"
    got = L.learn([ev("squirrel away my list", "n/create", s) for s in ("s1", "s2")], now=NOW)
    ranker = build_ranker(got.apply(docs), "bm25")
    assert ranker.search("squirrel away my list", 1)[0][0] == "n/create"
    [first] = ranker.explain("squirrel away my list", 1)            # type: ignore[attr-defined]
    assert first.id == "n/create" and first.learned > 0


def test_the_log_gives_each_search_with_the_call_its_session_made_next(tmp_path: Path) -> None:
    log = InvocationLog(tmp_path / "log.db")

    def row(ts: float, cid: str, session: str | None, outcome: str = "ok", query: str | None = None) -> CallRecord:
        return CallRecord(NOW + ts, 1.0, "p", cid.replace("/", "__"), cid, outcome, session_id=session, query=query)

    log.record_many([
        row(0, SEARCH_TOOL_ID, "s1", query="stash my list"), row(1, SEARCH_TOOL_ID, "s1", query="again"),
        row(2, "n/create", "s1"), row(3, "n/read", "s1"),
        row(4, SEARCH_TOOL_ID, "s2", query="fail"), row(5, "n/create", "s2", "tool_error"),
        row(6, SEARCH_TOOL_ID, None, query="no session"), row(7, "n/create", None),
        row(8, SEARCH_TOOL_ID, "s3", query="nothing after"),
    ])
    got = log.search_evidence("p")
    assert [(e.query, e.tool, e.session, e.ok) for e in got] == [
        ("stash my list", "n/create", "s1", True), ("again", "n/create", "s1", True), ("fail", "n/create", "s2", False)]
    assert [e.query for e in log.search_evidence("p", since=NOW + 1)] == ["again", "fail"]
    assert [e.query for e in log.search_evidence("p", limit=1)] == ["fail"]          # the newest
    log.close()


def test_a_dataset_simulates_traffic_next_or_gold() -> None:
    queries = [Query("1", "a then b", (frozenset({"t/a"}), frozenset({"t/b"}))), Query("2", "a again", (frozenset({"t/a"}),))]
    first, second = arrival(queries)
    assert simulated(queries, 10, "next").queries == {"t/a": (second.text, first.text)}     # newest first
    assert simulated(queries, 10, "next").uses == {"t/a": 2}
    gold = simulated(queries, 1, "gold")
    assert gold.queries["t/b"] == ("a then b",)             # the only query that leads there
    assert gold.queries["t/a"] == (first.text,)             # the first of the two to arrive


def test_what_a_simulation_learns_does_not_depend_on_how_the_file_is_sorted() -> None:
    # MetaTool lists each tool's queries alphabetically: taking "the first K" in the file's order
    # learned K questions that all began alike ("Can I ...")
    texts = [f"{verb} the weather in {city}" for verb in ("Can I get", "Can I see", "Show me", "What is")
             for city in ("Oslo", "Lima", "Pune")]
    queries = [Query(str(n), t, (frozenset({"w/forecast"}),)) for n, t in enumerate(sorted(texts))]
    learned = simulated(queries, 4, "next")
    assert learned == simulated(list(reversed(queries)), 4, "next")
    assert len(learned.queries["w/forecast"]) == 4
    assert [q.text for q in arrival(queries)] == [q.text for q in arrival(reversed(queries))]
    assert learned.queries["w/forecast"] != tuple(t.lower() for t in sorted(texts)[:4][::-1])


def test_the_time_split_learns_from_the_older_and_scores_the_newer() -> None:
    pairs = [ev(f"q{i}", "t/a", f"s{i}", age_days=10 - i) for i in range(9)] + [ev("bad", "t/a", "s9", ok=False)]
    older, newer, at = time_split(pairs)
    assert [e.query for e in older] == [f"q{i}" for i in range(6)] and [e.query for e in newer] == ["q6", "q7", "q8"]
    assert at == newer[0].ts
