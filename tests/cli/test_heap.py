"""mcpctl.heap: a process starts without the collector, settles before its work, and leaves what
it built to the operating system at exit, still running every exit handler; every mcpctl entry
point asks for that."""

from __future__ import annotations

import atexit
import gc
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from ci_support import SLACK
from mcpctl import heap

# A cycle with a finalizer, reachable only from the module until the interpreter clears it: the
# interpreter's last collection finds it and runs __del__; a frozen heap is left as it is.
_SCRIPT = """
import atexit, os, sys
{setup}
class Node:
    def __del__(self):
        os.write(1, b"collected\\n")
a, b = Node(), Node()
a.other, b.other = b, a
atexit.register(lambda: os.write(1, b"handler ran\\n"))
sys.stdout.write("buffered output\\n")
"""


def _run(setup: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", _SCRIPT.format(setup=setup)], capture_output=True, text=True,
                       timeout=60 * SLACK, check=True)
    return r.stdout.splitlines()


def test_at_exit_leaves_the_heap_uncollected_and_still_runs_handlers_and_flushes() -> None:
    assert _run("") == ["buffered output", "handler ran", "collected", "collected"]   # the interpreter alone
    assert _run("from mcpctl import heap; heap.at_exit()") == ["buffered output", "handler ran"]


def test_at_exit_registers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[Callable[..., Any]] = []
    monkeypatch.setattr(heap, "_registered", False)
    monkeypatch.setattr(atexit, "register", got.append)
    heap.at_exit()
    heap.at_exit()
    assert got == [gc.freeze]


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """heap's calls, recorded instead of made (the collector of this test process stays as it is)."""
    calls: list[str] = []
    for name in ("at_exit", "start", "settle"):
        monkeypatch.setattr(heap, name, lambda name=name: calls.append(name))
    return calls


def test_start_turns_the_collector_off_until_settle_which_acts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(heap, "_registered", True)                 # no exit hook in this process
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    try:
        heap.settle()                                               # no start: the caller's heap is its own
        assert frozen == [] and gc.isenabled()
        heap.start()
        assert not gc.isenabled()
        heap.settle()
        heap.settle()
        assert gc.isenabled() and frozen == [False]                 # frozen once, before collecting again
    finally:
        gc.enable()


@pytest.mark.parametrize(("argv", "calls"), [(["--version"], ["start"]), (["get", "servers"], ["start", "settle"]),
                                             (["get", "--help"], ["start", "settle"])])
def test_a_command_line_starts_without_the_collector_and_runs_its_command_with_it(
        monkeypatch: pytest.MonkeyPatch, argv: list[str], calls: list[str]) -> None:
    from mcpctl import cli

    got = _record(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["mcpctl", *argv])
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code in (0, None)
    assert got == calls


def test_an_example_server_settles_before_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpctl.examples import _base, calc

    got = _record(monkeypatch)
    monkeypatch.setattr("mcpctl.examples._base.anyio.run", lambda *a, **k: got.append("serve"))
    _base.serve_stdio(calc.build())
    assert got == ["at_exit", "settle", "serve"]
