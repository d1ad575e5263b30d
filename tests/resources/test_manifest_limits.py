"""Hostile manifests: alias bombs, deep nesting, duplicate JSON keys, oversized input, binary input.

Each is refused quickly with one clear message naming the file (and document and line where
known), and nothing is stored. Real `mcpctl` processes, so a hang is a failed test, not a hung run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.errors import InvalidResource
from mcpctl.resources.limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_INPUT_BYTES
from mcpctl.resources.yamlio import load_sources, parse_text

MCPCTL = str(Path(sys.executable).parent / "mcpctl")
GOOD = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: good}\nspec: {command: a}\n"

# 473 bytes that expand to 9**9 strings when walked as a tree.
BILLION_LAUGHS = GOOD + "---\n" + "\n".join([
    "apiVersion: mcpctl/v1",
    "kind: Server",
    "metadata: {name: lol}",
    "spec:",
    "  command: a",
    '  args: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    *(f"  x{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
]) + "\n"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float


def _cli(home: Path, *args: str, input: bytes | None = None, timeout: float = 20) -> Ran:
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    start = time.monotonic()
    try:
        r = subprocess.run([MCPCTL, *args], input=input, capture_output=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mcpctl {' '.join(args)} still running after {timeout} s")
    return Ran(r.returncode, r.stdout.decode(), r.stderr.decode(), time.monotonic() - start)


def _prompt(home: Path, r: Ran, limit: float) -> None:
    """`r` ended in about the time a trivial command takes right now (it refused before parsing):
    bounded against a baseline measured beside it, so that a loaded machine stretches both."""
    base = _cli(home, "get", "servers").elapsed
    assert r.elapsed < limit + 3 * base, (r.elapsed, base)


def _stored(home: Path) -> list[str]:
    root = home / "config" / "resources"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.yaml")) if root.exists() else []


def _refused(r: Ran, *needles: str, code: int = 1) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr[-2000:])
    assert r.stdout == ""
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) <= 4, r.stderr[-3000:]
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def _nested(depth: int) -> str:
    return GOOD + "---\n" + "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: deep}\nspec:\n  command: a\n" \
        "  description: " + "[" * depth + "]" * depth + "\n"


# -- through the CLI: apply and diff ----------------------------------------------------------------

def test_billion_laughs_is_refused_at_once_by_apply_and_diff(tmp_path: Path, tmp_home: Path) -> None:
    assert len(BILLION_LAUGHS.encode()) - len(GOOD) < 600
    f = tmp_path / "lol.yaml"
    f.write_text(BILLION_LAUGHS)
    for verb, code in (("apply", 1), ("diff", 2)):
        r = _cli(tmp_home, verb, "-f", str(f))
        _refused(r, str(f), "document 2", "alias", code=code)
        _prompt(tmp_home, r, 10)
    assert _stored(tmp_home) == []


def test_deep_nesting_is_one_line_not_a_traceback(tmp_path: Path, tmp_home: Path) -> None:
    f = tmp_path / "deep.yaml"
    f.write_text(_nested(300))
    _refused(_cli(tmp_home, "apply", "-f", str(f)), str(f), "document 2", "line 11", "nested")
    j = tmp_path / "deep.json"
    j.write_text('{"apiVersion": "mcpctl/v1", "kind": "Server", "metadata": {"name": "d"}, "spec": {"command": "a", '
                 '"description": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    _refused(_cli(tmp_home, "apply", "-f", str(j)), str(j), "nested")
    _refused(_cli(tmp_home, "diff", "-f", "-", input=_nested(300).encode()), "<stdin>", "nested", code=2)
    assert _stored(tmp_home) == []


def test_json_duplicate_keys_are_refused_like_yaml(tmp_path: Path, tmp_home: Path) -> None:
    j = tmp_path / "dup.json"
    j.write_text('{"apiVersion": "mcpctl/v1", "kind": "Server",\n "metadata": {"name": "a",\n "name": "b"},\n'
                 ' "spec": {"command": "x"}}\n')
    _refused(_cli(tmp_home, "apply", "-f", str(j)), str(j), "duplicate key 'name'", "line 2")
    y = tmp_path / "dup.yaml"
    y.write_text("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: a, name: b}\nspec: {command: x}\n")
    _refused(_cli(tmp_home, "apply", "-f", str(y)), str(y), "duplicate key")
    assert _stored(tmp_home) == []


def test_oversized_document_and_input_are_refused(tmp_path: Path, tmp_home: Path) -> None:
    big_doc = ("apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: big}\nspec:\n  command: a\n  args:\n"
               + "".join(f'  - "argument-{i:012d}"\n' for i in range(MAX_DOCUMENT_BYTES // 25 + 10)))
    f = tmp_path / "big.yaml"
    f.write_text(GOOD + "---\n" + big_doc)
    _refused(_cli(tmp_home, "apply", "-f", str(f)), str(f), "document 2", "MiB")
    # a 20 MB input is refused before it is parsed, from a file and from stdin
    huge = GOOD + "---\n" + "# filler\n" * (20_000_000 // 9)
    h = tmp_path / "huge.yaml"
    h.write_text(huge)
    r = _cli(tmp_home, "apply", "-f", str(h))
    _refused(r, str(h), "MiB")
    _prompt(tmp_home, r, 5)
    r = _cli(tmp_home, "apply", "-f", "-", input=huge.encode())
    _refused(r, "<stdin>", "MiB")
    _prompt(tmp_home, r, 5)
    assert _stored(tmp_home) == []


def test_binary_input_is_not_text_and_gets_no_tab_hint(tmp_path: Path, tmp_home: Path) -> None:
    blob = bytes([0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00, 0x09, 0x00, 0x00, 0x09]) + b"\x09" * 8
    f = tmp_path / "tool.yaml"
    f.write_bytes(blob)
    for r in (_cli(tmp_home, "apply", "-f", str(f)), _cli(tmp_home, "apply", "-f", "-", input=blob)):
        _refused(r, "not a text file")
        assert "tab" not in r.stderr.lower()
    assert _stored(tmp_home) == []


# -- the loader itself ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["recursive", "chain", "merge-bomb"])
def test_alias_graphs_that_expand_too_far_are_refused(case: str) -> None:
    head = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: a}\nspec:\n  command: a\n"
    if case == "recursive":
        text = head + "  args: &r [*r]\n"
        needle = "refers to itself"
    elif case == "chain":  # each alias nests the previous: shallow to write, deep to expand
        text = head + "  x0: &a0 [z]\n" + "".join(f"  x{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 200))
        needle = "nested"
    else:  # merge keys repeating one big anchored map
        text = head + "  base: &b {" + ", ".join(f"k{i}: {'v' * 90}" for i in range(100)) + "}\n" + \
            "  many: [" + ", ".join(["{<<: *b}"] * 2000) + "]\n"
        needle = "alias"
    start = time.monotonic()
    with pytest.raises(InvalidResource) as e:
        parse_text(text, "a.yaml")
    assert time.monotonic() - start < 5 * SLACK
    assert e.value.message.startswith("a.yaml, document 1, line ") and needle in e.value.message, e.value.message


def test_real_manifests_with_aliases_comments_and_flow_lists_still_load() -> None:
    text = ("# servers\napiVersion: mcpctl/v1\nkind: Project\nmetadata: {name: p}\nspec:\n"
            "  servers: &s [a, 'b', \"c\"]   # flow list, quotes\n"
            "  tools: {disabled: *s}\n"
            "  search: &d {enabled: true, topK: 3}\n"
            "  favouriteIndex: {<<: {enabled: true}, tools: [a/x]}\n")
    (doc,) = parse_text(text, "p.yaml")
    assert doc.data["spec"]["tools"]["disabled"] == ["a", "b", "c"]
    assert doc.data["spec"]["favouriteIndex"] == {"enabled": True, "tools": ["a/x"]}
    assert doc.where(("spec", "search")) == "p.yaml, document 1, line 8"


def test_limits_are_exactly_at_their_bounds() -> None:
    def nested(depth: int) -> str:  # a document `depth` nodes deep (the mapping is the first level)
        return "description: " + "[" * (depth - 2) + "x" + "]" * (depth - 2) + "\n"

    assert parse_text(nested(MAX_DEPTH), "ok.yaml")
    with pytest.raises(InvalidResource, match=f"nested more than {MAX_DEPTH} levels"):
        parse_text(nested(MAX_DEPTH + 1), "deep.yaml")
    as_json = json.dumps({"a": json.loads("[" * (MAX_DEPTH - 2) + '"x"' + "]" * (MAX_DEPTH - 2))})
    assert parse_text(as_json, "ok.json")
    with pytest.raises(InvalidResource, match=f"nested more than {MAX_DEPTH} levels"):
        parse_text(json.dumps({"a": json.loads(as_json)}), "deep.json")
    # a document of exactly the limit loads; one byte more does not
    filler = "a: " + "x" * (MAX_DOCUMENT_BYTES - 4) + "\n"
    assert len(filler.encode()) == MAX_DOCUMENT_BYTES
    assert parse_text(filler, "ok.yaml")
    with pytest.raises(InvalidResource, match="document 1"):
        parse_text("a: " + "x" * (MAX_DOCUMENT_BYTES - 3) + "\n", "big.yaml")
    assert MAX_INPUT_BYTES >= 4 * MAX_DOCUMENT_BYTES


def test_directory_skips_files_that_are_not_manifests(tmp_path: Path) -> None:
    d = tmp_path / "m"
    (d / "sub").mkdir(parents=True)
    (d / "s.yaml").write_text(GOOD)
    (d / "README.md").write_text("# my servers\n\tindented with a tab\n")
    (d / "sub" / "notes.txt").write_text("x")
    (d / "sub" / "p.json").write_text(json.dumps({"apiVersion": "mcpctl/v1", "kind": "Server",
                                                  "metadata": {"name": "j"}, "spec": {"command": "a"}}))
    skipped: list[Path] = []
    docs = load_sources([str(d)], recursive=True, on_skip=skipped.extend)
    assert sorted(x.data["metadata"]["name"] for x in docs) == ["good", "j"]
    assert sorted(p.name for p in skipped) == ["README.md", "notes.txt"]
    (d / "bad.yaml").write_text("a: [\n")
    with pytest.raises(InvalidResource, match=r"bad\.yaml"):
        load_sources([str(d)], on_skip=skipped.extend)
