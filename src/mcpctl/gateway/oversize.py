"""One stdio message over the front's limit: refused with a JSON-RPC error, never read whole.

Over HTTP the SDK refuses a body over 4 MiB (413) before parsing it; over stdio a line had no
bound, and a 100 MB argument took the gateway to 658 MB and two minutes. The stdio fronts (the
early one and the gateway's own, `stdio_pipes`) now read a line past `MAX_MESSAGE_BYTES` in
chunks, keeping only its first and last `KEEP` bytes, and answer it here: a request gets an error
under its own id (found in those bytes when it is a top-level member, where JSON-RPC clients put
it: first, as the Python SDK does, or last, as the TypeScript SDK does), anything else (a response,
a notification, an id not found) is dropped with one warning. No `mcp` import.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024     # the SDK's limit on an HTTP request body
KEEP: Final = 4096                            # bytes kept of each end of a line over the limit
INVALID_REQUEST: Final = -32600

_STR: Final = rb'"(?:[^"\\]|\\.){0,256}"'
_VALUE: Final = rb"(-?\d{1,20}|" + _STR + rb")"
_MEMBER: Final = rb'"(?:jsonrpc|method)"\s*:\s*' + _STR
# the id as a top-level member: before any member other than jsonrpc/method at the start, or after
# the last member other than those at the end (an inner object's "id" is followed by more closing brackets)
_HEAD_ID: Final = re.compile(rb"\A\s*\{\s*(?:" + _MEMBER + rb"\s*,\s*){0,2}\"id\"\s*:\s*" + _VALUE)
_TAIL_ID: Final = re.compile(rb'[{,]\s*"id"\s*:\s*' + _VALUE + rb"\s*(?:,\s*" + _MEMBER + rb"\s*){0,2}\}\s*\Z")
_HEAD_METHOD: Final = re.compile(rb'\A\s*\{\s*(?:"(?:jsonrpc|id)"\s*:\s*(?:-?\d{1,20}|' + _STR +
                                 rb')\s*,\s*){0,2}"method"\s*:\s*(' + _STR + rb")")
_TAIL_METHOD: Final = re.compile(rb'[{,]\s*"method"\s*:\s*(' + _STR + rb')\s*(?:,\s*"(?:jsonrpc|id)"\s*:\s*'
                                 rb"(?:-?\d{1,20}|" + _STR + rb")\s*){0,2}\}\s*\Z")


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def request_of(head: bytes, tail: bytes) -> tuple[Any, str | None]:
    """(id, method) of a message from its first and last bytes; None where not found."""
    rid = None
    for pattern, text in ((_HEAD_ID, head), (_TAIL_ID, tail)):
        m = pattern.search(text)
        if m is not None:
            rid = _decode(m.group(1))
            break
    method = None
    for pattern, text in ((_HEAD_METHOD, head), (_TAIL_METHOD, tail)):
        m = pattern.search(text)
        if m is not None:
            found = _decode(m.group(1))
            method = found if isinstance(found, str) else None
            break
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        rid = None
    return rid, method


def refusal(size: int, head: bytes, tail: bytes) -> tuple[bytes | None, str]:
    """(the error line to send, or None; what to log) for a message of `size` bytes."""
    rid, method = request_of(head, tail)
    what = f"{method} request" if method else "message"
    note = (f"stdio: a {what} of {size:,} bytes refused: over the {MAX_MESSAGE_BYTES:,}-byte limit of one "
            "message (as over HTTP)")
    if rid is None or method is None:
        return None, note + ("" if rid is None else f" (id {rid!r}: not a request, nothing to answer)")
    error = {"code": INVALID_REQUEST, "message": (
        f"Request too large: {size:,} bytes, over mcpctl's limit of {MAX_MESSAGE_BYTES:,} bytes for one "
        "message (the same as over HTTP); pass large data another way (a file path, a URL or a resource)")}
    line = json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}, separators=(",", ":")).encode() + b"\n"
    return line, note + f" (id {rid!r})"
