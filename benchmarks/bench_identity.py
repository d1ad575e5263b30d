"""What a team's identity provider costs a request of the HTTP front (issue 35; not a test).

    .venv/bin/python benchmarks/bench_identity.py [--rounds 7] [--n 2000]

In this process, with the issuer's keys already fetched (a JWKS served on loopback once):

  1. verify: a JWT never seen before checked in full (`Identities.authenticate`: header and
     claims read, PyJWT's RS256 and ES256 signature checks, iss/aud/exp/nbf/sub, groups to a
     profile), per token;
  2. cached: the bearer check of a request of a person already signed in
     (`BearerAuth.credential`: the token's SHA-256 looked up), per request;
  3. static: the bearer check of the project's own token and of a `Token`, with an identity
     provider configured and without (the call path of a gateway with no identity provider is
     the `without` column; paired rounds, the ratio is the median of per-round ratios).

Medians over `--rounds` rounds of `--n` operations each; CPU time (process_time), so a loaded
machine inflates wall time but not these figures much.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcpctl.auth.bearer import BearerAuth
from mcpctl.auth.identity import Identities
from mcpctl.resources.idp import IdentityProviderSpec
from mcpctl.resources.memstore import MemoryStore
from mcpctl.resources.tokens import TokenIndex, new_secret, write_hash

RESOURCE = "http://127.0.0.1:9/mcp"


def _jwks_server(keys: dict[str, Any]) -> tuple[ThreadingHTTPServer, str]:
    import json

    doc = json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig"} for kid, jwk in keys.items()]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(doc)))
            self.end_headers()
            self.wfile.write(doc)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/jwks"


def _per_op(fn: Any, n: int) -> float:
    started = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - started) / n * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys = {"r1": jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key(), as_dict=True),
            "e1": jwt.algorithms.ECAlgorithm.to_jwk(ec_key.public_key(), as_dict=True)}
    server, jwks_uri = _jwks_server(keys)
    issuer = "http://127.0.0.1:1/"
    spec = IdentityProviderSpec.from_resource({"metadata": {"name": "acme"}, "spec": {
        "issuer": issuer, "jwksUri": jwks_uri, "projects": {"p": {"groups": {"eng": "all"}}}}})
    loop = asyncio.new_event_loop()

    def tokens(n: int, alg: str) -> list[str]:
        now = int(time.time())
        key, kid = (rsa_key, "r1") if alg == "RS256" else (ec_key, "e1")
        return [jwt.encode({"iss": issuer, "sub": f"u{i}", "aud": RESOURCE, "exp": now + 3600, "nbf": now,
                            "groups": ["eng"], "jti": str(i)}, key, algorithm=alg, headers={"kid": kid})
                for i in range(n)]

    store = MemoryStore()
    store.put({"apiVersion": "mcpctl/v1", "kind": "Token", "metadata": {"name": "narrow"},
               "spec": {"project": "p", "profile": "read-only"}})
    secret = new_secret()
    write_hash("narrow", secret, store)
    project_token = "t" * 43
    with_idp = Identities("p", [spec], RESOURCE)
    plain = BearerAuth(None, project_token, TokenIndex("p", store))      # type: ignore[arg-type]
    signed = BearerAuth(None, project_token, TokenIndex("p", store), lambda: with_idp)  # type: ignore[arg-type]
    signed.identities()
    rows: dict[str, list[float]] = {k: [] for k in ("verify RS256", "verify ES256", "cached person",
                                                     "project token", "project token, idp", "a Token",
                                                     "a Token, idp")}
    ratios: dict[str, list[float]] = {"project token": [], "a Token": []}
    loop.run_until_complete(with_idp.authenticate(tokens(1, "RS256")[0]))   # the keys fetched once
    for r in range(args.rounds):
        for alg in ("RS256", "ES256"):
            fresh = tokens(args.n, alg)
            rows[f"verify {alg}"].append(_per_op(lambda i, f=fresh: loop.run_until_complete(with_idp.authenticate(f[i])),
                                                 args.n))
        head = [(b"authorization", b"Bearer " + fresh[0].encode())]
        rows["cached person"].append(_per_op(lambda i, hh=head: signed.credential(hh), args.n * 5))
        for name, value in (("project token", project_token), ("a Token", secret)):
            h = [(b"authorization", f"Bearer {value}".encode())]
            pair = [(False, plain), (True, signed)] if r % 2 == 0 else [(True, signed), (False, plain)]
            got = {}
            for idp, auth in pair:
                got[idp] = _per_op(lambda i, a=auth, hh=h: a.credential(hh), args.n * 5)
            rows[name].append(got[False])
            rows[f"{name}, idp"].append(got[True])
            ratios[name].append(got[True] / got[False])
    server.shutdown()
    print(f"{'operation':<22} {'CPU ms (median of ' + str(args.rounds) + ' rounds)':>32}")
    for name, values in rows.items():
        print(f"{name:<22} {statistics.median(values):>32.4f}")
    for name, values in ratios.items():
        print(f"{name}: with an identity provider / without = {statistics.median(values):.3f}x "
              "(median of per-round ratios)")


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    main()
