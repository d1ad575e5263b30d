"""A numpy-only port of all-MiniLM-L6-v2 (sentence-transformers): tokenizer, encoder, pooling.

Reads the model's own files (config.json, vocab.txt, model.safetensors) from a directory that a
Python package ships; never downloads anything and needs no torch. The output matches
sentence-transformers' `encode(..., normalize_embeddings=True)`: BERT uncased WordPiece,
6 transformer layers, mean pooling over real tokens, L2 normalisation.
Only imported by `catalogue.semantic` (the `semantic` extra).
"""

from __future__ import annotations

import json
import struct
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

if TYPE_CHECKING:
    from mcpctl.catalogue.packed import Packed

_DTYPES: Final = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}
MAX_TOKENS: Final = 256          # sentence_bert_config.json max_seq_length
BATCH_BYTES: Final = 8 << 20     # the largest intermediate array of a batch (MiniLM.embed)
_WORD_MAX_CHARS: Final = 100     # BERT: longer words become [UNK]


def read_safetensors(path: Path, half: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file as a float32/int64 numpy array, read straight into
    its array (one copy, no intermediate buffer); tensors named in `half` as float16."""
    with path.open("rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        base = 8 + n
        out: dict[str, np.ndarray] = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = _DTYPES.get(info["dtype"])
            if dtype is None:
                raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
            start, end = info["data_offsets"]
            arr = np.empty(info["shape"], dtype=dtype)
            if arr.nbytes != end - start:
                raise ValueError(f"{path}: tensor {name} has {end - start} bytes for shape {info['shape']}")
            fh.seek(base + start)
            if fh.readinto(arr.data.cast("B")) != arr.nbytes:
                raise ValueError(f"{path}: tensor {name} is truncated")
            if name in half:
                arr = arr.astype(np.float16)
            elif arr.dtype == np.float16:
                arr = arr.astype(np.float32)
            out[name] = arr
        return out


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class WordPiece:
    """BERT's uncased tokenizer: basic tokenisation (clean, CJK, lowercase, strip accents,
    split punctuation) then greedy longest-match WordPiece."""

    def __init__(self, vocab_file: Path) -> None:
        # The vocabulary as sorted 64-bit hashes of its tokens and their ids (0.5 MB), not a dict of
        # 30,522 strings (4.9 MB in every process that searches); a lookup is a binary search. Read
        # a line at a time, so no list of every token is ever held.
        with vocab_file.open(encoding="utf-8") as fh:
            hashes = np.fromiter((hash(line.rstrip("\n")) for line in fh), dtype=np.int64)
        self._order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._order]
        cls, sep, unk = (self.id(t) for t in ("[CLS]", "[SEP]", "[UNK]"))
        if cls is None or sep is None or unk is None:
            raise ValueError(f"{vocab_file}: no [CLS], [SEP] or [UNK] token")
        self.cls, self.sep, self.unk = cls, sep, unk
        self._word = lru_cache(maxsize=50_000)(self._wordpiece)

    def id(self, token: str) -> int | None:
        """The id of `token` (its last line, as a dict of the file would say, where the file
        repeats it), or None when it is not in the vocabulary."""
        h = hash(token)
        i = int(self._hashes.searchsorted(h, side="right")) - 1
        return int(self._order[i]) if i >= 0 and int(self._hashes[i]) == h else None

    def _basic(self, text: str) -> list[str]:
        chars: list[str] = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if _is_cjk(cp):
                chars.extend((" ", ch, " "))
            elif ch.isspace():
                chars.append(" ")
            else:
                chars.append(ch)
        words: list[str] = []
        for word in "".join(chars).lower().split():
            word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
            current = ""
            for ch in word:
                if _is_punct(ch):
                    if current:
                        words.append(current)
                        current = ""
                    words.append(ch)
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > _WORD_MAX_CHARS:
            return (self.unk,)
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.id(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            ids.append(found)
            start = end
        return tuple(ids)

    def encode(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        ids = [self.cls]
        for word in self._basic(text):
            ids.extend(self._word(word))
            if len(ids) >= max_tokens - 1:
                break
        return [*ids[: max_tokens - 1], self.sep]


# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is exact.
_ERF_P: Final = np.float32(0.3275911)
_ERF_A: Final = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_SQRT_HALF: Final = np.float32(1.0 / np.sqrt(2.0))


def _gelu_(x: np.ndarray) -> np.ndarray:
    """x * Phi(x), exact GELU, computed in place (x is overwritten and returned).

    With erf(|x|/sqrt 2) = 1 - poly(t) * exp(-x^2/2): GELU(x) = (x + |x| * erf(|x|/sqrt 2)) / 2,
    which needs no sign. In place because the intermediate arrays of a batch of tool texts
    (32 x 256 tokens x 1,536) are 50 MB each: the allocations cost as much as the arithmetic.
    """
    a = np.abs(x)
    z = a * _SQRT_HALF
    t = z * _ERF_P
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _ERF_A[0]
    for c in _ERF_A[1:]:
        poly += c
        poly *= t
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z                        # 1 - erf(|x| / sqrt 2)
    np.subtract(1.0, poly, out=poly)
    poly *= a
    x += poly
    x *= 0.5
    return x


def _layer_norm_(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """Layer normalisation over the last axis, in place (x is overwritten and returned)."""
    x -= x.mean(-1, keepdims=True)
    var = np.einsum("...i,...i->...", x, x)[..., None]
    var /= np.float32(x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= w
    x += b
    return x


def _widened(w: np.ndarray) -> np.ndarray:
    """A bfloat16 matrix (uint16: the upper half of each float32) as float32 (a new array: at most
    2.4 MB, freed once used; a buffer kept per thread would stay resident in every worker thread
    that ever searched)."""
    wide = w.astype(np.uint32)
    wide <<= np.uint32(16)
    return wide.view(np.float32)


def _dense(x: np.ndarray, layer: dict[str, np.ndarray], name: str, packed: Packed | None = None) -> np.ndarray:
    """`x @ W + b` for one of a layer's linear maps. A packed W is bfloat16 (uint16: the upper
    half of a float32), widened as it is used (`_widened`), its mapped pages dropped from this
    process once widened."""
    w = layer[f"{name}_w"]
    if w.dtype == np.uint16:
        wide = _widened(w)
        if packed is not None:
            packed.drop(w)
        y: np.ndarray = x @ wide
    else:
        y = x @ w
    y += layer[f"{name}_b"]
    return y


class MiniLM:
    """The encoder; `embed(texts)` returns L2-normalised float32 vectors, one row per text."""

    def __init__(self, model_dir: Path, packed: Packed | None = None) -> None:
        """The model in `model_dir`, computing with `packed`'s mapped int8/float16 weights when
        given (what `vectors.load_model` does), else with its float32 weights read into memory."""
        config: dict[str, Any] = packed.config if packed is not None else json.loads(
            (model_dir / "config.json").read_text(encoding="utf-8"))
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = WordPiece(model_dir / "vocab.txt")
        self.packed = packed
        self.layers: list[dict[str, np.ndarray]]
        if packed is not None:
            t = packed.tensors
            self.word, self.pos, self.type0 = t["word"], t["pos"], t["type0"]
            self.emb_ln = (t["emb_ln_w"], t["emb_ln_b"])
            self.layers = [{k.split(".", 1)[1]: v for k, v in t.items() if k.startswith(f"{i}.")}
                           for i in range(int(config["num_hidden_layers"]))]
            return
        # The word-embedding table is half the model (30,522 x 384) and only ever indexed: kept
        # as float16 (rows widened on lookup), it costs half the memory, for cosines >= 0.99999.
        words = "embeddings.word_embeddings.weight"
        t = read_safetensors(model_dir / "model.safetensors", frozenset({words, f"bert.{words}"}))
        t = {k.removeprefix("bert."): v for k, v in t.items()}
        self.word = t.pop(words)
        self.pos = t["embeddings.position_embeddings.weight"]
        self.type0 = t["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        # Linear weights as (in, out), C-contiguous: `h @ w` on them is 15-40 % faster than on the
        # stored (out, in) layout's transpose view. Transposed one tensor at a time (`pop`), so
        # loading never holds two copies of the model.
        def linear(name: str) -> np.ndarray:
            return np.ascontiguousarray(t.pop(name).T)

        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([t.pop(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")])
            self.layers.append({
                "qkv_w": np.ascontiguousarray(qkv.T),
                "qkv_b": np.concatenate([t[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]),
                "ao_w": linear(p + "attention.output.dense.weight"),
                "ao_b": t[p + "attention.output.dense.bias"],
                "ln1_w": t[p + "attention.output.LayerNorm.weight"],
                "ln1_b": t[p + "attention.output.LayerNorm.bias"],
                "i_w": linear(p + "intermediate.dense.weight"),
                "i_b": t[p + "intermediate.dense.bias"],
                "o_w": linear(p + "output.dense.weight"),
                "o_b": t[p + "output.dense.bias"],
                "ln2_w": t[p + "output.LayerNorm.weight"],
                "ln2_b": t[p + "output.LayerNorm.bias"],
            })

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        h = (self.word[ids] if self.packed is None else self.packed.rows(self.word, ids)).astype(np.float32)
        h += self.pos[:length]
        h += self.type0
        h = _layer_norm_(h, *self.emb_ln, self.eps)
        if self.packed is not None:
            self.packed.release(0)
        hd = self.dim // self.heads
        # A single query (or a batch of equal lengths) has no padding to mask.
        bias = None if bool(mask.all()) else ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(hd))
        for i, L in enumerate(self.layers):
            qkv = _dense(h, L, "qkv", self.packed)
            qkv = qkv.reshape(batch, length, 3, self.heads, hd).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            if bias is not None:
                scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.dim)
            x = _dense(ctx, L, "ao", self.packed)
            x += h
            h = _layer_norm_(x, L["ln1_w"], L["ln1_b"], self.eps)
            x = _dense(_gelu_(_dense(h, L, "i", self.packed)), L, "o", self.packed)
            x += h
            h = _layer_norm_(x, L["ln2_w"], L["ln2_b"], self.eps)
            if self.packed is not None:
                self.packed.release(i + 1)
        m = mask[:, :, None]
        pooled = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        unit: np.ndarray = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return unit

    def _batches(self, order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
        """`order` (by length) cut into batches of at most `batch_size` texts whose largest
        intermediate arrays (the attention scores and the feed-forward layer's output, per text
        `heads x L x L` and `L x 4 dim` floats) stay within BATCH_BYTES: 32 texts of 256 tokens
        made arrays of 100 MB each, and a gateway embedding its tools peaked 80 MB higher."""
        out: list[list[int]] = []
        for i in order:
            length = lengths[i]
            per_text = 4 * (self.heads * length * length + 4 * self.dim * length)
            if out and len(out[-1]) < batch_size and (len(out[-1]) + 1) * per_text <= BATCH_BYTES:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        encoded = [self.tokenizer.encode(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Batches of similar length waste little on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for idx in self._batches(order, [len(e) for e in encoded], batch_size):
            length = max(len(encoded[i]) for i in idx)
            ids = np.zeros((len(idx), length), dtype=np.int64)
            mask = np.zeros((len(idx), length), dtype=np.float32)
            for row, i in enumerate(idx):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1.0
            out[idx] = self._forward(ids, mask)
        return out
