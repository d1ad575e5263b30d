"""mcpctl.heap: a process leaves what it built to the operating system at exit, and still runs
every exit handler; every mcpctl entry point asks for that."""

from __future__ import annotations

import atexit
import gc
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

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
                       timeout=60, check=True)
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


@pytest.mark.parametrize("argv", [["--version"], ["get", "servers"]])
def test_every_cli_command_asks_for_it(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    from mcpctl import cli

    got: list[Callable[..., Any]] = []
    monkeypatch.setattr(heap, "_registered", False)
    monkeypatch.setattr(atexit, "register", got.append)
    monkeypatch.setattr(sys, "argv", ["mcpctl", *argv])
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code in (0, None)
    assert got[:1] == [gc.freeze]


def test_the_example_servers_ask_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpctl.examples import _base, calc

    got: list[Callable[..., Any]] = []
    monkeypatch.setattr(heap, "_registered", False)
    monkeypatch.setattr(atexit, "register", got.append)
    monkeypatch.setattr("mcpctl.examples._base.anyio.run", lambda *a, **k: None)     # do not serve stdin here
    _base.serve_stdio(calc.build())
    assert got == [gc.freeze]
