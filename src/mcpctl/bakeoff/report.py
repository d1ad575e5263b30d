"""The bake-off's report: the runs' metadata, then one row per run × model × presentation.

Drawn from result rows (a fresh run, or the JSON Lines of `--save` files), as a plain table,
Markdown or JSON. Every report states what was measured and how (`header`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from mcpctl.bakeoff.metrics import Interval, Summary, group
from mcpctl.errors import InvalidResource

FORMATS: Final = ("table", "markdown", "json")
COLUMNS: Final = ("run", "model", "presentation", "n", "errors", "first pick", "success", "wander/task",
                  "wander total", "searches/task", "tool-def tokens", "prompt tokens/task", "turns/task",
                  "wall s/task")
CI_NOTE: Final = ("95 % intervals: Wilson for first pick and success (over tasks × trials); Student t over "
                  "tasks (each the mean of its trials) for the per-task means. Tasks that ended in an error "
                  "(errors) are not scored.")


def load(files: Sequence[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise InvalidResource(f"{path}: cannot read it ({e.strerror or e})",
                                  hint="give the JSON Lines file a run saved with --save") from e
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise InvalidResource(f"{path}:{n}: not JSON ({e})", hint="a bake-off --save file") from e
            if not isinstance(row, dict) or not isinstance(row.get("run"), dict) or "presentation" not in row:
                raise InvalidResource(f"{path}:{n}: not a bake-off result row (no 'run' or 'presentation')",
                                      hint="a bake-off --save file")
            rows.append(row)
    if not rows:
        raise InvalidResource(f"{', '.join(map(str, files))}: no result rows", hint="a bake-off --save file")
    unique: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
    for r in rows:      # a file given twice (or appended to twice) counts once
        key = (str(r["run"].get("id")), str(r.get("model")), str(r["presentation"]), str(r.get("task")),
               str(r.get("trial")))
        unique.setdefault(key, r)
    return list(unique.values())


def runs(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        seen.setdefault(str(r["run"]["id"]), r["run"])
    return list(seen.values())


def header(meta: dict[str, Any]) -> str:
    source = f"catalogue {meta['catalogue']}" if meta.get("catalogue") else f"project {meta.get('project')}"
    favs = meta.get("favourites")
    models = meta["models"]
    return (f"run {meta['id']} ({meta.get('started', '?')}): model{'s' if len(models) > 1 else ''} "
            f"{', '.join(models)} at {meta['endpoint']}; "
            f"{source}; tasks {meta['tasks_file']} ({meta.get('tasks', '?')}); "
            f"presentations {', '.join(meta['presentations'])}; trials {meta['trials']}; seed {meta['seed']}; "
            f"temperature {meta['temperature']}; max turns {meta['max_turns']}; "
            + (f"max calls per turn {meta['max_calls_per_turn']}; request timeout {meta.get('request_timeout')} s; "
               if "max_calls_per_turn" in meta else "")
            + f"favourites {len(favs) if favs else 0}; ranker {meta.get('ranker') or 'project default'}; "
            f"mcpctl {meta['mcpctl']}; tokens {meta.get('tokens', '?')}")


def _num(v: float, digits: int) -> str:
    return "-" if math.isnan(v) else f"{v:.{digits}f}"


def _ci(iv: Interval, digits: int = 2) -> str:
    if math.isnan(iv.low):
        return _num(iv.value, digits)
    return f"{_num(iv.value, digits)} [{_num(iv.low, digits)}-{_num(iv.high, digits)}]"


def cells(s: Summary) -> list[str]:
    src = "" if s.prompt_tokens_source == "endpoint" else f" ({s.prompt_tokens_source})"
    return [s.run, s.model, s.presentation, str(s.episodes), str(s.errors), _ci(s.first_pick), _ci(s.success),
            _ci(s.wander, 1), str(s.wander_total), _num(s.searches, 1), f"{s.tool_def_tokens:.0f}",
            _ci(s.prompt_tokens, 0) + src, _ci(s.turns, 1), _ci(s.wall_s, 2)]


def render(rows: Sequence[dict[str, Any]], fmt: str) -> str:
    summaries = group(rows)
    metas = runs(rows)
    if fmt == "json":
        return json.dumps({"runs": metas, "summaries": [s.as_dict() for s in summaries], "intervals": CI_NOTE},
                          indent=2, ensure_ascii=False)
    body = [cells(s) for s in summaries]
    lines = [header(m) for m in metas]
    if fmt == "markdown":
        lines = [f"- {line}" for line in lines] + ["", "| " + " | ".join(COLUMNS) + " |",
                                                   "|" + "|".join("---" for _ in COLUMNS) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
        return "\n".join([*lines, "", CI_NOTE])
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(COLUMNS)]
    lines.append("")
    lines.append("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
    return "\n".join([*lines, "", CI_NOTE])
