"""Measuring a ranker: datasets in the shared tools.jsonl + queries.jsonl format, and metrics.

`datasets` loads a folder (tools, queries, gold groups, dev/test portions); `metrics` scores a
ranking against gold groups; `evaluate` runs a ranker over a set of queries.
"""
