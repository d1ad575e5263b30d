"""Any replica answers (issue 36): the replicas of one team's gateway on one PostgreSQL.

- `schema`: the component `cluster` of `mcpctl db migrate`: the replicas' registry, the cluster's
  hop secret, result sections and the gate's begun sessions;
- `registry.Registry`: this replica's id, the address other replicas reach it at, its heartbeat,
  and the live replicas (id -> address), kept in memory and refreshed with each heartbeat;
- `hop`: a request forwarded between replicas is signed with the cluster's secret (HMAC);
- `forward.Forwarder`: the ASGI layer that sends a request for a session (or a parked call) held
  by another live replica to it, streaming the answer back; a session whose replica is gone is
  answered 404, as the MCP spec says, so a handshake-era client starts a new session;
- `shared`: result sections (`read_result`) and the gate's begun sessions in PostgreSQL;
- `limits.SharedLimits`: per-person call limits shared by the replicas: each decides a call from
  its own buckets, and once a second publishes what it admitted and charges what the others did.

Only the gateway imports this package (docs/team.md, "Any replica answers").
"""
