"""The temporary homes a bake-off runs in: one `MCPCTL_HOME` per presentation, each holding the
same servers and one project (the same name in each, so the instructions differ only by what
the presentation writes) that differs only in how it is presented.

- `--catalogue DIR`: every catalogue server is a stub (`python -m mcpctl.bakeoff.stub`) that
  records its calls in `calls.jsonl` under the workspace.
- `--project P`: the project and its servers are copied from the user's store (the copy keeps
  secret references as references; they resolve at launch from this environment), with the
  user's catalogue cache, so calls reach the project's real servers.

The user's own store, catalogue cache and invocation log are never written.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mcpctl import paths
from mcpctl.errors import InvalidResource, NotFound
from mcpctl.storage import Storage

if TYPE_CHECKING:
    from mcpctl.bakeoff.data import Catalogue
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.tool import CatalogueTool
    from mcpctl.presentation.view import NameTable
    from mcpctl.resources.store import ResourceStore

FLAT: Final = "flat"
FAVOURITE_INDEX: Final = "favourite-index"
WITHOUT_INSTRUCTION: Final = "favourite-index-without-instruction"
DEFERRED: Final = "deferred"
PRESENTATIONS: Final = (FLAT, FAVOURITE_INDEX, WITHOUT_INSTRUCTION, DEFERRED)
CATALOGUE_PROJECT: Final = "bakeoff"


@contextlib.contextmanager
def home(path: Path) -> Iterator[None]:
    """`MCPCTL_HOME` set to `path` for the code inside (the store and caches read it at each use)."""
    old = os.environ.get(paths.ENV_HOME)
    os.environ[paths.ENV_HOME] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(paths.ENV_HOME, None)
        else:
            os.environ[paths.ENV_HOME] = old


def project_spec(base: dict[str, Any], presentation: str, favourites: Sequence[str] | None,
                 ranker: str | None) -> dict[str, Any]:
    """A copy of a project spec presented as `presentation` (and nothing else changed)."""
    spec = copy.deepcopy(base)
    fav = dict(spec.get("favouriteIndex") or {})
    fav.pop("enabled", None)
    fav.pop("instruction", None)
    if favourites is not None:
        fav["tools"] = list(favourites)
    if fav.get("tools"):
        fav["maxFavourites"] = max(int(fav.get("maxFavourites", 1)), len(fav["tools"]))
    if presentation == WITHOUT_INSTRUCTION:
        fav["instruction"] = False
    spec["favouriteIndex"] = fav
    spec["presentation"] = FAVOURITE_INDEX if presentation == WITHOUT_INSTRUCTION else presentation
    if ranker:
        spec["search"] = {**(spec.get("search") or {}), "ranker": ranker}
    return spec


@dataclass
class Arm:
    """One presentation: its home, the project's name and spec there, and its name table."""

    presentation: str
    home: Path
    project: str
    spec: dict[str, Any]
    names: NameTable | None = None

    def resolve(self, presented: str) -> str | None:
        """The canonical id a presented name (or canonical id) stands for, or None."""
        hit = self.names.lookup(presented) if self.names is not None else None
        return hit[1].canonical_id if hit else None


@dataclass
class Workspace:
    root: Path
    servers: list[dict[str, Any]]             # Server resources, as stored
    arms: list[Arm] = field(default_factory=list)
    source: str = ""                          # what it was made from, for the report

    @property
    def calls_file(self) -> Path:
        return self.root / "calls.jsonl"

    def server_names(self) -> list[str]:
        return [s["metadata"]["name"] for s in self.servers]

    def cached_tools(self, arm: Arm) -> list[CatalogueTool]:
        from mcpctl.catalogue.tool import CatalogueTool

        out: list[CatalogueTool] = []
        with home(arm.home):
            cache = Storage.files().cache
            for server in self.server_names():
                for wire in cache.read_server_tools(server) or []:
                    out.append(CatalogueTool(f"{server}/{wire['name']}", server, wire["name"], wire))
        return out

    def missing_servers(self, arm: Arm) -> list[str]:
        with home(arm.home):
            cache = Storage.files().cache
            return [s for s in self.server_names() if cache.read_server_tools(s) is None]

    def name_table(self, arm: Arm) -> None:
        """The arm's names, from the catalogue its gateway listed (the cache in its home)."""
        from mcpctl.presentation.view import NameTable
        from mcpctl.resources.kinds import ProjectSpec

        spec = ProjectSpec.from_resource({"metadata": {"name": arm.project}, "spec": arm.spec})
        arm.names = NameTable(self.cached_tools(arm), spec)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _new_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="mcpctl-bakeoff-"))


def _populate(ws: Workspace, project: str, base_spec: dict[str, Any], presentations: Sequence[str],
              favourites: Sequence[str] | None, ranker: str | None) -> Workspace:
    for presentation in presentations:
        arm_home = ws.root / presentation
        spec = project_spec(base_spec, presentation, favourites, ranker)
        with home(arm_home):
            store = Storage.files().store           # each arm's own files, whatever the user's backend
            for server in ws.servers:
                store.put(copy.deepcopy(server))
            store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": project}, "spec": spec})
        ws.arms.append(Arm(presentation, arm_home, project, spec))
    return ws


def for_catalogue(cat: Catalogue, presentations: Sequence[str], favourites: Sequence[str] | None,
                  ranker: str | None) -> Workspace:
    ws = Workspace(_new_root(), [], source=f"catalogue {cat.path}")
    for server in cat.servers:
        ws.servers.append({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": server},
                           "spec": {"command": sys.executable,
                                    "args": ["-m", "mcpctl.bakeoff.stub", "--catalogue", str(cat.path.resolve()),
                                             "--server", server, "--calls", str(ws.calls_file)],
                                    "timeouts": {"connect": 60, "call": 30},
                                    "description": f"bake-off stub of catalogue server {server!r}"}})
    favs = favourites if favourites is not None else cat.favourites
    try:
        return _populate(ws, CATALOGUE_PROJECT, {"servers": cat.servers}, presentations, favs, ranker)
    except BaseException:
        ws.close()
        raise


def for_project(name: str, store: ResourceStore, cache: CatalogueCache, presentations: Sequence[str], favourites: Sequence[str] | None,
                ranker: str | None) -> Workspace:
    """A workspace of one arm per presentation, each with the project `name` of `store` and its
    servers' listings in `cache` (the user's)."""
    try:
        project = store.get("Project", name)
    except NotFound as e:
        raise NotFound(f"--project {name}: no such project", hint="mcpctl get projects lists them") from e
    spec = dict(project.get("spec") or {})
    servers = []
    for server in spec.get("servers") or []:
        try:
            res = store.get("Server", server)
        except NotFound as e:
            raise InvalidResource(f"project {name}: server {server!r} does not exist",
                                  hint="create it, or remove it from the project's spec.servers") from e
        servers.append({k: res[k] for k in ("apiVersion", "kind", "spec") if k in res}
                       | {"metadata": {"name": server}})
    cached = {s: cache.read_server_entry(s) for s in spec.get("servers") or []}
    ws = Workspace(_new_root(), servers, source=f"project {name}")
    try:
        _populate(ws, name, spec, presentations, favourites, ranker)
        for arm in ws.arms:
            with home(arm.home):
                arm_cache = Storage.files().cache
                for server, entry in cached.items():
                    if entry is not None:
                        arm_cache.write_server_entry(server, {k: v for k, v in entry.items() if isinstance(v, list)})
    except BaseException:
        ws.close()
        raise
    return ws
