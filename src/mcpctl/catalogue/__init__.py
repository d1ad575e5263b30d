"""The catalogue: what upstream tools exist and how they are found.

`cache` keeps each server's last listing, `curation` decides what a project enables, and `rank`
ranks tools for an intent (BM25F; `semantic` adds embeddings behind the optional extra). What a
project presents of them is the gateway's presentation pipeline (`mcpctl.presentation.view`). No `mcp`
import here.
"""
