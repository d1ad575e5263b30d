"""`audit.formats`: the log's JSON shapes and `logs -f`'s batches, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpctl.audit import formats
from mcpctl.audit.log import CallRecord, InvocationLog

NOW = 1_800_000_000.0


def test_follow_yields_the_newest_then_each_new_batch_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with InvocationLog(tmp_path / "log.db") as log:
        log.record_many([CallRecord(NOW + i, 1.0, "p", f"t{i}", f"s/t{i}", "ok") for i in range(3)])
        late = iter([CallRecord(NOW + 9, 1.0, "p", "late", "s/late", "ok")])

        def sleep(_: float) -> None:            # a gateway records one call while `follow` waits
            for rec in late:
                log.record(rec)
                break

        monkeypatch.setattr(formats.time, "sleep", sleep)
        batches = [[r.presented_name for r in b] for b in formats.follow(log, {"project": "p"}, 2, 0.01, max_polls=3)]
    assert batches == [["t1", "t2"], ["late"]]


def test_a_row_in_json_and_the_times_and_sizes_people_read() -> None:
    rec = CallRecord(NOW, 1.23456, "p", "s__t", "s/t", "ok", session_id="x")
    data = formats.record_json(rec)
    assert data["time"] == "2027-01-15T08:00:00.000Z" and data["durationMs"] == 1.235
    assert formats.human_size(3 * 1024 * 1024) == "3.0 MiB" and formats.pct(0.001) == "<1%"
    assert formats.parse_time("2d", now=NOW) == NOW - 2 * 86400
    line = formats.record_line(CallRecord(NOW, 1.23456, "p", "s__t", None, "tool_error", error_class="isError",
                                          session_id="0123456789abcdef", client_name="claude-code",
                                          client_version="2.1"))
    assert line == (f"{formats.local_time(NOW)}  p  s__t  tool_error (isError)  1.2ms  claude-code 2.1  "
                    "0123456789ab")
