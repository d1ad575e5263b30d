"""`mcpctl demo`'s run, without the CLI: the example servers and the `demo` project as manifests,
registered in a store, and one session through the real gateway with the official MCP client.

`demo_documents` is exactly examples/servers.yaml and examples/project.yaml (tests/examples pins
it); `register_demo` applies them, refusing to overwrite same-named objects the demo did not
create; `run_session` starts `mcpctl serve --project demo` as a subprocess, waits for the tools
it needs and makes the demo's calls, each a `Step` of the returned `Session`; `evidence` reads
what the run left in the invocation log and the favourites it suggests. `cli/demo.py` prints the
report.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpctl.catalogue.favourites import Floor

if TYPE_CHECKING:
    from mcpctl.audit.records import AuditLog
    from mcpctl.catalogue.cache import CatalogueCache
    from mcpctl.catalogue.favourites import Suggestions
    from mcpctl.errors import UpstreamError
    from mcpctl.resources.store import ResourceStore

PROJECT = "demo"
EXAMPLE_SERVERS = ("notes", "calc", "textkit")
# The demo's one short session is all the log holds: it suggests from any call (by default
# `favourites suggest` wants 3 calls in 2 sessions, --min-calls and --min-sessions).
DEMO_FLOOR = Floor(calls=1, sessions=1)
OWNER_LABEL = ("source", "mcpctl-examples")
DISABLED = "notes/delete_note"
FAVOURITES = ("notes/create_note", "notes/search_notes", "calc/add")
# A credential view the README's tokens use: reads everything, and may add a note.
WRITER = {"readOnly": True, "allow": ["notes/create_note"]}
# The tools the demo calls; the gateway must list them before the calls start.
NEEDED = ("notes/create_note", "notes/search_notes", "calc/add", "textkit/slugify")
_PASS_ENV = ("MCPCTL_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


# (call timeout, description) per server: the same as examples/servers.yaml.
_SERVERS = {
    "notes": (30, "A personal notes store (create, list, read, search, update, delete notes)"),
    "calc": (60, "Arithmetic, statistics, unit conversion and a slow tool that reports progress"),
    "textkit": (30, "Text utilities (word count, slugify, regex search, diff, hash, echo)"),
}


def demo_documents() -> list[dict[str, Any]]:
    """The Server and Project objects the demo registers: exactly examples/servers.yaml and
    examples/project.yaml (tests/examples pins it), so that applying those manifests after the
    demo, as the README's first session does, changes nothing. `mcpctl example-server NAME` is
    found on PATH or next to the Python running the gateway, so they work from an unactivated venv."""
    labels = {OWNER_LABEL[0]: OWNER_LABEL[1]}
    docs: list[dict[str, Any]] = []
    for name in EXAMPLE_SERVERS:
        call, description = _SERVERS[name]
        docs.append({
            "apiVersion": "mcpctl/v1", "kind": "Server",
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"transport": "stdio", "command": "mcpctl", "args": ["example-server", name],
                     "timeouts": {"connect": 30, "call": call}, "description": description},
        })
    docs.append({
        "apiVersion": "mcpctl/v1", "kind": "Project",
        "metadata": {"name": PROJECT, "labels": dict(labels)},
        "spec": {
            "description": "The bundled example servers, curated",
            "servers": list(EXAMPLE_SERVERS),
            "tools": {"disabled": [DISABLED]},
            "favouriteIndex": {"enabled": True, "tools": list(FAVOURITES), "maxFavourites": 15},
            "presentation": "favourite-index",
            "names": {"style": "portable", "maxLength": 48},
            "profiles": {"writer": dict(WRITER)},
            "search": {"enabled": True, "ranker": "bm25", "topK": 5, "recordQueries": True},
        },
    })
    return docs


def register_demo(store: Any) -> tuple[list[str], list[str]]:
    """Apply the demo objects; refuse to overwrite same-named objects the demo did not create.
    Returns the changes (`server/notes created`, ...) and the warnings of applying them."""
    from mcpctl.errors import Conflict
    from mcpctl.resources.apply import apply_documents
    from mcpctl.resources.yamlio import Document

    data = demo_documents()
    for d in data:
        live = store.find(d["kind"], d["metadata"]["name"])
        labels = ((live or {}).get("metadata") or {}).get("labels") or {}
        if live is not None and labels.get(OWNER_LABEL[0]) != OWNER_LABEL[1]:
            ref = f"{d['kind'].lower()}/{d['metadata']['name']}"
            raise Conflict(f"{ref} already exists and was not created by mcpctl demo; leaving it alone",
                           hint="run the demo in a separate store: mcpctl demo --home /tmp/mcpctl-demo")
    docs = [Document("mcpctl demo", i + 1, d) for i, d in enumerate(data)]
    changes, warnings = apply_documents(docs, store)
    return [f"{c.ref} {c.action}" for c in changes], warnings


@dataclass
class Step:
    title: str
    ok: bool
    detail: str


@dataclass
class Session:
    protocol: str = ""
    server: str = ""
    instructions: str = ""
    tools: list[Any] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def resolve_name(names: list[str], canonical_id: str) -> str:
    """The presented name of `canonical_id` in a listing, whatever the presentation mode."""
    server, _, tool = canonical_id.partition("/")
    preferred = (f"{server}__{tool}", f"favourite__{tool}", f"all__{server}__{tool}",
                 canonical_id, f"favourite/{tool}", f"all/{server}/{tool}")
    for name in preferred:
        if name in names:
            return name
    loose = [n for n in names if server in n and tool in n]
    return min(loose, key=len) if loose else canonical_id


def text_of(result: Any) -> str:
    """The text of a tool result (`<image>` and the like for other content)."""
    parts = [getattr(c, "text", f"<{getattr(c, 'type', '?')}>") for c in result.content]
    return "\n".join(parts)


def short(text: str, n: int = 90) -> str:
    """`text` on one line, cut to `n` characters with an ellipsis."""
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


async def run_session(timeout: float, errlog_path: Path, protocol: str = "auto") -> Session:
    """Start the gateway, wait for the example tools, make the demo calls."""
    import anyio
    import mcp.types as t
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from mcpctl import __version__

    env = {k: os.environ[k] for k in _PASS_ENV if os.environ.get(k)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcpctl", "serve", "--project", PROJECT],
                                   env=env or None)
    s = Session()
    from mcpctl import paths

    paths.private_dir(errlog_path.parent)
    with open(errlog_path, "w", encoding="utf-8", opener=paths.open_private) as errlog, anyio.fail_after(timeout):
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=timeout, mode=protocol,
                          client_info=t.Implementation(name="mcpctl-demo", version=__version__)) as c:
            s.protocol = c.protocol_version
            s.instructions = c.instructions or ""
            info = c.server_info
            s.server = f"{info.name} {info.version}" if info else "?"
            names: list[str] = []
            # Upstreams connect in the background; the first listing may come from an empty cache.
            while True:
                s.tools = list((await c.list_tools(cache_mode="refresh")).tools)
                names = [tool.name for tool in s.tools]
                if all(resolve_name(names, cid) in names for cid in NEEDED):
                    break
                await anyio.sleep(0.25)

            async def call(label: str, name: str, args: dict[str, Any], *, expect_error: bool = False) -> Any:
                t0 = time.perf_counter()
                try:
                    result = await c.call_tool(name, args)
                except MCPError as e:
                    s.steps.append(Step(f"{label}: {name}", False, f"error {e.code}: {e.message}"))
                    return None
                ms = (time.perf_counter() - t0) * 1000
                shown = json.dumps(args, ensure_ascii=False)
                s.steps.append(Step(f"{label}: {name} {short(shown, 60)}", bool(result.is_error) == expect_error,
                                    f"{short(text_of(result))}  ({ms:.1f} ms)"))
                return result

            note = await call("Write a note", resolve_name(names, "notes/create_note"),
                              {"title": "Try mcpctl", "body": "Register MCP servers once, group them into "
                               "projects, serve one curated catalogue.", "tags": ["demo"]})
            await call("Search notes", resolve_name(names, "notes/search_notes"), {"query": "curated catalogue"})
            await call("Add numbers", resolve_name(names, "calc/add"), {"a": 19, "b": 23})
            await call("Make a slug", resolve_name(names, "textkit/slugify"), {"text": "One catalogue, many servers!"})
            if "search_tools" in names:
                found = await call("Search the catalogue", "search_tools", {"query": "take a note", "top_k": 3})
                hits = ((found.structured_content or {}).get("tools") or []) if found is not None else []
                if hits:
                    s.steps[-1].detail = ", ".join(f"{h['name']} ({h['score']:.2f})" for h in hits) + \
                        "  " + s.steps[-1].detail.rsplit("  ", 1)[-1]
                # An agent reads the returned schemas and calls the first tool it has arguments for.
                args = {"title": "Found through search_tools", "body": "The agent searched, then called."}
                fits = [h["name"] for h in hits
                        if set((h.get("inputSchema") or {}).get("required") or ()) <= set(args)
                        and set(args) <= set((h.get("inputSchema") or {}).get("properties") or {})]
                if fits:
                    await call("Call the first result that fits", fits[0], args)
            await call("Call a disabled tool (refused)", DISABLED, {"id": str(_note_id(note) or 1)},
                       expect_error=True)
    return s


def _note_id(result: Any) -> str | None:
    if result is None or result.is_error:
        return None
    with contextlib.suppress(ValueError, TypeError, KeyError):
        return str(json.loads(text_of(result))["id"])
    return None


def unwrap(e: BaseException) -> BaseException:
    """The one exception inside nested single-exception groups (the SDK's context managers)."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def tail(path: Path, lines: int = 8) -> str:
    """The last `lines` lines of a file ("" when it cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def gateway_failed(e: BaseException, errlog: Path) -> UpstreamError:
    """The error `mcpctl demo` reports when its session failed: why (a timeout, or the innermost
    exception of the SDK's groups) and the gateway's last lines of stderr."""
    from mcpctl.errors import UpstreamError

    inner = unwrap(e)
    why = "timed out" if isinstance(inner, TimeoutError) else f"{type(inner).__name__}: {inner}"
    last = tail(errlog)
    return UpstreamError(f"the demo gateway failed: {why}",
                         hint=(f"gateway stderr ({errlog}):\n{last}" if last else f"see {errlog}"))


@contextlib.contextmanager
def at_home(home: Path | None) -> Iterator[None]:
    """Point mcpctl (this process and the gateway it starts) at `home` as MCPCTL_HOME for the
    duration of the demo (`--home`: a separate store); nothing changes without one."""
    if home is None:
        yield
        return
    old = os.environ.get("MCPCTL_HOME")
    os.environ["MCPCTL_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MCPCTL_HOME", None)
        else:
            os.environ["MCPCTL_HOME"] = old


@dataclass
class Evidence:
    """What the run left: the demo's own invocation log rows and (search, call next) pairs since it
    started, that log's file, and the favourites suggested from the calls with the line that sets them."""

    rows: list[Any]
    pairs: list[tuple[str, str]]
    log_path: Path
    suggested: Suggestions
    line: str | None


def evidence(since: float, store: ResourceStore, cache: CatalogueCache, log: AuditLog) -> Evidence:
    """Read what the run since `since` left in the invocation log (the SQLite file the demo's
    gateway wrote), and suggest favourites from `log`'s calls as `favourites suggest` would."""
    from mcpctl.audit.log import InvocationLog
    from mcpctl.presentation.favourites import set_command, suggestions

    with InvocationLog() as own:
        rows = own.query(project=PROJECT, since=since)
        pairs = own.search_pairs(PROJECT, since=since)
        log_path = own.path
    found, _, _ = suggestions(PROJECT, store, cache, log, 5, since, DEMO_FLOOR)
    line = set_command(PROJECT, found.suggested) if found.suggested else None
    return Evidence(rows, pairs, log_path, found, line)


def unregister_demo(store: ResourceStore) -> None:
    """`--cleanup`: delete the demo's objects, the project before its servers; those already gone are skipped."""
    from mcpctl.errors import MCPCtlError

    for d in reversed(demo_documents()):
        with contextlib.suppress(MCPCtlError):
            store.delete(d["kind"], d["metadata"]["name"])
