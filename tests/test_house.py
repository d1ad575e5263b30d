"""The house's shape, read from src/mcpctl's imports with `ast` (nothing is imported).

- Layers: a package imports only packages on a lower floor (LAYERS below, derived from the imports
  of the day the test was written). Every import counts, including those inside functions: a lazy
  import is still a dependency, it only moves the cost of loading it.
- `mcpctl.sdk` (the SDK's private names) is for `gateway/` and `upstream/` only.
- No import cycle anywhere, every import counted: module-level ones, those under
  `if TYPE_CHECKING:` and those inside functions (a lazy import only moves the cost of loading a
  module; the two modules still depend on each other, and a cycle is a seam in the wrong place).
- No module over 500 lines; `gateway/` no larger than 5,500 lines; `cli/` under 4,000 (it parses and
  renders: what it decides or builds lives in the package of its noun, issue 34).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mcpctl"

# Floors, highest first: a package may import packages on lower floors only (not its neighbours on
# the same floor). "" is mcpctl/__init__.py and __main__.py.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "__main__"),
    ("cli",),
    ("share",),          # `serve --shared`: one gateway process for many stdio sessions (issue 37)
    ("clients", "bakeoff", "demo", "preflight"),
    ("gateway",),
    ("cluster",),        # the replicas of one database (issue 36): only the gateway uses it
    ("presentation", "upstream", "evaluation"),
    ("ask", "auth", "telemetry"),
    ("storage", "eventloop", "wire"),
    ("catalogue",),
    ("resources", "audit", "examples", "chat"),
    ("db",),
    ("errors", "heap", "paths", "terminal", "sdk"),
)
FLOOR = {pkg: len(LAYERS) - i for i, floor in enumerate(LAYERS) for pkg in floor}
# sdk.py holds every private SDK name the gateway relies on: only these packages may use it.
SDK_USERS = frozenset({"gateway", "upstream"})

MAX_MODULE_LINES = 500
MAX_GATEWAY_LINES = 5_500
MAX_CLI_LINES = 3_999          # under 4,000


@dataclass(frozen=True)
class Import:
    source: str          # importing module, e.g. "mcpctl.gateway.front"
    target: str          # imported module (or package), e.g. "mcpctl.gateway.router"
    where: str           # "gateway/front.py:12"
    at_load: bool        # runs when the source module is loaded (module level, not TYPE_CHECKING)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str) -> str:
    """The top-level room a module lives in: "gateway" for mcpctl.gateway.front, "errors" for mcpctl.errors."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(body: list[ast.stmt], at_load: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under `body`, with whether it runs at module load."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, at_load
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in ast.walk(node):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    yield child, False
        elif isinstance(node, ast.If) and _is_type_checking(node):
            yield from _walk(node.body, False)
            yield from _walk(node.orelse, at_load)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    yield from _walk([c for c in children if isinstance(c, ast.stmt)], at_load)
                    for c in children:
                        if isinstance(c, ast.ExceptHandler | ast.match_case):
                            yield from _walk(c.body, at_load)


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    known = _modules()
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join([*base, node.module] if node.module else base)
    else:
        origin = node.module or ""
    # `from mcpctl.gateway import http` imports the module gateway.http; `from x import name`, x.
    return [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]


@functools.cache
def _imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(SRC).as_posix()
        for node, at_load in _walk(tree.body, True):
            for target in _targets(module, path.name == "__init__.py", node):
                if target == "mcpctl" or target.startswith("mcpctl."):
                    found.append(Import(module, target, f"{rel}:{node.lineno}", at_load))
    return tuple(found)


def _upward() -> list[str]:
    bad = []
    for imp in _imports():
        src, dst = _package(imp.source), _package(imp.target)
        if src == dst or dst == "":
            continue
        ok = src in SDK_USERS if dst == "sdk" else FLOOR[dst] < FLOOR[src]
        if not ok:
            bad.append(f"{imp.where}: {src or 'mcpctl'} imports {imp.target} ({dst})")
    return bad


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components with more than one module, or a self-import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return found


def _cycles(inside: str | None) -> list[str]:
    """Import cycles, every import counted (`inside="gateway"`: those within gateway/, else the others)."""
    graph: dict[str, set[str]] = {}
    for imp in _imports():
        if imp.source != imp.target and imp.target in _modules():
            graph.setdefault(imp.source, set()).add(imp.target)
    report = []
    for component in _strongly_connected(graph):
        in_gateway = {_package(m) for m in component} == {"gateway"}
        if (inside == "gateway") == in_gateway:
            lines = [i.where for i in _imports() if i.source in component and i.target in component]
            report.append(" <-> ".join(component) + " (" + ", ".join(lines) + ")")
    return report


def _lines(path: Path) -> int:
    with path.open(encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def _long_modules() -> list[str]:
    out = []
    for path in _modules().values():
        rel = path.relative_to(SRC).as_posix()
        if (n := _lines(path)) > MAX_MODULE_LINES:
            out.append(f"{rel}: {n} lines (at most {MAX_MODULE_LINES}; split it along its seams)")
    return out


def test_every_package_has_a_floor() -> None:
    rooms = {_package(m) for m in _modules()}
    assert rooms <= set(FLOOR), f"packages without a floor in LAYERS: {sorted(rooms - set(FLOOR))}"


def test_the_analysis_sees_the_imports() -> None:
    # A guard against a parser that finds nothing (and so passes everything).
    pairs = {(_package(i.source), _package(i.target)) for i in _imports()}
    assert {("cli", "resources"), ("gateway", "presentation"), ("gateway", "sdk"),
            ("presentation", "catalogue")} <= pairs
    lazy = [i for i in _imports() if not i.at_load and i.source.startswith("mcpctl.cli.")]
    assert lazy, "the CLI's function-level imports were not found"
    assert _strongly_connected({"a": {"b"}, "b": {"c", "a"}, "c": set(), "d": {"d"}}) == [["a", "b"], ["d"]]


def test_no_import_runs_upward() -> None:
    bad = _upward()
    assert not bad, "imports from a lower floor to a higher one (tests/test_house.py LAYERS):\n" + "\n".join(bad)


def test_no_import_cycles_outside_gateway() -> None:
    cycles = _cycles(inside=None)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_import_cycles_inside_gateway() -> None:
    cycles = _cycles(inside="gateway")
    assert not cycles, "import cycles in gateway/:\n" + "\n".join(cycles)


def test_no_module_over_500_lines() -> None:
    long = _long_modules()
    assert not long, "\n".join(long)


def test_gateway_size() -> None:
    total = sum(_lines(p) for p in (SRC / "gateway").rglob("*.py"))
    assert total <= MAX_GATEWAY_LINES, f"gateway/ holds {total} lines (at most {MAX_GATEWAY_LINES})"


def test_cli_size() -> None:
    total = sum(_lines(p) for p in (SRC / "cli").rglob("*.py"))
    assert total <= MAX_CLI_LINES, (f"cli/ holds {total} lines (under 4,000): move what decides or builds to "
                                    "the package of its noun (presentation/ for tables, evaluation/, ...)")
