"""A request forwarded between replicas carries `x-mcpctl-hop: FROM:TO:TS:MAC`, the HMAC-SHA256
under the cluster's secret (`schema`: `cluster_secret`) of who sent it, to whom, when, and what it
is (method, path, session id, a digest of the body). Only a replica that read the secret from the
database can make one; a receiving replica refuses (403) a hop header that is not its own, too old
or does not verify, and never forwards a forwarded request again (no loops).

What a hop does not carry is authority: the forwarded request keeps the client's own
`Authorization` and `Host`, and the owner checks them as it checks any request.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Final

HEADER: Final = b"x-mcpctl-hop"
MAX_AGE_S: Final = 30.0


def _mac(secret: bytes, parts: tuple[bytes, ...]) -> str:
    return hmac.new(secret, b"\x00".join(parts), hashlib.sha256).hexdigest()


def _parts(source: str, target: str, ts: str, method: str, path: str, session: bytes, body: bytes
           ) -> tuple[bytes, ...]:
    return (source.encode(), target.encode(), ts.encode(), method.encode(), path.encode(), session,
            hashlib.sha256(body).digest())


def sign(secret: bytes, source: str, target: str, method: str, path: str, session: bytes, body: bytes,
         now: float | None = None) -> bytes:
    """The hop header's value for a request from replica `source` to replica `target`."""
    ts = str(int(time.time() if now is None else now))
    mac = _mac(secret, _parts(source, target, ts, method, path, session, body))
    return f"{source}:{target}:{ts}:{mac}".encode()


def verify(secret: bytes, value: bytes, own: str, method: str, path: str, session: bytes, body: bytes,
           now: float | None = None) -> bool:
    """Whether `value` is a hop header made with `secret` for this request, to replica `own`, lately."""
    try:
        source, target, ts, mac = value.decode("ascii").split(":")
        age = (time.time() if now is None else now) - int(ts)
    except ValueError:
        return False
    if target != own or not -MAX_AGE_S <= age <= MAX_AGE_S:
        return False
    return hmac.compare_digest(mac, _mac(secret, _parts(source, target, ts, method, path, session, body)))
