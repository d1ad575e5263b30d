"""The model's weights packed once into a read-only file that every process maps (issue 37)."""

from __future__ import annotations

import mmap
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ci_support import SLACK, skip_unless_ci

try:
    import numpy as np
except ModuleNotFoundError:
    skip_unless_ci("numpy is not installed (pip install 'mcpctl[semantic]')")

from test_semantic import make_tiny_model

from mcpctl.catalogue import packed, semantic, vectors
from mcpctl.catalogue.minilm import MiniLM
from mcpctl.catalogue.rank import ToolDoc


@pytest.fixture
def tiny_model(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path)


@pytest.fixture
def use_tiny_model(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vectors, "find_model_dir", lambda: tiny_model)
    monkeypatch.setattr(vectors, "_model", None)
    monkeypatch.setattr(vectors, "_model_key", "")
    return tiny_model


TEXTS = ["read the file", "send a message to the city , weather forecast !", "北京 cafe", "the weather"]


def _mapped_kb(path: Path) -> int:
    """This process's resident kB of mappings of `path`."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_the_packed_model_embeds_as_the_float32_one(tiny_model: Path, tmp_path: Path) -> None:
    packed.pack(tiny_model, tmp_path / "w.bin", "tiny")
    weights = packed.Packed(tmp_path / "w.bin", "tiny")
    small, exact = MiniLM(tiny_model, weights), MiniLM(tiny_model)
    a, b = small.embed(TEXTS), exact.embed(TEXTS)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert float((a * b).sum(1).min()) > 0.99999
    assert np.allclose(small.embed(TEXTS[:1])[0], a[0], atol=1e-5)      # padding still masked out
    assert weights.tensors["0.qkv_w"].dtype == np.uint16 and weights.tensors["word"].dtype == np.float16
    assert not weights.tensors["0.qkv_w"].flags.writeable


def test_a_packed_file_for_another_model_truncated_or_foreign_is_packed_again(tiny_model: Path, tmp_path: Path) -> None:
    path = packed.packed_path(tmp_path, "tiny")
    first = packed.open_or_pack(tiny_model, tmp_path, "tiny")
    assert path.is_file()
    with pytest.raises(ValueError, match="another model"):
        packed.Packed(path, "other")
    good = path.read_bytes()
    for bad in (good[: len(good) // 2], b"not weights at all" * 100):
        # replaced, as mcpctl itself writes it: truncating a mapped file in place would fault
        # every process that maps it
        (tmp_path / "bad").write_bytes(bad)
        os.replace(tmp_path / "bad", path)
        again = packed.open_or_pack(tiny_model, tmp_path, "tiny")
        assert path.read_bytes() == good
        assert np.array_equal(again.tensors["1.o_w"], first.tensors["1.o_w"])
    assert not list(tmp_path.glob(".*.tmp"))         # no temporary file left behind
    (tmp_path / "tiny.minilm-int8-1.bin").write_bytes(b"an older format")
    packed.open_or_pack(tiny_model, tmp_path, "other")
    assert sorted(p.name for p in tmp_path.glob("*.bin")) == [packed.packed_path(tmp_path, "other").name]


def test_concurrent_packers_leave_one_whole_file(tiny_model: Path, tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def pack() -> None:
        try:
            packed.open_or_pack(tiny_model, tmp_path, "tiny")
        except BaseException as e:   # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=pack) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert packed.Packed(packed.packed_path(tmp_path, "tiny"), "tiny").tensors["word"].shape[0] > 0


def test_the_model_keeps_no_weights_resident_between_embeddings(tmp_path: Path) -> None:
    """Its pages are dropped as each matrix is widened: what stays mapped between embeddings is
    what the kernel maps around a fault (up to 64 kB here, or one large folio), not the model."""
    if not hasattr(mmap, "MADV_DONTNEED") or not Path("/proc/self/smaps").exists():
        pytest.skip("needs madvise and /proc")
    try:
        model_dir = semantic.find_model_dir()
    except ModuleNotFoundError:
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed")
    path = tmp_path / "w.bin"
    packed.pack(model_dir, path, "real")
    model = MiniLM(model_dir, packed.Packed(path, "real"))
    model.embed(TEXTS)
    model.embed(["add two numbers together"])
    assert _mapped_kb(path) < 4096 < path.stat().st_size // 1024 // 8


def test_load_model_packs_into_the_state_dir_and_a_ranker_maps_it_only_to_search(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [ToolDoc("w/read_file", "w", "read_file", "read the file"),
            ToolDoc("w/forecast", "w", "forecast", "weather forecast for the city")]
    semantic.warm(docs)                              # as create server / tools list do
    key = vectors.model_key()
    assert packed.packed_path(vectors.models_dir(), key).is_file()
    monkeypatch.setattr(vectors, "_model", None)     # a new process: the gateway
    loads: list[int] = []
    real = vectors.load_model
    monkeypatch.setattr(semantic, "load_model", lambda: loads.append(1) or real())
    ranker = semantic.HybridRanker(docs)
    assert ranker.ready and not loads                # vectors from the cache, the model not mapped
    assert ranker.search("weather forecast", 1)[0][0] == "w/forecast"
    assert loads == [1]


def test_a_gateway_process_that_never_searches_never_maps_the_model(tmp_path: Path) -> None:
    try:
        semantic.find_model_dir()
    except ModuleNotFoundError:
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed")
    docs = ("from mcpctl.catalogue import semantic, packed\n"
            "from mcpctl.catalogue.rank import ToolDoc\n"
            "docs = [ToolDoc('a/x', 'a', 'x', 'add two numbers'), ToolDoc('a/y', 'a', 'y', 'write a note')]\n")
    search = ("r = semantic.HybridRanker(docs)\n"
              "print(r.ready, packed.FORMAT in open('/proc/self/maps').read())\n"
              "r.search('add numbers', 1)\n"
              "print(packed.FORMAT in open('/proc/self/maps').read())\n")
    env = {"MCPCTL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for code in (docs + "semantic.warm(docs)\n", docs + search):    # create server, then a gateway
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120 * SLACK)
        assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "False", "True"]
