"""A large catalogue's embedding off the command's path: `create server` (and any listing) returns
once the tools are listed and stored, a background process embeds them, and a search meanwhile
ranks by keyword and says so (issue 37)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ci_support import SLACK, skip_unless_ci
from mcpctl.catalogue.cache import FilesCache
from mcpctl.cli import _listing, app
from mcpctl.resources.store import Store

PROJECT = """\
apiVersion: mcpctl/v1
kind: Server
metadata: {name: cal}
spec: {command: /bin/true}
---
apiVersion: mcpctl/v1
kind: Project
metadata: {name: p}
spec: {servers: [cal]}
"""
TOOLS = [{"name": f"{verb}_event_{i}", "description": f"{verb.title()} a calendar event number {i}",
          "inputSchema": {"type": "object"}} for i in range(3) for verb in ("create", "delete")]


@pytest.fixture
def project(runner: CliRunner, tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(PROJECT)
    r = runner.invoke(app, ["apply", "-f", str(f)])
    assert r.exit_code == 0, r.output
    FilesCache().write_server_entry("cal", {"tools": TOOLS})


def _model() -> None:
    from mcpctl.catalogue.rank import semantic_status

    if not semantic_status()[0]:
        skip_unless_ci("semantic search is not installed")

@contextlib.contextmanager
def _vectors_lock_held() -> Iterator[threading.Event]:
    """The vectors' lock held by another thread (as a gateway embedding holds it) until the block
    ends; yields the event that releases it (set only then)."""
    from mcpctl.catalogue import vectors

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with vectors._computing(vectors.VectorCache(vectors.model_key()).path):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert held.wait(timeout=60 * SLACK)
        yield release
    finally:
        release.set()
        holder.join()



def test_more_than_the_foreground_limit_is_embedded_in_the_background(
    project: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _model()
    from mcpctl.presentation.search import pending_listed

    started: list[Any] = []
    real = _listing.index_in_background
    monkeypatch.setattr(_listing, "index_in_background", lambda s, n: started.append(real(s, n)) or started[-1])
    monkeypatch.setattr(_listing, "FOREGROUND_TEXTS", 3)
    assert pending_listed(["cal"], Store(), FilesCache()) == len(TOOLS)
    _listing.index_for_search(["cal"])          # returns at once
    assert len(started) == 1
    assert started[0].wait(timeout=120 * SLACK) == 0
    assert pending_listed(["cal"], Store(), FilesCache()) == 0         # what the background computed is what search reads
    monkeypatch.setattr(_listing, "FOREGROUND_TEXTS", 100)
    _listing.index_for_search(["cal"])
    assert len(started) == 1                    # nothing left to embed


def test_a_search_before_the_vectors_are_there_is_keyword_only_and_says_so(
    project: None, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    _model()
    started: list[int] = []
    monkeypatch.setattr(_listing, "FOREGROUND_TEXTS", 3)
    monkeypatch.setattr(_listing, "index_in_background", lambda s, n: started.append(n))
    r = runner.invoke(app, ["tools", "search", "--project", "p", "create a calendar event"])
    assert r.exit_code == 0, r.output
    assert "keyword-only (BM25F)" in r.stderr and f"({len(TOOLS)} texts to embed)" in r.stderr
    assert started == [len(TOOLS)]
    assert "create_event" in r.stdout.splitlines()[1]


def test_a_listing_does_not_wait_for_another_process_embedding(
    project: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few new texts are embedded in the foreground, unless a process (a gateway embedding a
    large catalogue) holds the vectors' lock: the listing would wait for all of its work. Here the
    lock is held until the test lets it go; the listing must return before that, having left its
    texts to a background process."""
    _model()
    import threading


    started: list[int] = []
    monkeypatch.setattr(_listing, "index_in_background", lambda s, n: started.append(n))
    with _vectors_lock_held() as release:
        done = threading.Event()
        lister = threading.Thread(target=lambda: (_listing.index_for_search(["cal"]), done.set()), daemon=True)
        lister.start()
        lister.join(timeout=120 * SLACK)
        assert done.is_set() and not release.is_set()      # it returned while the lock was still held
        assert started == [len(TOOLS)]


def test_a_search_that_finds_no_keyword_does_not_wait_for_another_process_embedding(
    project: None, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a process holds the vectors' lock (a gateway embedding), `tools search` answers by
    keyword and says so, even when BM25F finds nothing: it used to wait for vectors that its
    closed ranker could not compute (DEAD_END_WAIT_S, made an hour here)."""
    _model()
    import threading

    from mcpctl.catalogue import semantic

    monkeypatch.setattr(semantic, "DEAD_END_WAIT_S", 3600.0)
    started: list[int] = []
    monkeypatch.setattr(_listing, "index_in_background", lambda s, n: started.append(n))
    with _vectors_lock_held() as release:
        result: list[Any] = []
        searcher = threading.Thread(target=lambda: result.append(runner.invoke(
            app, ["tools", "search", "--project", "p", "zzqx quux"])), daemon=True)
        searcher.start()
        searcher.join(timeout=120 * SLACK)
        assert result and not release.is_set()      # it answered while the lock was still held
        r = result[0]
        assert r.exit_code == 0, r.output
        assert "keyword-only (BM25F)" in r.stderr
        assert started == []                        # a process is at it already
