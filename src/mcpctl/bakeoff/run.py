"""A whole bake-off: every presentation (its own gateway) × model × trial × task, one JSON line each.

Each line carries the run's metadata (`run`: model, endpoint, catalogue, task set,
presentations, trials, seed, temperature, mcpctl version, token counter) beside the episode, so
a results file describes itself and `mcpctl bakeoff report` can redraw and compare files.
Trial k sends `seed + k` (so trials differ where the endpoint honours seeds).
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpctl.bakeoff.data import Task

if TYPE_CHECKING:
    from typing import TextIO

    from mcpctl.bakeoff.llm import ChatClient
    from mcpctl.bakeoff.session import Session
    from mcpctl.bakeoff.workspace import Arm, Workspace
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.tokens import TokenCounter
    from mcpctl.resources.store import ResourceStore


@dataclass
class RunConfig:
    endpoint: str
    models: list[str]
    tasks_file: str
    presentations: list[str]
    trials: int = 1
    max_turns: int = 8
    seed: int = 0
    temperature: float = 0.0
    catalogue: str | None = None             # --catalogue DIR
    project: str | None = None               # --project P
    favourites: list[str] | None = None
    ranker: str | None = None
    api_key_env: str | None = None
    max_calls_per_turn: int = 8
    request_timeout: float = 600.0

    def meta(self, counter_label: str, n_tasks: int) -> dict[str, Any]:
        from mcpctl import __version__

        out = {k: v for k, v in asdict(self).items() if k != "api_key_env"}
        return {"id": uuid.uuid4().hex[:12], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "mcpctl": __version__, "tokens": counter_label, "tasks": n_tasks, **out}


@dataclass
class ArmInfo:
    presentation: str
    listed: int
    tool_def_tokens: int
    instructions: str


@dataclass
class RunResult:
    meta: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    arms: list[ArmInfo] = field(default_factory=list)


Progress = Callable[[str, int, int], None]
Notice = Callable[[str], None]


async def run(cfg: RunConfig, tasks: Sequence[Task], *, store: ResourceStore | None = None,
              cache: CatalogueCache | None = None, api_key: str | None = None,
              save: Path | None = None, progress: Progress | None = None,
              notice: Notice | None = None) -> RunResult:
    from mcpctl.bakeoff import workspace as wsm
    from mcpctl.bakeoff.data import check_tasks, load_catalogue
    from mcpctl.bakeoff.llm import ChatClient
    from mcpctl.catalogue.tokens import token_counter

    counter = token_counter()
    cat = None
    if cfg.catalogue:                       # bad input is refused before anything starts
        cat = load_catalogue(Path(cfg.catalogue))
        check_tasks(list(tasks), cat.ids, f"--catalogue {cfg.catalogue}")
        if cfg.favourites is None:
            cfg.favourites = cat.favourites or None
    result = RunResult(cfg.meta(counter.label, len(tasks)))
    llms = [ChatClient(cfg.endpoint, model, api_key, timeout=cfg.request_timeout) for model in cfg.models]
    ws: Workspace | None = None
    out = None
    try:
        await llms[0].check()
        if cat is not None:
            ws = wsm.for_catalogue(cat, cfg.presentations, cfg.favourites, cfg.ranker)
        else:
            assert cfg.project is not None and store is not None and cache is not None, \
                "a project's bake-off reads the user's store and catalogue cache"
            ws = wsm.for_project(cfg.project, store, cache, cfg.presentations, cfg.favourites, cfg.ranker)
        out = save.open("a", encoding="utf-8") if save else None
        play = functools.partial(_run_arm, cfg, ws, tasks=tasks, llms=llms, counter=counter, result=result,
                                 out=out, progress=progress, notice=notice)
        if cat is not None:
            await _together(ws, play, result)
        else:
            await _one_by_one(ws, play, result)
    finally:
        if out:
            out.close()
        for llm in llms:
            await llm.aclose()
        if ws is not None:
            ws.close()
    return result


PlayArm = Callable[["Arm", "Session"], Awaitable["ArmInfo"]]


async def measure(cfg: RunConfig, tasks: Sequence[Task], output: str, *, store: ResourceStore | None = None,
                  cache: CatalogueCache | None = None, api_key: str | None = None, save: Path | None = None, progress: Progress | None = None,
                  notice: Notice | None = None) -> tuple[str, list[dict[str, Any]], int]:
    """`run`, then its rows rendered in `output` (table, markdown or json); with the rows that ended
    in an error (not scored; `notice` hears of them) and how many rows there were."""
    from mcpctl.bakeoff.report import render

    result = await run(cfg, tasks, store=store, cache=cache, api_key=api_key, save=save, progress=progress, notice=notice)
    failed = [r for r in result.rows if r.get("stop") == "error"]
    if failed and notice is not None:
        notice(f"warning: {len(failed)} of {len(result.rows)} task(s) ended in an error (the errors column; "
               f"not scored): {failed[0].get('error')}")
    return render(result.rows, output), failed, len(result.rows)


async def _one_by_one(ws: Workspace, play: PlayArm, result: RunResult) -> None:
    """`--project`: one gateway at a time, since copies of real servers side by side may clash
    (a fixed port, a lock, a rate limit)."""
    from mcpctl.bakeoff.session import open_session

    for arm in ws.arms:
        async with open_session(ws, arm) as session:
            result.arms.append(await play(arm, session))


async def _together(ws: Workspace, play: PlayArm, result: RunResult) -> None:
    """`--catalogue`: every presentation's gateway (and its stubs) starts at once, and once all
    are listed the presentations play one after another, so no start-up competes with a task
    for the CPU (wall s/task stays comparable). Each session lives in its own task, as its
    transport's task group requires; they all close at the end."""
    import anyio

    from mcpctl.bakeoff.session import open_session

    sessions: dict[int, Session] = {}
    all_up, finished = anyio.Event(), anyio.Event()

    async def hold(i: int, arm: Arm) -> None:
        async with open_session(ws, arm) as session:
            sessions[i] = session
            if len(sessions) == len(ws.arms):
                all_up.set()
            await finished.wait()

    try:
        async with anyio.create_task_group() as tg:
            for i, arm in enumerate(ws.arms):
                tg.start_soon(hold, i, arm)
            try:
                await all_up.wait()
                for i, arm in enumerate(ws.arms):
                    result.arms.append(await play(arm, sessions[i]))
            finally:
                finished.set()
    except BaseExceptionGroup as group:
        raise _first(group) from None


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception to report from the sessions' task group: an interrupt, else the first error."""
    import anyio

    leaves: list[BaseException] = []
    todo: list[BaseException] = [group]
    while todo and len(leaves) < 100:
        e = todo.pop(0)
        if isinstance(e, BaseExceptionGroup):
            todo[:0] = list(e.exceptions)
        elif not isinstance(e, anyio.get_cancelled_exc_class()):
            leaves.append(e)
    for e in leaves:
        if isinstance(e, KeyboardInterrupt):
            return e
    return leaves[0] if leaves else group


async def _run_arm(cfg: RunConfig, ws: Workspace, arm: Arm, session: Session, *, tasks: Sequence[Task],
                   llms: Sequence[ChatClient], counter: TokenCounter, result: RunResult, out: TextIO | None,
                   progress: Progress | None, notice: Notice | None = None) -> ArmInfo:
    """Every model × trial × task on one presentation's gateway (started once for all of them)."""
    from mcpctl.bakeoff.episode import Context, play
    from mcpctl.bakeoff.llm import function_tools
    from mcpctl.catalogue.tokens import definition_text

    listed = await session.tools()
    ws.name_table(arm)
    fn_tools = function_tools(listed)
    instructions = session.instructions
    def_tokens = sum(counter.count(definition_text(t)) for t in listed)
    tools_tokens = counter.count(json.dumps(fn_tools, ensure_ascii=False))
    total, done = len(llms) * cfg.trials * len(tasks), 0
    for llm in llms:
        ctx = Context(arm, session, llm, instructions, fn_tools, def_tokens, tools_tokens, counter,
                      cfg.max_turns, cfg.temperature, cfg.max_calls_per_turn, _waiting(cfg, arm, llm, notice))
        for trial in range(cfg.trials):
            for task in tasks:
                ep = await play(ctx, task, trial, cfg.seed + trial)
                row = {"run": result.meta, "model": llm.model, **ep.as_dict()}
                result.rows.append(row)
                if out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
                done += 1
                if progress:
                    progress(arm.presentation, done, total)
    return ArmInfo(arm.presentation, len(listed), def_tokens, instructions)


def _waiting(cfg: RunConfig, arm: Arm, llm: ChatClient, notice: Notice | None) -> Callable[[str, float], None] | None:
    """What a request still waiting for the model says, every `llm.HEARTBEAT_S` (a hung endpoint
    is never silent)."""
    if notice is None:
        return None
    say = notice

    def waiting(task: str, seconds: float) -> None:
        say(f"{arm.presentation}, model {llm.model}, task {task}: waiting for the model for {seconds:.0f} s "
            f"(it gives up at {cfg.request_timeout:g} s: --request-timeout)")

    return waiting
