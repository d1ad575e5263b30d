"""Where the CLI opens its `Storage`: the one function that decides the backend for a command
(`mcpctl.storage.Storage.open`). Imports nothing heavy: `main()` calls it before typer loads.

The root (`mcpctl.cli`: its callback, or `main()` for a plain `serve`) opens it once per command
line and hands it down to the command as the command's storage (`current()`, which
`_common.storage()` reads); it is forgotten, and its log closed, when the command line is done.
"""

from __future__ import annotations

from mcpctl.storage import Storage

# The command line's (a process runs one; a test's CliRunner runs one after another). Not a
# ContextVar: a command's worker threads must see it too.
_current: Storage | None = None


def open_storage(url: str | None = None) -> Storage:
    """The command line's storage: `url` (the `--database-url` flag), else the environment's or
    the setting's database, else files and SQLite. Opens nothing until a command uses it."""
    global _current
    storage = _current = Storage.open(url)
    return storage


def current() -> Storage:
    """The storage the root opened for this command line (shell completion, which runs no
    callback, gets one of its own the same way)."""
    return _current if _current is not None else Storage.open()


def close() -> None:
    """The command line is done: close what its storage opened, and forget it."""
    global _current
    storage, _current = _current, None
    if storage is not None:
        storage.close()


def index_child(url: str, servers: list[str]) -> None:
    """The background indexing process (`cli._listing.index_in_background`), a process root of its
    own: its storage on the database its parent command used (`url`, "" for files)."""
    from mcpctl.presentation.search import index_listed

    try:
        opened = open_storage(url or None)
        index_listed(servers, opened.store, opened.cache)
    finally:
        close()


__all__ = ["Storage", "close", "current", "index_child", "open_storage"]
