"""The semantic path: the numpy MiniLM port on a tiny random model, fusion, and the vector cache.

Runs only where numpy is installed (the `semantic` extra); the real-weights test runs only
where a package shipping all-MiniLM-L6-v2 is installed too.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ci_support import SLACK, skip_unless_ci

try:
    import numpy as np
except ModuleNotFoundError:
    skip_unless_ci("numpy is not installed (pip install 'mcpctl[semantic]')")

from mcpctl.catalogue import rank, semantic, vectors
from mcpctl.catalogue.minilm import MiniLM, WordPiece, read_safetensors
from mcpctl.catalogue.rank import LexicalRanker, ToolDoc, build_ranker

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "read", "file", "##s", "weather", "forecast",
         "the", "city", ",", "!", "cafe", "北", "京", "send", "message", "a", "to"]
HIDDEN, HEADS, INTER, LAYERS = 16, 2, 32, 2


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, arr in tensors.items():
        data = arr.tobytes()
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}[arr.dtype]
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


@pytest.fixture
def tiny_model(tmp_path: Path) -> Path:
    return make_tiny_model(tmp_path)


def make_tiny_model(tmp_path: Path) -> Path:
    """A random 2-layer BERT with the model files' layout, under `tmp_path`."""
    rng = np.random.default_rng(7)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    t = {
        "embeddings.position_ids": np.arange(64, dtype=np.int64)[None],
        "embeddings.word_embeddings.weight": w(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": w(64, HIDDEN),
        "embeddings.token_type_embeddings.weight": w(2, HIDDEN),
        "embeddings.LayerNorm.weight": np.ones(HIDDEN, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(HIDDEN, np.float32),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            t[p + f"attention.self.{n}.weight"] = w(HIDDEN, HIDDEN)
            t[p + f"attention.self.{n}.bias"] = w(HIDDEN)
        t[p + "attention.output.dense.weight"] = w(HIDDEN, HIDDEN)
        t[p + "attention.output.dense.bias"] = w(HIDDEN)
        t[p + "attention.output.LayerNorm.weight"] = np.ones(HIDDEN, np.float32)
        t[p + "attention.output.LayerNorm.bias"] = np.zeros(HIDDEN, np.float32)
        t[p + "intermediate.dense.weight"] = w(INTER, HIDDEN).astype(np.float16)   # fp16 is read too
        t[p + "intermediate.dense.bias"] = w(INTER)
        t[p + "output.dense.weight"] = w(HIDDEN, INTER)
        t[p + "output.dense.bias"] = w(HIDDEN)
        t[p + "output.LayerNorm.weight"] = np.ones(HIDDEN, np.float32)
        t[p + "output.LayerNorm.bias"] = np.zeros(HIDDEN, np.float32)
    d = tmp_path / "tiny-minilm"
    d.mkdir()
    _write_safetensors(d / "model.safetensors", t)
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (d / "config.json").write_text(json.dumps({
        "hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "layer_norm_eps": 1e-12}), encoding="utf-8")
    return d


@pytest.fixture
def use_tiny_model(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vectors, "find_model_dir", lambda: tiny_model)
    monkeypatch.setattr(vectors, "_model", None)
    monkeypatch.setattr(vectors, "_model_key", "")
    return tiny_model


def test_wordpiece_follows_bert_uncased_basic_tokenisation(tiny_model: Path) -> None:
    tok = WordPiece(tiny_model / "vocab.txt")
    v = {t: i for i, t in enumerate(VOCAB)}
    assert tok.encode("Read FILES, Café!") == [v["[CLS]"], v["read"], v["file"], v["##s"], v[","], v["cafe"],
                                              v["!"], v["[SEP]"]]
    assert tok.encode("北京") == [v["[CLS]"], v["北"], v["京"], v["[SEP]"]]
    assert tok.encode("zebra") == [v["[CLS]"], v["[UNK]"], v["[SEP]"]]
    assert len(tok.encode("file " * 500, max_tokens=10)) == 10


def test_read_safetensors_round_trips_and_widens_fp16(tiny_model: Path) -> None:
    t = read_safetensors(tiny_model / "model.safetensors")
    assert t["encoder.layer.0.intermediate.dense.weight"].dtype == np.float32
    assert t["embeddings.position_ids"].dtype == np.int64
    assert t["embeddings.word_embeddings.weight"].shape == (len(VOCAB), HIDDEN)


def test_embeddings_are_unit_length_and_independent_of_padding(tiny_model: Path) -> None:
    model = MiniLM(tiny_model)
    alone = model.embed(["read the file"])
    batch = model.embed(["send a message to the city , weather forecast", "read the file"])
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.allclose(alone[0], batch[1], atol=1e-5)      # padding is masked out
    assert not np.allclose(batch[0], batch[1])


def _textbook_bert(tensors: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT as the papers write it, one token sequence, float64, exact erf: what MiniLM's fused,
    in-place forward pass must reproduce."""
    import math

    t = {k: v.astype(np.float64) for k, v in tensors.items()}

    def norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w + b

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    n = len(ids)
    h = norm(t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n]
             + t["embeddings.token_type_embeddings.weight"][0],
             t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
    hd = HIDDEN // HEADS
    gelu = np.vectorize(lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(h, p + f"attention.self.{x}") for x in ("query", "key", "value"))
        heads = []
        for j in range(HEADS):
            s = slice(j * hd, (j + 1) * hd)
            a = q[:, s] @ k[:, s].T / math.sqrt(hd)
            a = np.exp(a - a.max(-1, keepdims=True))
            heads.append((a / a.sum(-1, keepdims=True)) @ v[:, s])
        h = norm(h + dense(np.concatenate(heads, -1), p + "attention.output.dense"),
                 t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
        h = norm(h + dense(gelu(dense(h, p + "intermediate.dense")), p + "output.dense"),
                 t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
    pooled = h.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_forward_pass_matches_textbook_bert_alone_and_padded_in_a_batch(tiny_model: Path) -> None:
    model = MiniLM(tiny_model)
    tensors = read_safetensors(tiny_model / "model.safetensors")
    texts = ["read the file", "send a message to the city , weather forecast !", "北京 cafe"]
    batch = model.embed(texts)          # padded to the longest, masked
    for text, got in zip(texts, batch, strict=True):
        want = _textbook_bert(tensors, model.tokenizer.encode(text))
        assert float(got @ want) > 0.99999
        assert np.abs(got - want).max() < 1e-3
        assert np.allclose(model.embed([text])[0], got, atol=1e-5)


def test_gelu_is_exact_to_float32_precision() -> None:
    import math

    from mcpctl.catalogue.minilm import _gelu_

    x = np.linspace(-8, 8, 2001, dtype=np.float32)
    want = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(np.float64)])
    got = _gelu_(x.copy())
    assert np.abs(got - want).max() < 1e-5


DOCS = [
    ToolDoc("fs/read_file", "fs", "read_file", "Read the file", {"properties": {"path": {}}}),
    ToolDoc("wx/forecast", "wx", "forecast", "Weather forecast for the city"),
    ToolDoc("chat/send", "chat", "send", "Send a message"),
]


def test_vectors_cached_where_earlier_versions_kept_them_are_moved_beside_the_catalogue_and_reused(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_home: Path
) -> None:
    build_ranker(DOCS, "hybrid")
    new_dir = tmp_home / "state" / "catalogue" / "embeddings"
    (kept,) = new_dir.glob("*.npz")
    old_dir = tmp_home / "state" / "embeddings"
    old_dir.mkdir(parents=True)
    kept.rename(old_dir / kept.name)                  # as an earlier mcpctl left it
    calls: list[int] = []
    original = MiniLM.embed
    monkeypatch.setattr(MiniLM, "embed", lambda self, texts, **kw: calls.append(len(texts)) or original(self, texts))
    build_ranker(DOCS, "hybrid")
    assert calls == [] and (new_dir / kept.name).is_file() and not (old_dir / kept.name).exists()


def test_build_ranker_hybrid_uses_the_model_and_caches_tool_vectors(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_home: Path
) -> None:
    ranker = build_ranker(DOCS, "hybrid")
    assert isinstance(ranker, semantic.HybridRanker) and ranker.kind == "hybrid"
    hits = ranker.search("weather forecast", 3)
    assert hits[0][0] == "wx/forecast"
    assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    assert list((tmp_home / "state" / "catalogue" / "embeddings").glob("*.npz"))
    # A second build over the same catalogue embeds no tool text again.
    calls: list[int] = []
    original = MiniLM.embed
    monkeypatch.setattr(MiniLM, "embed", lambda self, texts, **kw: calls.append(len(texts)) or original(self, texts))
    again = build_ranker(DOCS, "semantic")
    assert calls == []
    assert np.allclose(again.vectors, ranker.vectors, atol=1e-3)   # stored as float16


def test_lexical_weight_one_ranks_like_bm25(use_tiny_model: Path) -> None:
    hybrid = semantic.HybridRanker(DOCS, lexical_weight=1.0)
    lexical = LexicalRanker(DOCS)
    assert [i for i, _ in hybrid.search("read file", 1)] == [i for i, _ in lexical.search("read file", 1)]
    assert hybrid.search("read", 0) == []


def test_tool_text_reads_the_name_as_words_and_names_the_parameters() -> None:
    assert semantic.tool_text(DOCS[0]) == "read file (fs): Read the file Parameters: path."
    assert semantic.tool_text(DOCS[1]) == "forecast (wx): Weather forecast for the city"
    assert semantic.tool_text(DOCS[0], with_server=False) == "read file: Read the file Parameters: path."
    doc = ToolDoc("gh/getPullRequest", "gh", "getPullRequest", "Get a PR",
                  {"properties": {"repo": {"description": "owner/name"}, "number": {"type": "integer"}}})
    assert semantic.tool_text(doc) == "get Pull Request (gh): Get a PR Parameters: repo, number. owner/name"
    assert semantic.readable("getHTTPResponse") == "get HTTP Response"
    assert semantic.readable("flights/list-in-boundary") == "flights list in boundary"


def test_a_corrupt_weights_file_falls_back_to_bm25(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tiny_model / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    monkeypatch.setattr(vectors, "find_model_dir", lambda: tiny_model)
    monkeypatch.setattr(vectors, "_model", None)
    monkeypatch.setattr(vectors, "_model_key", "")
    monkeypatch.setattr(rank, "_warned", set())
    assert isinstance(build_ranker(DOCS, "hybrid"), LexicalRanker)
    assert "could not load its model" in caplog.text


def test_real_minilm_when_installed() -> None:
    try:
        model_dir = semantic.find_model_dir()
    except ModuleNotFoundError:
        skip_unless_ci("no package shipping all-MiniLM-L6-v2 is installed")
    model = MiniLM(model_dir)
    v = model.embed(["Get the weather forecast for a city", "What will the weather be tomorrow?",
                     "Delete a git branch"])
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_without_waiting_a_cold_catalogue_answers_lexically_then_fuses(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    gate = threading.Event()
    original = MiniLM.embed

    def slow_embed(self: MiniLM, texts: list[str], **kw: object) -> np.ndarray:
        if len(texts) > 1:          # the tool texts, not a query
            assert gate.wait(5 * SLACK)
        return original(self, texts)

    monkeypatch.setattr(MiniLM, "embed", slow_embed)
    ranker = build_ranker(DOCS, "hybrid", wait=False)
    assert not ranker.ready
    assert ranker.search("read file", 3) == LexicalRanker(DOCS).search("read file", 3)
    gate.set()
    assert ranker.wait_ready(5)
    assert len(ranker.search("read file", 3)) == 3
    # Now cached: a new ranker is ready at once, without a thread.
    assert build_ranker(DOCS, "hybrid", wait=False).ready


def test_vector_cache_round_trips_keys_ending_in_nul_bytes(tmp_path: Path) -> None:
    cache = semantic.VectorCache("m", tmp_path)
    entries = {b"\x01" * 15 + b"\x00": np.ones(4, np.float16), b"\x00" * 16: np.zeros(4, np.float16),
               b"ab" * 8: np.full(4, 0.5, np.float16)}
    cache.save(entries)
    loaded = cache.load()
    assert set(loaded) == set(entries)
    assert all(np.array_equal(loaded[k], v) for k, v in entries.items())
    (tmp_path / "m.npz").write_bytes(b"garbage")
    assert cache.load() == {}


def test_auto_picks_the_hybrid_ranker_when_the_model_loads(use_tiny_model: Path) -> None:
    ranker = build_ranker(DOCS)                     # auto, the default
    assert isinstance(ranker, semantic.HybridRanker) and ranker.kind == "hybrid"
    assert rank.describe(ranker, "auto") == "auto: hybrid" and rank.label(ranker, "auto") == "auto->hybrid"
    assert rank.semantic_status() == (True, f"{semantic.MODEL_NAME} loaded")


def test_when_the_lexical_pass_finds_nothing_the_semantic_pass_still_answers(use_tiny_model: Path) -> None:
    assert LexicalRanker(DOCS).search("zebra", 3) == []
    hits = build_ranker(DOCS, "hybrid").search("zebra", 2)
    assert len(hits) == 2 and all(i in {d.id for d in DOCS} for i, _ in hits)


def test_a_cold_catalogue_waits_for_its_vectors_rather_than_answer_nothing(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    started, gate = threading.Event(), threading.Event()
    original = MiniLM.embed

    def slow_embed(self: MiniLM, texts: list[str], **kw: object) -> np.ndarray:
        if len(texts) > 1:
            started.set()
            assert gate.wait(5 * SLACK)
        return original(self, texts)

    monkeypatch.setattr(MiniLM, "embed", slow_embed)
    ranker = build_ranker(DOCS, "auto", wait=False)
    assert started.wait(5 * SLACK) and not ranker.ready
    assert ranker.search("read file", 3) == LexicalRanker(DOCS).search("read file", 3)   # lexical meanwhile
    threading.Timer(0.2, gate.set).start()
    assert len(ranker.search("zebra", 2)) == 2       # nothing lexical: waited for the vectors
    assert ranker.ready


def test_query_vectors_are_cached_across_rankers(use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    semantic.query_vectors.clear()
    first = build_ranker(DOCS, "hybrid")
    first.search("weather in the city", 1)
    calls: list[list[str]] = []
    original = MiniLM.embed
    monkeypatch.setattr(MiniLM, "embed", lambda self, texts, **kw: calls.append(list(texts)) or original(self, texts))
    rebuilt = build_ranker([*DOCS, ToolDoc("x/y", "x", "y", "Send a forecast")], "hybrid")   # catalogue changed
    assert calls == [["y (x): Send a forecast"]]               # the new tool alone, no query
    calls.clear()
    rebuilt.search("weather in the city", 1)
    first.search("weather in the city", 2)
    assert calls == []
    assert semantic.query_vectors.hits >= 2


def test_the_servers_own_text_is_embedded_and_weighted(use_tiny_model: Path) -> None:
    docs = [ToolDoc("a/t1", "a", "t1", "read the file", {}, "weather forecast for the city"),
            ToolDoc("b/t2", "b", "t2", "read the file", {})]
    assert semantic.server_text(docs[0]) == "a: weather forecast for the city"
    assert semantic.server_text(docs[1]) == "b"
    plain = semantic.HybridRanker(docs, about_weight=0.0)
    weighted = semantic.HybridRanker(docs, about_weight=1.0)
    assert plain.about_vectors is None and weighted.about_vectors is not None
    q = "weather forecast for the city"
    base = plain.semantic_scores(q, plain.vectors)
    boosted = weighted.semantic_scores(q, weighted.vectors)
    assert boosted[0] - boosted[1] > base[0] - base[1]      # the server that says "weather" gains


def test_word_embeddings_are_kept_in_half_precision(tiny_model: Path) -> None:
    model = MiniLM(tiny_model)
    assert model.word.dtype == np.float16
    wide = MiniLM(tiny_model)
    wide.word = wide.word.astype(np.float32)
    a, b = model.embed(["read the file"]), wide.embed(["read the file"])
    assert float(a[0] @ b[0]) > 0.9999


def test_a_closed_ranker_stops_embedding_after_its_chunk_and_keeps_what_it_computed(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway that stops (or whose catalogue changed) closes its ranker: the background
    embedding ends after the chunk it is on instead of embedding every tool, and a later ranker
    over the same tools embeds only the rest."""
    import threading

    chunk = semantic.EMBED_CHUNK
    docs = [ToolDoc(f"s/tool_{i}", "s", f"tool_{i}", f"does thing number {i} " + "and more " * (i % 7))
            for i in range(3 * chunk)]
    started, gate = threading.Event(), threading.Event()
    sizes: list[int] = []
    original = MiniLM.embed

    def gated_embed(self: MiniLM, texts: list[str], **kw: object) -> np.ndarray:
        if len(texts) > 1:          # tool texts, not a query
            sizes.append(len(texts))
            started.set()
            assert gate.wait(10 * SLACK)
        return original(self, texts)

    monkeypatch.setattr(MiniLM, "embed", gated_embed)
    ranker = build_ranker(docs, "hybrid", wait=False)
    assert ranker.pending == len(docs) and started.wait(10 * SLACK)      # the first chunk is being embedded
    ranker.close()
    gate.set()
    assert not ranker.wait_ready(10) and not ranker.warming     # ended, without vectors
    assert sizes == [chunk]
    assert ranker.search("thing number 5", 1)[0][0] == "s/tool_5"   # still answers, lexically
    _, key = semantic.load_model()
    texts = semantic.index_texts(docs)[0]
    assert semantic.uncached(key, texts) == len(docs) - chunk    # the finished chunk was kept
    sizes.clear()
    assert build_ranker(docs, "hybrid").ready
    assert sizes == [chunk, chunk]                              # only the rest embedded


def test_an_embedding_stopped_before_its_first_chunk_leaves_the_cache_file_alone(
    use_tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that answers keyword-only closes its ranker at once (`tools search` while another
    process embeds): its stopped embedding must not rewrite the whole vector cache for nothing."""
    import threading

    saved: list[int] = []
    monkeypatch.setattr(vectors.VectorCache, "save", lambda self, entries: saved.append(len(entries)))
    model, key = semantic.load_model()
    stop = threading.Event()
    stop.set()
    assert vectors.embed_texts(model, key, ["one text", "another"], stop=stop) is None
    assert saved == []
