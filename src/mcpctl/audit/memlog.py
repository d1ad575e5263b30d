"""The invocation log in memory, for in-process tests: SQLite's `:memory:` database behind the
SQLite log's own queries (`audit.log.InvocationLog`), so a test's log answers exactly as a file's
would, and leaves nothing on disk."""

from __future__ import annotations

from pathlib import Path

from mcpctl.audit.log import MEMORY, InvocationLog


def MemoryLog() -> InvocationLog:
    """A new, empty log in this process's memory."""
    return InvocationLog(Path(MEMORY))
