"""The typed settings of a project's spec (`ProjectSpec`'s parts) and their defaults: the one
statement of each default, which the schema (`kinds.PROJECT_SPEC`) and these views share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

# results in sections: the default limit stays under Claude Code's 10,000-token warning with room
# for the note and for the estimator's error (docs/internals.md, "Results in sections")
DEFAULT_MAX_RESULT_TOKENS: Final = 8000
DEFAULT_KEEP_MEGABYTES: Final = 64
DEFAULT_KEEP_MINUTES: Final = 60
# ask (mcpctl.ask): passages of the upstreams' text resources, bounded in bytes of text indexed
# (docs/ask.md: 4 MiB of text is ~6,500 passages, ~100 MB of resident memory with the BM25F index
# and vectors, measured with benchmarks/bench_ask.py)
DEFAULT_ASK_TOP_K: Final = 5
DEFAULT_ASK_MAX_BYTES: Final = 4 * 2**20
DEFAULT_ASK_REFRESH_SECONDS: Final = 300
# search.learn (catalogue.learn): the window of the log learned from, and how many distinct sessions
# must have searched and then called a tool before its evidence counts.
DEFAULT_LEARN_WINDOW_DAYS: Final = 30
DEFAULT_LEARN_MIN_SESSIONS: Final = 2
# search: on, the top 5, queries not recorded unless the project opts in (they are arguments).
DEFAULT_SEARCH_ENABLED: Final = True
DEFAULT_SEARCH_TOP_K: Final = 5
DEFAULT_RECORD_QUERIES: Final = False
# search.ranker: auto is hybrid when the embedding model loads, else bm25 (docs/ranking.md).
RANKERS: Final = ("auto", "bm25", "semantic", "hybrid")
DEFAULT_RANKER: Final = "auto"
# names.maxLength: the longest presented name (presentation.names).
DEFAULT_NAME_MAX_LENGTH: Final = 48


@dataclass(frozen=True)
class GateSettings:
    enabled: bool = False
    instructions: str | None = None


# Except the ranker: the schema's default is auto (what every project made by apply or create
# holds, and what the docs say), but a spec that leaves search.ranker out reads as bm25, the
# keyword ranker without the model. The tests rely on it (tests/cli/test_tools_search.py puts
# projects in the store without search, and expects the bm25 ranker), so it is kept, named here.
RANKER_WHEN_UNSET: Final = "bm25"


@dataclass(frozen=True)
class LearnSettings:
    """`search.learn`: whether search learns from the log, over which window, from how many
    distinct sessions a tool's evidence counts (`catalogue.learn`)."""

    enabled: bool | None = None          # None: as recordQueries
    window_days: int = DEFAULT_LEARN_WINDOW_DAYS
    min_sessions: int = DEFAULT_LEARN_MIN_SESSIONS

    @classmethod
    def from_spec(cls, learn: Mapping[str, Any]) -> LearnSettings:
        enabled = learn.get("enabled")
        return cls(enabled if isinstance(enabled, bool) else None,
                   int(learn.get("windowDays", DEFAULT_LEARN_WINDOW_DAYS)),
                   int(learn.get("minSessions", DEFAULT_LEARN_MIN_SESSIONS)))


@dataclass(frozen=True)
class SearchSettings:
    enabled: bool = DEFAULT_SEARCH_ENABLED
    ranker: str = RANKER_WHEN_UNSET
    top_k: int = DEFAULT_SEARCH_TOP_K
    record_queries: bool = DEFAULT_RECORD_QUERIES
    learn: LearnSettings = LearnSettings()

    @property
    def learns(self) -> bool:
        """Whether search learns from the log: `learn.enabled`, else where queries are recorded
        (without recorded queries there is nothing to learn from)."""
        enabled = self.learn.enabled if self.learn.enabled is not None else self.record_queries
        return enabled and self.record_queries


@dataclass(frozen=True)
class ResultSettings:
    max_tokens: int = DEFAULT_MAX_RESULT_TOKENS
    keep_megabytes: int = DEFAULT_KEEP_MEGABYTES
    keep_minutes: int = DEFAULT_KEEP_MINUTES


@dataclass(frozen=True)
class AskModel:
    """`ask.model`: the project's own model, an OpenAI-compatible chat-completions endpoint (its
    base URL ending in /v1) and model name, which answers every ask whatever the client lends.
    `api_key` is the secret reference as written (`${env:NAME}` or `${file:PATH}`), resolved only
    when a question is asked (`mcpctl.resources.secrets`), so the store holds no secret."""

    endpoint: str
    model: str
    api_key: str | None = None

    @classmethod
    def from_spec(cls, model: Mapping[str, Any] | None) -> AskModel | None:
        if not model or not model.get("endpoint") or not model.get("model"):
            return None
        key = model.get("apiKey")
        return cls(str(model["endpoint"]), str(model["model"]), str(key) if key else None)


@dataclass(frozen=True)
class AskSettings:
    enabled: bool = False
    top_k: int = DEFAULT_ASK_TOP_K
    max_bytes: int = DEFAULT_ASK_MAX_BYTES
    refresh_seconds: int = DEFAULT_ASK_REFRESH_SECONDS
    model: AskModel | None = None        # None: the client's sampling, if it lends it

    @classmethod
    def from_spec(cls, ask: dict[str, Any]) -> AskSettings:
        return cls(bool(ask.get("enabled", False)), int(ask.get("topK", DEFAULT_ASK_TOP_K)),
                   int(ask.get("maxBytes", DEFAULT_ASK_MAX_BYTES)),
                   int(ask.get("refreshSeconds", DEFAULT_ASK_REFRESH_SECONDS)),
                   AskModel.from_spec(ask.get("model")))


@dataclass(frozen=True)
class NameSettings:
    style: str = "portable"
    max_length: int = DEFAULT_NAME_MAX_LENGTH
