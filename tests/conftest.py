"""Fixtures shared by every test: an isolated MCPCTL_HOME and a CLI runner."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ci_support import INPROC, SLACK

# One BLAS thread, as mcpctl itself sets when it imports numpy first (catalogue/semantic.py): here a
# test module may import numpy before it, and on 2 cores shared by three workers OpenBLAS's
# spinning threads made the vendored datasets' embedding 38x slower (14 s idle, 532 s).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files that hold a `slow` test start first. Under `--dist loadfile` each file goes whole to
    one worker, in this order (pyproject's `--no-loadscope-reorder`: pytest-xdist's default hands
    out the files holding the most tests first, which put the one-test 3 x 5,000-call file at the
    very end, alone for 80-100 s while the other workers idled; the suite is CPU-bound on 2 cores,
    so overlap is what counts)."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)      # stable: each file keeps its order


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """pytest-timeout's limit for a test (its `timeout` mark, else pyproject's) scales with the load
    measured as the test starts, as every other bound of the suite does (`ci_support.Slack`): a limit
    that holds on an idle machine would fail a test that is only slower beside another suite."""
    marker = item.get_closest_marker("timeout")
    base = (marker.args[0] if marker.args else marker.kwargs.get("timeout")) if marker is not None else \
        item.config.getini("timeout")
    if base not in (None, "", 0, "0"):
        item.add_marker(pytest.mark.timeout(float(base) * SLACK.load()), append=False)
    yield


@pytest.fixture(autouse=True)
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own MCPCTL_HOME; nothing touches the real profile."""
    home = tmp_path / "mcpctl-home"
    monkeypatch.setenv("MCPCTL_HOME", str(home))
    monkeypatch.delenv("MCPCTL_DATABASE_URL", raising=False)     # files unless a test asks (tests/pg_support.py)
    # Subprocesses (gateways, examples) must find this venv's executables.
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    yield home


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def repo() -> Path:
    return REPO



# How many tests drove an in-process Gateway (issue 18 counts them). Under pytest-xdist each worker
# collects its own set and hands it to the controller, which prints the total.
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["inproc"] = sorted(INPROC)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    INPROC.update(getattr(node, "workeroutput", {}).get("inproc", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if INPROC:
        terminalreporter.write_line(f"{len(INPROC)} tests drove an in-process Gateway (the `gw` fixture)")
