"""The catalogue: what upstream tools exist and how they are found.

`cache` keeps each server's last listing, `curation` decides what a project enables,
`current` joins the two into a project's searchable catalogue, and `rank` ranks it for an
intent (BM25F; `semantic` adds embeddings behind the optional extra). No `mcp` import here.
"""
