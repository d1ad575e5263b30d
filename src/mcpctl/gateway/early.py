"""The early stdio front: answer a client's first messages while the MCP SDK is still loading.

Importing the SDK takes most of a gateway's start-up (~0.6 s of ~0.7 s). Over stdio, with every
upstream's catalogue cached on disk, nothing in the first exchange needs it: this module (no
`mcp`, `anyio` or `asyncio` import) starts a thread that reads the client's first messages and
answers

- `initialize` and `server/discover` with the result the SDK itself gave last time for the same
  request shape (method + requested protocol version), recorded by `gateway.stdio` in
  `state_dir()/front/<project>.json` under a fingerprint of everything that shapes it (mcpctl,
  the SDK's files, the project's resource file); no record, no early answer;
- `tools/list` (handshake era after `notifications/initialized`, or 2026-07-28 with its
  `_meta` envelope) with the catalogue built from the cache, byte for byte what the gateway's
  hot path sends for the same catalogue (with `--page-size`, its first page; a request carrying
  a cursor is left to the gateway).

Anything else, or anything after a message it does not answer, is kept in order for the SDK.
When the gateway is ready, `stop()` hands over: the consumed lines to replay through the normal
path (`initialize`, `notifications/initialized` and `server/discover` are replayed so the SDK
session has its state; their second response is dropped by id), the lines only observed
(answered `tools/list`), and the bytes of an unfinished line. The gateway then reads stdin on
its own. Its catalogue starts from the same cache entries (`entries`), so a live listing that
differs from what was answered here is announced with `list_changed` as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import select
import stat
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcpctl import __version__, paths
from mcpctl.catalogue.cache import CatalogueCache
from mcpctl.gateway.oversize import MAX_MESSAGE_BYTES
from mcpctl.presentation import paging
from mcpctl.presentation.catalogue import catalogue_from, load_gateway_config, tools_list_json
from mcpctl.presentation.view import SessionKey
from mcpctl.resources.kinds import ServerSpec
from mcpctl.resources.store import ResourceStore, atomic_write

log = logging.getLogger("mcpctl.gateway")

RECORD_FORMAT: Final = 1
RECORDED_METHODS: Final = ("initialize", "server/discover")
_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
_READ_SIZE: Final = 1 << 16


def record_path(project: str) -> Path:
    return paths.state_dir() / "front" / f"{project}.json"


def fingerprint(project: Mapping[str, Any] | None, instructions: str = "", capabilities: Iterable[str] = ()) -> str:
    """What the SDK's initialize/discover results depend on: mcpctl, the SDK, the project (as the
    store holds it, whatever the backend: a file's bytes exist only on one), the
    server instructions (the pipeline writes them from the project and its catalogue), and the
    capabilities relayed from the upstreams (`offered`)."""
    h = hashlib.sha256(__version__.encode())
    h.update(b"|" + instructions.encode("utf-8"))
    h.update(b"|" + ",".join(sorted(capabilities)).encode())
    origins: list[str | None] = [str(Path(__file__).with_name(m)) for m in ("front.py", "server.py")]  # an edited checkout, too
    for mod in ("mcp", "mcp_types"):
        try:
            spec = importlib.util.find_spec(mod)
            origins.append(spec.origin if spec is not None else None)
        except (ImportError, ValueError):
            origins.append(None)
    for origin in origins:
        try:
            st = os.stat(origin) if origin else None
        except OSError:
            st = None
        h.update(f"|{origin}:{st.st_mtime_ns if st else 0}:{st.st_size if st else 0}".encode())
    h.update(b"|" + (b"-" if project is None else
                     json.dumps(project, sort_keys=True, separators=(",", ":"), default=str).encode()))
    return h.hexdigest()


def known_capabilities(store: ResourceStore, servers: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each server's capabilities when it was last connected (its status, written by the gateway):
    what the gateway advertises before it connects (`relay.Relay.offered`)."""
    known = {}
    for name in servers:
        try:
            caps = (store.status("Server", name) or {}).get("capabilities")
        except OSError:
            continue
        if isinstance(caps, dict):
            known[name] = caps
    return known


# capability -> (key in an upstream's ServerCapabilities, sub-key that must be true, or None)
RELAYED_CAPABILITIES: Final = {"logging": ("logging", None), "completions": ("completions", None),
                               "subscribe": ("resources", "subscribe"), "prompts": ("prompts", None),
                               "resources": ("resources", None)}


def offered(capabilities: Mapping[str, dict[str, Any] | None],
            listings: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Which RELAYED_CAPABILITIES at least one upstream offers: from its capabilities (live, or as
    last seen), else from its cached listing (prompts, resources)."""
    caps: list[dict[str, Any]] = []
    for name, c in capabilities.items():
        if isinstance(c, dict):
            caps.append(c)
            continue
        listing = listings.get(name) or {}
        caps.append({"prompts": {}} if listing.get("prompts") else {})
        if listing.get("resources") or listing.get("resourceTemplates"):
            caps.append({"resources": {}})
    out = set()
    for cap, (key, sub) in RELAYED_CAPABILITIES.items():
        for c in caps:
            v = c.get(key)
            if isinstance(v, dict) and (sub is None or v.get(sub) is True):
                out.add(cap)
                break
    return out


def record_key(method: str, version: str) -> str:
    return f"{method} {version}"


def request_key(msg: dict[str, Any]) -> str | None:
    """The record key of an initialize/discover request (method + requested version), or None."""
    method, params = msg.get("method"), msg.get("params")
    if not isinstance(params, dict):
        return None
    if method == "initialize":
        version = params.get("protocolVersion")
    elif method == "server/discover":
        meta = params.get("_meta")
        version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
    else:
        return None
    return record_key(method, version) if isinstance(version, str) else None


def save_record(project: str, fp: str, stamp: dict[str, Any], modern: list[str],
                results: dict[str, dict[str, Any]]) -> None:
    """Merge `results` (record key -> the SDK's result as sent) into the project's record."""
    path = record_path(project)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    if not isinstance(old, dict) or old.get("fingerprint") != fp or old.get("format") != RECORD_FORMAT:
        old = {}
    merged = {**(old.get("results") or {}), **results}
    new = {"format": RECORD_FORMAT, "fingerprint": fp, "stamp": stamp, "modernVersions": modern,
           "results": merged}
    if new != old:
        atomic_write(path, json.dumps(new, ensure_ascii=False, separators=(",", ":")) + "\n")


def is_stream_fd(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def parse_line(line: bytes) -> Any:
    """One stdin line as JSON, or None when it is not: also JSON nested deeper than the parser
    recurses (RecursionError), so that one hostile line cannot end a stdio front."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


# What a stdio front answers to a line that is not JSON (JSON-RPC 2.0: parse error, id null).
PARSE_ERROR_LINE: Final = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, (int, str)) and not isinstance(rid, bool)


@dataclass
class Handover:
    """What the early front consumed from stdin, for the gateway's own reader."""

    # (line, replay?) in arrival order: replay through the normal path, or only observe it
    # (a tools/list answered here for good)
    consumed: list[tuple[bytes, bool]] = field(default_factory=list)
    suppress: set[Any] = field(default_factory=set)       # ids whose SDK response is a duplicate
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)   # id -> the response sent
    tail: bytes = b""                                     # an unfinished line
    eof: bool = False


class EarlyFront:
    """Project state read before the SDK loads, and the thread answering the first messages."""

    def __init__(self, store: ResourceStore, cache: CatalogueCache, project_name: str, profile: str | None = None,
                 page_size: int = 0) -> None:
        self.project_name = project_name
        self.profile = profile            # `serve --profile`: the view the stdio client gets
        self.page_size = page_size        # `serve --page-size`: the first page is answered here
        # taken first: a change while the SDK loads is then picked up by the project watch
        self.project_mtime: object | None = store.stamp("Project", project_name)
        self.project, self.servers = load_gateway_config(project_name, store)
        # the same cache entries the gateway's catalogue starts from
        self.entries: dict[str, dict[str, Any] | None] = {
            name: cache.read_server_entry(name) for name, spec in self.servers.items() if isinstance(spec, ServerSpec)}
        # the same pipeline as the gateway's: its instructions (for this profile) are part of what is recorded
        self.catalogue = catalogue_from(project_name, self.project, self.servers, self.entries)
        self.capabilities = known_capabilities(store, self.servers)
        self._project = store.find("Project", project_name)
        self.fingerprint = self.fingerprint_for(offered(
            {n: self.capabilities.get(n) for n in self.entries}, self.catalogue.listings))
        self._record = self._read_record()
        self._lists: dict[bool, str] = {}
        self._full = all(e is not None for e in self.entries.values())
        self._handover = Handover()
        self._stopping = False
        self._wake_r, self._wake_w = -1, -1
        self._thread: threading.Thread | None = None

    def fingerprint_for(self, capabilities: Iterable[str]) -> str:
        """The record's fingerprint when the gateway relays `capabilities` (`offered`)."""
        return fingerprint(self._project, self.catalogue.instructions_for(self.profile), capabilities)

    def _read_record(self) -> dict[str, Any] | None:
        try:
            rec = json.loads(record_path(self.project_name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT or rec.get("fingerprint") != self.fingerprint \
                or not isinstance(rec.get("results"), dict) or not isinstance(rec.get("stamp"), dict) \
                or not isinstance(rec.get("modernVersions"), list):
            return None
        return rec

    # -- running ----------------------------------------------------------------------------------

    def start(self) -> bool:
        """Start answering on stdin/stdout if there is anything to answer early with."""
        if self._record is None or sys.stdin is None or sys.stdout is None \
                or not (is_stream_fd(0) and is_stream_fd(1)):   # (None: fd 0/1 were closed at start)
            return False
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="mcpctl-early-front", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> Handover:
        """Stop reading (between two messages) and hand over what was consumed."""
        if self._thread is not None:
            self._stopping = True
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
            self._thread.join()
            self._thread = None
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._lists.clear()          # the gateway has its own catalogue by now
        self.entries = {}
        return self._handover

    def _run(self) -> None:
        h = self._handover
        state = _State()
        poller = select.poll()
        poller.register(0, select.POLLIN | select.POLLHUP | select.POLLERR)
        poller.register(self._wake_r, select.POLLIN)
        buf = b""
        try:
            while not self._stopping:
                events = dict(poller.poll())
                if self._stopping or self._wake_r in events:
                    break
                if 0 not in events:
                    continue
                try:
                    data = os.read(0, _READ_SIZE)
                except BlockingIOError:
                    continue
                if not data:
                    h.eof = True
                    break
                buf += data
                while (nl := buf.find(b"\n")) >= 0:
                    line, buf = buf[:nl + 1], buf[nl + 1:]
                    self._line(line, state)
                if len(buf) > MAX_MESSAGE_BYTES:     # the gateway's front refuses it (`oversize`)
                    break
        except Exception:   # never lose input: whatever was read goes to the gateway
            log.exception("early stdio front failed; the gateway takes over")
            state.done = True
        h.tail = buf

    def _line(self, line: bytes, state: _State) -> None:
        h = self._handover
        if state.done or not line.strip():
            if line.strip():
                h.consumed.append((line, True))
            return
        answer = None
        msg = parse_line(line)
        if isinstance(msg, dict) and msg.get("jsonrpc") == "2.0":
            try:
                answer = self._answer(msg, state)
            except Exception:      # leave it to the gateway
                log.exception("early stdio front could not answer; the gateway will")
        if answer is None:
            state.done = True            # from here on, everything waits for the gateway, in order
            h.consumed.append((line, True))
            return
        out, replay = answer
        if replay and out:
            h.suppress.add(msg["id"])
            h.answers[msg["id"]] = json.loads(out)
        h.consumed.append((line, replay))
        if out:
            _write_all(1, out)

    def _answer(self, msg: dict[str, Any], state: _State) -> tuple[bytes, bool] | None:
        """(response bytes, replay the request?) or None when the gateway must answer it."""
        assert self._record is not None
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
        results: dict[str, Any] = self._record["results"]
        modern_versions = self._record["modernVersions"]
        if method == "notifications/initialized" and "id" not in msg and state.era == "legacy":
            state.initialized = True
            return b"", True
        if not _valid_id(rid) or (params is not None and not isinstance(params, dict)):
            return None
        params = params or {}
        meta = params.get("_meta")
        version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
        if method == "initialize" and state.era is None and version is None and _plausible_initialize(params):
            result = results.get(record_key("initialize", params["protocolVersion"]))
            if not isinstance(result, dict):
                return None
            state.era = "legacy"
            return _response(rid, json.dumps(result, ensure_ascii=False, separators=(",", ":"))), True
        if method == "server/discover" and state.era in (None, "modern") and isinstance(version, str) \
                and version in modern_versions:
            result = results.get(record_key("server/discover", version))
            if not isinstance(result, dict):
                return None
            state.era = "modern"
            return _response(rid, json.dumps(result, ensure_ascii=False, separators=(",", ":"))), True
        if method == "tools/list" and self._full and "cursor" not in params:    # a cursor: the gateway
            if state.era == "legacy" and state.initialized and version is None:
                return _response(rid, self._tools_list(False)), False
            if state.era in (None, "modern") and version in modern_versions:
                state.era = "modern"
                return _response(rid, self._tools_list(True)), False
        return None

    def _tools_list(self, modern: bool) -> str:
        body = self._lists.get(modern)
        if body is None:
            assert self._record is not None
            view = self.catalogue.view(SessionKey(True, self.profile))  # a new session: gated if the project is
            items, after = paging.page(view.tools, "tools", None, self.page_size, self.catalogue.version)
            body = self._lists[modern] = tools_list_json(items, modern, self._record["stamp"], after)
        return body


@dataclass
class _State:
    era: str | None = None
    initialized: bool = False
    done: bool = False


def _plausible_initialize(params: dict[str, Any]) -> bool:
    info = params.get("clientInfo")
    return isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict) \
        and isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


def _response(rid: Any, result_json: str) -> bytes:
    return ('{"jsonrpc":"2.0","id":' + json.dumps(rid, ensure_ascii=False) + ',"result":' + result_json
            + "}\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


def start(store: ResourceStore, cache: CatalogueCache, project_name: str, profile: str | None = None,
          page_size: int = 0) -> EarlyFront | None:
    """Read the project and its cache and, when possible, start answering over stdio."""
    try:
        front = EarlyFront(store, cache, project_name, profile, page_size)
    except Exception:   # the gateway reports configuration errors itself
        return None
    front.start()
    return front
