"""One row in the invocation log per call or refused request, never its arguments or result."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpctl.gateway.sessions import Caller

log = logging.getLogger("mcpctl.gateway")

Recorder = Callable[..., None]
# (canonical id, outcome, error class, seconds, credential, profile): `telemetry.Telemetry.observe`
Observer = Callable[[str | None, str, str | None, float, str | None, str | None], None]


class CallLog:
    """Writes a project's rows through `record` (None: nothing is logged), each shown to `observe`
    first (metrics and traces; None: off)."""

    def __init__(self, record: Recorder | None, project_name: str) -> None:
        self.record = record
        self.project_name = project_name
        self.observe: Observer | None = None

    def begin(self, caller: Caller) -> Call:
        """A call of `caller`'s beginning now, logged through this log once it ends."""
        return Call(self, caller, time.time(), time.perf_counter())

    def __call__(self, caller: Caller, ts: float, t0: float, presented: str, canonical: str | None, outcome: str,
                 error_class: str | None = None, query: str | None = None,
                 result: tuple[int, int | None] | None = None) -> None:
        """`ts`: when it began (epoch s), `t0`: its `perf_counter` then; `result`: (characters,
        sections it was cut into, if any)."""
        if (observe := self.observe) is not None:
            observe(canonical, outcome, error_class, time.perf_counter() - t0, caller.credential or None, caller.profile)
        record = self.record
        if record is None:
            return
        try:
            record(ts=ts, duration_ms=(time.perf_counter() - t0) * 1000.0, project=self.project_name,
                   presented_name=presented, canonical_id=canonical, outcome=outcome,
                   error_class=error_class, client_name=caller.client_name,
                   client_version=caller.client_version, session_id=caller.session_id,
                   profile=caller.profile, query=query,
                   result_chars=None if result is None else result[0],
                   result_sections=(result[1] or None) if result is not None else None,
                   credential=caller.credential or None)   # "": the project's own token
        except Exception:
            log.exception("recording a call failed")


@dataclass(slots=True)
class Call:
    """One routed call or refused request: who, when (epoch s; `perf_counter`), the name it was
    asked by and its canonical id once resolved (`named`); `log` writes its one row."""

    to: CallLog
    caller: Caller
    ts: float
    t0: float
    presented: str = ""
    canonical: str | None = None

    def named(self, presented: str, canonical: str | None) -> Call:
        self.presented, self.canonical = presented, canonical
        return self

    def log(self, outcome: str, error_class: str | None = None, *, query: str | None = None,
            result: tuple[int, int | None] | None = None) -> None:
        self.to(self.caller, self.ts, self.t0, self.presented, self.canonical, outcome, error_class, query, result)

