"""The shipped task set and catalogue: consistent, and what scripts/make_bakeoff_data.py makes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ci_support import SLACK
from mcpctl.bakeoff.data import SHIPPED, check_tasks, load_catalogue, load_tasks

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


def test_shipped_set_is_consistent() -> None:
    cat = load_catalogue(SHIPPED / "user-requests-145")
    tasks = load_tasks(SHIPPED / "user-requests-145" / "tasks.jsonl")
    assert len(cat.tools) == 145 and len(cat.servers) == 14 and len(tasks) == 72
    assert all(i in cat.ids for t in tasks for g in t.groups for i in g)
    check_tasks(tasks, cat.ids, "shipped")
    assert len(cat.favourites) == 10 and set(cat.favourites) <= cat.ids


def test_shipped_set_is_what_the_script_makes() -> None:
    if not (SHARED / "livemcpbench" / "tools.jsonl").is_file():
        sys.path.insert(0, str(REPO / "tests"))
        from ci_support import skip_unless_ci

        skip_unless_ci(f"{SHARED} (the shared datasets) is not beside the repository")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "make_bakeoff_data.py"), "--check",
                        "--shared", str(SHARED)], capture_output=True, text=True, timeout=60 * SLACK)
    assert r.returncode == 0, r.stderr
