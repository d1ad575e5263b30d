"""Where the CLI opens its `Storage`: the one function that decides the backend for a command
(`mcpctl.storage.Storage.open`). Imports nothing heavy: `main()` calls it before typer loads.

The root (`mcpctl.cli`: its callback, or `main()` for a plain `serve`) opens it once per command
line and hands it down to the command as the command's storage (`current()`, which
`_common.storage()` reads); it is forgotten, and its log closed, when the command line is done.
"""

from __future__ import annotations

from contextvars import ContextVar

from mcpctl.storage import Storage

_current: ContextVar[Storage | None] = ContextVar("mcpctl_cli_storage", default=None)


def open_storage(url: str | None = None) -> Storage:
    """The command line's storage: `url` (the `--database-url` flag), else the environment's or
    the setting's database, else files and SQLite. Opens nothing until a command uses it."""
    storage = Storage.open(url)
    _current.set(storage)
    return storage


def current() -> Storage:
    """The storage the root opened for this command line (shell completion, which runs no
    callback, gets one of its own the same way)."""
    storage = _current.get()
    return storage if storage is not None else Storage.open()


def close() -> None:
    """The command line is done: close what its storage opened, and forget it."""
    storage = _current.get()
    _current.set(None)
    if storage is not None:
        storage.close()


__all__ = ["Storage", "close", "current", "open_storage"]
