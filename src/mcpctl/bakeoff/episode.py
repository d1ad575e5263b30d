"""One task played to its end: the model asks, the gateway answers, until every correct tool has
been called, the model answers in text, or the turn budget is spent.

What is measured (one `Episode`):
- the pick of a call is the tool it reaches: a listed name resolved to its canonical id, or the
  `name` a `call_tool` call names; `search_tools` is not a pick (it is counted in `searches`);
- `first_pick`: the first pick is a correct tool (in any of the task's groups);
- `wander`: picks of other tools before the first correct one (all of them when none was);
- `success`: every group had one of its tools picked within `max_turns` model turns;
- `prompt_tokens`: the sum over turns of the prompt as the endpoint reported it (`usage`), else
  as counted offline (the messages and the tool list, `catalogue.tokens`);
- `skipped`: tool calls past `--max-calls-per-turn` in one answer, not run (the model is told so
  in their results) and not picks: an answer asking for 500 calls costs 8 of them, not 500.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mcpctl.bakeoff.llm import EndpointError

if TYPE_CHECKING:
    from mcpctl.bakeoff.data import Task
    from mcpctl.bakeoff.llm import ChatClient, ToolCall
    from mcpctl.bakeoff.session import Session
    from mcpctl.bakeoff.workspace import Arm
    from mcpctl.catalogue.tokens import TokenCounter

SEARCH: Final = "search_tools"
CALL_TOOL: Final = "call_tool"


@dataclass
class Episode:
    task: str
    presentation: str
    trial: int
    first_pick: bool = False
    wander: int = 0
    searches: int = 0
    success: bool = False
    turns: int = 0
    stop: str = "turns"                       # success | answered | turns | error
    calls: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0                          # calls of an answer past max_calls, not run
    prompt_tokens: int = 0
    prompt_tokens_source: str = "endpoint"    # endpoint | offline
    tool_def_tokens: int = 0
    wall_s: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Context:
    """What every episode of one arm shares."""

    arm: Arm
    session: Session
    llm: ChatClient
    system: str
    tools: list[dict[str, Any]]              # as sent to the model (function tools)
    tool_def_tokens: int
    tools_prompt_tokens: int                 # the tool list as part of a prompt, counted offline
    counter: TokenCounter
    max_turns: int
    temperature: float
    max_calls: int = 8                       # tool calls of one answer that are run
    waiting: Callable[[str, float], None] | None = None    # (task id, seconds) of a slow request


def pick_of(arm: Arm, call: ToolCall) -> tuple[str, str | None]:
    """(kind, canonical id): kind is `search`, or `call` with the tool it reaches (None: unknown)."""
    if call.name == SEARCH:
        return "search", None
    if call.name == CALL_TOOL:
        target = call.arguments.get("name")
        return "call", arm.resolve(target) if isinstance(target, str) else None
    from mcpctl.presentation.builtins import BUILTIN_NAMES

    if call.name in BUILTIN_NAMES:           # read_result, begin_session: mcpctl's own, never correct
        return "call", f"mcpctl/{call.name}"
    return "call", arm.resolve(call.name)


class Scorer:
    def __init__(self, task: Task, ep: Episode) -> None:
        self.task, self.ep = task, ep
        self.picked = 0
        self.found_correct = False
        self.satisfied: set[int] = set()

    def see(self, name: str, kind: str, tool: str | None) -> None:
        ok = kind == "call" and self.task.correct(tool)
        self.ep.calls.append({"name": name, "tool": tool, "correct": ok})
        if kind == "search":
            self.ep.searches += 1
            return
        if self.picked == 0:
            self.ep.first_pick = ok
        self.picked += 1
        if ok:
            self.found_correct = True
            self.satisfied |= {i for i, g in enumerate(self.task.groups) if tool in g}
        elif not self.found_correct:
            self.ep.wander += 1

    @property
    def done(self) -> bool:
        return len(self.satisfied) == len(self.task.groups)


async def play(ctx: Context, task: Task, trial: int, seed: int | None) -> Episode:
    ep = Episode(task.id, ctx.arm.presentation, trial, tool_def_tokens=ctx.tool_def_tokens)
    scorer = Scorer(task, ep)
    messages: list[dict[str, Any]] = []
    if ctx.system:
        messages.append({"role": "system", "content": ctx.system})
    messages.append({"role": "user", "content": task.prompt})
    t0 = time.monotonic()
    try:
        await _turns(ctx, ep, scorer, messages, seed)
    except EndpointError as e:           # a failed request: recorded, the run goes on (unless fatal)
        if e.fatal:
            raise
        ep.stop, ep.error = "error", str(e)
    ep.success = scorer.done
    ep.wall_s = round(time.monotonic() - t0, 3)
    return ep


async def _turns(ctx: Context, ep: Episode, scorer: Scorer, messages: list[dict[str, Any]],
                 seed: int | None) -> None:
    waiting = None
    if ctx.waiting is not None:
        notice = ctx.waiting
        waiting = functools.partial(notice, ep.task)
    for _ in range(ctx.max_turns):
        reply = await ctx.llm.complete(messages, ctx.tools, temperature=ctx.temperature, seed=seed, waiting=waiting)
        ep.turns += 1
        if reply.prompt_tokens is None:
            ep.prompt_tokens_source = "offline"
            ep.prompt_tokens += ctx.tools_prompt_tokens + ctx.counter.count(json.dumps(messages, ensure_ascii=False))
        else:
            ep.prompt_tokens += reply.prompt_tokens
        messages.append(reply.message)
        if not reply.calls:
            ep.stop = "answered"
            return
        for n, call in enumerate(reply.calls):
            if n >= ctx.max_calls:           # every call still needs its result message
                ep.skipped += 1
                messages.append({"role": "tool", "tool_call_id": call.id, "content": (
                    f"Not run: at most {ctx.max_calls} tool calls of one answer are run; ask again for this one "
                    "if it is still needed.")})
                continue
            kind, tool = pick_of(ctx.arm, call)
            scorer.see(call.name, kind, tool)
            outcome = await ctx.session.call(call.name, call.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.text})
        if scorer.done:
            ep.stop = "success"
            return
