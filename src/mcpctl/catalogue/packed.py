"""MiniLM's weights as one read-only file that every process on the machine maps (issue 37).

The packaged `model.safetensors` is float32 in PyTorch's layout; every process that loaded it kept
its own 80 MB copy. Packed once (the first process that needs the model writes it, atomically), the
file holds the weights in the form the encoder computes with:

- each linear layer's weight as (in, out), in bfloat16 (the upper half of each float32, kept as
  uint16): widened as it is used by a shift, as cheap as widening int8 and 50x closer to the
  float32 model (cosines >= 0.99999 where int8 with per-row scales gave 0.9997 and lost .004 R@5 on
  LiveMCPBench); numpy's float16 widening cost a query twice the CPU;
- the word and position tables as float16 (only indexed: a query touches a few rows);
- biases and layer norms as float32 (small).

Each process maps the file read-only (`mmap`), so the page cache holds it once for every gateway;
a layer's pages are released from the process (`MADV_DONTNEED`) once its output is computed (the
tables' once the rows are looked up), so a process keeps at most one layer's weights resident
while it embeds (one matrix's, 1.2 MB: each is dropped once widened), none between (the page cache maps a file in large folios here: looking up
5 rows of the word table left 2 MB resident). Only
`catalogue.minilm` imports this module (numpy).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import mmap
import os
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import numpy as np

from mcpctl import paths

MAGIC: Final = b"MCPCTLW\x01"
FORMAT: Final = "minilm-bf16-3"
_ALIGN: Final = 64
_PAGE: Final = mmap.PAGESIZE
_ROWS: Final = 4096          # rows of a table converted at a time when packing (bounds memory)
_LINEAR: Final = {"qkv": None, "ao": "attention.output.dense", "i": "intermediate.dense", "o": "output.dense"}
_SRC_DTYPES: Final = {"F32": np.float32, "F16": np.float16}


def packed_path(directory: Path, model_key: str) -> Path:
    return directory / f"{model_key}.{FORMAT}.bin"


class _Source:
    """The tensors of a .safetensors file, read one at a time (or a table a slice of rows at a time)."""

    def __init__(self, fh: io.BufferedReader, path: Path) -> None:
        self.fh, self.path = fh, path
        (n,) = struct.unpack("<Q", fh.read(8))
        header: dict[str, Any] = json.loads(fh.read(n))
        header.pop("__metadata__", None)
        self.base = 8 + n
        self.info = {k.removeprefix("bert."): v for k, v in header.items()}
        self.names = {k.removeprefix("bert."): k for k in header}

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.info[name]["shape"])

    def rows(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        info = self.info[name]
        dtype = _SRC_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{self.path}: tensor {name} has dtype {info['dtype']}, not F32 or F16")
        shape = list(info["shape"])
        row = int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize
        stop = shape[0] if stop is None else min(stop, shape[0])
        a, b = info["data_offsets"]
        if b - a != shape[0] * row:
            raise ValueError(f"{self.path}: tensor {name} has {b - a} bytes for shape {shape}")
        arr = np.empty([stop - start, *shape[1:]], dtype=dtype)
        self.fh.seek(self.base + a + start * row)
        if self.fh.readinto(arr.data.cast("B")) != arr.nbytes:
            raise ValueError(f"{self.path}: tensor {name} is truncated")
        return arr.astype(np.float32, copy=False)


def _bfloat16(w: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (the upper half of each float32, rounded to nearest even), as uint16."""
    bits = np.ascontiguousarray(w, dtype=np.float32).view(np.uint32)
    bits = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (bits >> np.uint32(16)).astype(np.uint16)


def _plan(src: _Source, layers: int) -> list[tuple[str, str, tuple[int, ...], Callable[[], Iterator[np.ndarray]], bool]]:
    """(name, dtype, shape, chunks producer, starts a page) for every packed tensor, in file order."""
    def whole(name: str, dtype: type = np.float32, transform: Callable[[np.ndarray], np.ndarray] | None = None,
              ) -> Callable[[], Iterator[np.ndarray]]:
        def gen() -> Iterator[np.ndarray]:
            arr = src.rows(name)
            yield (transform(arr) if transform else arr).astype(dtype, copy=False)
        return gen

    def table(name: str) -> Callable[[], Iterator[np.ndarray]]:
        def gen() -> Iterator[np.ndarray]:
            for start in range(0, src.shape(name)[0], _ROWS):
                yield src.rows(name, start, start + _ROWS).astype(np.float16)
        return gen

    e = "embeddings."
    out: list[tuple[str, str, tuple[int, ...], Callable[[], Iterator[np.ndarray]], bool]] = [
        ("word", "f2", src.shape(e + "word_embeddings.weight"), table(e + "word_embeddings.weight"), True),
        ("pos", "f2", src.shape(e + "position_embeddings.weight"), table(e + "position_embeddings.weight"), False),
        ("type0", "f4", src.shape(e + "token_type_embeddings.weight")[1:],
         whole(e + "token_type_embeddings.weight", transform=lambda a: a[0]), False),
        ("emb_ln_w", "f4", src.shape(e + "LayerNorm.weight"), whole(e + "LayerNorm.weight"), False),
        ("emb_ln_b", "f4", src.shape(e + "LayerNorm.bias"), whole(e + "LayerNorm.bias"), False),
    ]
    for i in range(layers):
        p = f"encoder.layer.{i}."
        qkv = [p + f"attention.self.{n}" for n in ("query", "key", "value")]
        for short, long in _LINEAR.items():
            names = qkv if long is None else [p + long]
            out_dim = sum(src.shape(n + ".weight")[0] for n in names)
            in_dim = src.shape(names[0] + ".weight")[1]

            def weight(names: list[str] = names) -> Iterator[np.ndarray]:
                yield _bfloat16(np.concatenate([src.rows(n + ".weight") for n in names]).T)

            def bias(names: list[str] = names) -> Iterator[np.ndarray]:
                yield np.concatenate([src.rows(n + ".bias") for n in names])

            out += [(f"{i}.{short}_w", "u2", (in_dim, out_dim), weight, short == "qkv"),
                    (f"{i}.{short}_b", "f4", (out_dim,), bias, False)]
        for ln, long in (("ln1", "attention.output.LayerNorm"), ("ln2", "output.LayerNorm")):
            out += [(f"{i}.{ln}_w", "f4", src.shape(p + long + ".weight"), whole(p + long + ".weight"), False),
                    (f"{i}.{ln}_b", "f4", src.shape(p + long + ".bias"), whole(p + long + ".bias"), False)]
    return out


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def pack(model_dir: Path, dest: Path, model_key: str) -> None:
    """Write the packed weights of the model in `model_dir` to `dest` (atomically: a temporary
    file renamed into place, so concurrent packers and readers never see half a file)."""
    config: dict[str, Any] = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    layers = int(config["num_hidden_layers"])
    with (model_dir / "model.safetensors").open("rb") as fh:
        plan = _plan(_Source(fh, model_dir / "model.safetensors"), layers)
        tensors: dict[str, list[Any]] = {}
        starts: list[int] = [0]      # regions: the embeddings, then each layer
        offset = 0
        for name, dtype, shape, _, page in plan:
            offset = _round_up(offset, _PAGE if page else _ALIGN)
            if page and name != "word":
                starts.append(offset)
            tensors[name] = [dtype, list(shape), offset]
            offset += int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        starts.append(_round_up(offset, _PAGE))
        header = json.dumps({"format": FORMAT, "model": model_key, "config": config, "tensors": tensors,
                             "regions": [list(pair) for pair in itertools.pairwise(starts)],
                             "size": offset}).encode()
        data_start = _round_up(len(MAGIC) + 8 + len(header), _PAGE)
        paths.private_dir(dest.parent)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb", opener=paths.open_private) as out:
                out.write(MAGIC + struct.pack("<Q", len(header)) + header)
                for name, dtype, shape, produce, _ in plan:
                    out.seek(data_start + tensors[name][2])
                    written = 0
                    for chunk in produce():
                        if chunk.dtype != np.dtype(dtype):
                            raise ValueError(f"packing {name}: {chunk.dtype}, expected {dtype}")
                        out.write(np.ascontiguousarray(chunk).tobytes())
                        written += chunk.nbytes
                    if written != int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize:
                        raise ValueError(f"packing {name}: wrote {written} bytes for shape {shape}")
                out.truncate(data_start + offset)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)


class Packed:
    """A packed weights file, mapped read-only: `tensors` are numpy views of the mapping (read-only),
    `release(region)` drops a region's pages from this process."""

    def __init__(self, path: Path, model_key: str | None = None) -> None:
        self._file = path.open("rb")        # kept: table rows are read from it (`rows`)
        size = os.fstat(self._file.fileno()).st_size
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if self._map[:len(MAGIC)] != MAGIC:
                raise ValueError(f"{path}: not a packed weights file")
            (n,) = struct.unpack("<Q", self._map[len(MAGIC):len(MAGIC) + 8])
            header: dict[str, Any] = json.loads(self._map[len(MAGIC) + 8:len(MAGIC) + 8 + n])
            if header.get("format") != FORMAT or (model_key is not None and header.get("model") != model_key):
                raise ValueError(f"{path}: packed for another model or format")
            self.base = _round_up(len(MAGIC) + 8 + n, _PAGE)
            if self.base + int(header["size"]) > size:
                raise ValueError(f"{path}: truncated ({size} bytes)")
            self.config: dict[str, Any] = header["config"]
            self.tensors: dict[str, np.ndarray] = {}
            for name, (dtype, shape, offset) in header["tensors"].items():
                count = int(np.prod(shape, dtype=np.int64))
                self.tensors[name] = np.frombuffer(self._map, dtype=dtype, count=count,
                                                   offset=self.base + offset).reshape(shape)
            self._regions = [(self.base + a, b - a) for a, b in header["regions"]]
            self._address = np.frombuffer(self._map, dtype=np.uint8, count=1).ctypes.data
            if hasattr(mmap, "MADV_DONTNEED"):      # the header is read: nothing stays mapped
                self._map.madvise(mmap.MADV_DONTNEED, 0, self.base)
        except BaseException:
            self.tensors = {}
            with contextlib.suppress(BufferError):
                self._map.close()
            self._file.close()
            raise

    def rows(self, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """`table[ids]` (a 2-D tensor of this file), read from the file rather than through the
        mapping: the page cache here maps a file in large folios, so touching 5 rows of the word
        table through the mapping made 2 MB resident, and a query's scattered rows several."""
        row = table.strides[0]
        start = table.ctypes.data - self._address
        fd = self._file.fileno()
        out = np.empty((*ids.shape, *table.shape[1:]), dtype=table.dtype)
        flat = out.reshape(-1, *table.shape[1:])
        for i, token in enumerate(ids.reshape(-1).tolist()):
            flat[i] = np.frombuffer(os.pread(fd, row, start + token * row), dtype=table.dtype)
        return out

    def drop(self, tensor: np.ndarray) -> None:
        """Drop the pages of one of `tensors` from this process, once used (the pages it shares
        with its neighbours too: they are mapped again when next used)."""
        if hasattr(mmap, "MADV_DONTNEED"):
            start = tensor.ctypes.data - self._address
            first = start - start % _PAGE
            self._map.madvise(mmap.MADV_DONTNEED, first, _round_up(start + tensor.nbytes, _PAGE) - first)

    def release(self, region: int) -> None:
        """Drop region `region`'s pages from this process (0: the embedding tables, i + 1: layer
        i): they stay in the page cache, and the next use maps them again."""
        if hasattr(mmap, "MADV_DONTNEED"):
            start, length = self._regions[region]
            self._map.madvise(mmap.MADV_DONTNEED, start, length)


def open_or_pack(model_dir: Path, directory: Path, model_key: str) -> Packed:
    """The packed weights of the model, packing them first when no valid file is there."""
    path = packed_path(directory, model_key)
    try:
        return Packed(path, model_key)
    except (OSError, ValueError, KeyError, struct.error):
        pack(model_dir, path, model_key)
        for old in directory.glob("*.bin"):     # another format's or model's: nothing reads it now
            if old != path:
                old.unlink(missing_ok=True)
        return Packed(path, model_key)
