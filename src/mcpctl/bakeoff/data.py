"""Tasks and catalogues: the bake-off's inputs, read with errors that name the file and line.

- A task set is JSON Lines: `{"id", "query" (or "prompt"), "relevant_groups": [[tool ids]]}`
  (or a flat `"relevant": [ids]`, one group each): the shared evaluation format. A task is a
  success when every group has had one of its tools called; a call is correct when its tool is
  in any group. Tool ids are canonical `server/tool`.
- A catalogue is a directory holding `tools.jsonl` (`{"server", "name", "description",
  "inputSchema"}` a line), optionally `servers.jsonl` (`{"server", "instructions"}`) and
  `favourites.txt` (one canonical id a line: the favourites it is measured with by default).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcpctl.errors import InvalidResource

SHIPPED: Final = Path(__file__).resolve().parent / "data"
SERVER_NAME: Final = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    groups: tuple[frozenset[str], ...]

    def correct(self, canonical_id: str | None) -> bool:
        return canonical_id is not None and any(canonical_id in g for g in self.groups)


@dataclass
class Catalogue:
    path: Path
    tools: list[dict[str, Any]]
    instructions: dict[str, str] = field(default_factory=dict)
    favourites: list[str] = field(default_factory=list)

    @property
    def servers(self) -> list[str]:
        return list(dict.fromkeys(t["server"] for t in self.tools))

    @property
    def ids(self) -> set[str]:
        return {f"{t['server']}/{t['name']}" for t in self.tools}


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InvalidResource(f"{path}: cannot read it ({e.strerror or e})", hint="check the path") from e
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise InvalidResource(f"{path}:{n}: not JSON ({e})", hint="one JSON object a line") from e
        if not isinstance(row, dict):
            raise InvalidResource(f"{path}:{n}: a JSON object was expected", hint="one JSON object a line")
        rows.append((n, row))
    return rows


def load_tasks(path: Path) -> list[Task]:
    tasks: list[Task] = []
    for n, row in _lines(path):
        prompt = row.get("query") or row.get("prompt")
        groups = row.get("relevant_groups") or [[r] for r in row.get("relevant") or []]
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidResource(f"{path}:{n}: field 'query' (or 'prompt') must be a non-empty string",
                                  hint="each task is {\"id\", \"query\", \"relevant_groups\": [[\"server/tool\"]]}")
        if not groups or not all(isinstance(g, list) and g and all(isinstance(i, str) for i in g) for g in groups):
            raise InvalidResource(f"{path}:{n}: field 'relevant_groups' must be a non-empty list of non-empty "
                                  "lists of 'server/tool' ids", hint="or give 'relevant': [ids]")
        tasks.append(Task(str(row.get("id", n)), prompt, tuple(frozenset(g) for g in groups)))
    if not tasks:
        raise InvalidResource(f"{path}: no tasks in it", hint="one JSON object a line")
    return tasks


def check_tasks(tasks: list[Task], known: set[str], where: str) -> None:
    """Every gold tool must exist in the catalogue, or a task could never succeed."""
    for task in tasks:
        missing = sorted(i for g in task.groups for i in g if i not in known)
        if missing and all(not (g & known) for g in task.groups):
            raise InvalidResource(f"task {task.id!r}: none of its correct tools is in {where} "
                                  f"(e.g. {missing[0]!r})", hint="tool ids are canonical server/tool ids")


def load_catalogue(directory: Path) -> Catalogue:
    tools_file = directory / "tools.jsonl"
    if not tools_file.is_file():
        raise InvalidResource(f"--catalogue {directory}: no tools.jsonl in it",
                              hint="a catalogue directory holds tools.jsonl ({server, name, description, inputSchema})")
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, row in _lines(tools_file):
        server, name = row.get("server"), row.get("name")
        if not isinstance(server, str) or not SERVER_NAME.match(server):
            raise InvalidResource(f"{tools_file}:{n}: field 'server' ({server!r}) must be a valid mcpctl server name",
                                  hint="lowercase letters, digits and '-', at most 63 characters")
        if not isinstance(name, str) or not name:
            raise InvalidResource(f"{tools_file}:{n}: field 'name' must be a non-empty string")
        if f"{server}/{name}" in seen:
            raise InvalidResource(f"{tools_file}:{n}: tool {server}/{name} is listed twice")
        seen.add(f"{server}/{name}")
        tools.append(row)
    instructions: dict[str, str] = {}
    if (directory / "servers.jsonl").is_file():
        for _, row in _lines(directory / "servers.jsonl"):
            if isinstance(row.get("server"), str) and isinstance(row.get("instructions"), str):
                instructions[row["server"]] = row["instructions"]
    favourites: list[str] = []
    fav_file = directory / "favourites.txt"
    if fav_file.is_file():
        favourites = [ln.strip() for ln in fav_file.read_text(encoding="utf-8").splitlines()
                      if ln.strip() and not ln.startswith("#")]
    return Catalogue(directory, tools, instructions, favourites)
