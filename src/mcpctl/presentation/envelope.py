"""The response envelope of each protocol era, in one place (no `mcp`).

A result leaves the gateway shaped for the era of the session that asked: 2026-07-28 requires
`resultType` and carries the gateway's `serverInfo` stamp in `_meta`; the handshake era has
neither, nor the 2026 cache hints. An upstream's own stamp never passes through: the client talks
to mcpctl. Callers say which era a session speaks (`modern`); deciding that from a protocol
version is the SDK's business (`mcp.types.version.MODERN_PROTOCOL_VERSIONS`).
"""

from __future__ import annotations

from typing import Any, Final

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
LEGACY_ONLY_DROP: Final = ("resultType", "ttlMs", "cacheScope")   # 2026-only result fields
INPUT_REQUIRED: Final = "input_required"


def envelope(result: dict[str, Any], modern: bool, stamp: dict[str, Any]) -> dict[str, Any]:
    """A result of the lean path (tools/call, tools/list) for its era, in place."""
    if modern:
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        result["_meta"] = {**meta, SERVER_INFO_KEY: stamp} if isinstance(meta, dict) else {SERVER_INFO_KEY: stamp}
    else:
        for key in LEGACY_ONLY_DROP:
            result.pop(key, None)
    return result


def era(result: dict[str, Any], modern: bool) -> dict[str, Any]:
    """A result of an ordinary handler (the SDK adds the stamp): 2026 requires `resultType`."""
    if modern:
        result.setdefault("resultType", "complete")
    return result


def relayed(result: dict[str, Any]) -> dict[str, Any]:
    """An upstream's answer to a relayed request, era-neutral: its stamp gone and, unless it asks
    for input, the 2026-only fields (the session's own era adds what it needs), in place."""
    strip_upstream_meta(result)
    if result.get("resultType") != INPUT_REQUIRED:
        for key in LEGACY_ONLY_DROP:
            result.pop(key, None)
    return result


def strip_upstream_meta(result: dict[str, Any]) -> None:
    """Drop the upstream's `serverInfo` stamp (and `_meta` when nothing else is left), in place."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_KEY}
        if rest:
            result["_meta"] = rest
        else:
            del result["_meta"]


# -- a request again, with a client's input (2026-07-28 input-required results) ----------------


def retry_params(params: dict[str, Any], answers: dict[str, Any], state: str | None) -> dict[str, Any]:
    """A request again, with the client's answers to an upstream's input-required result."""
    again = {**params, "inputResponses": answers}
    if state is not None:
        again["requestState"] = state
    else:
        again.pop("requestState", None)
    return again


def mrtr_params(fwd: dict[str, Any], params: Any) -> dict[str, Any]:
    """A 2026 retry's `inputResponses` and `requestState` (typed request params), carried on."""
    responses, state = getattr(params, "input_responses", None), getattr(params, "request_state", None)
    if responses is not None:
        fwd["inputResponses"] = {k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                                 if hasattr(v, "model_dump") else v for k, v in responses.items()}
    if state is not None:
        fwd["requestState"] = state
    return fwd
