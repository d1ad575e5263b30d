"""Remote sign-in (DESIGN §10): OAuth 2.1 + PKCE through the SDK's own client.

- `storage`: tokens and the registered client at rest, one 0600 file per server under the
  state directory; what `get -o wide`, `describe` and `doctor` show (state, expiry, never a
  token). No `mcp` import: the CLI reads it on every listing.
- `expiry`: which servers' sign-in lapsed in this gateway process, and the cheap watch for the
  new token file a `mcpctl login` writes (no `mcp` import).
- `provider`: the SDK's `OAuthClientProvider` as the gateway and `login` use it (imports `mcp`).
- `mcpctl login` itself (the loopback redirect, the browser, the bounded wait) is `upstream.login`:
  it starts as an ordinary request to the server, which is `upstream`'s, a floor above this one.
"""
