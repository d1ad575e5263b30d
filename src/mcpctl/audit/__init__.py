"""Evidence: the invocation log (one SQLite row per routed call) and the queries over it."""

from __future__ import annotations

from mcpctl.audit.log import OUTCOMES, CallRecord, InvocationLog, ToolStats
from mcpctl.audit.writer import BackgroundWriter

__all__ = ["OUTCOMES", "BackgroundWriter", "CallRecord", "InvocationLog", "ToolStats"]
