"""`favouriteIndex.instruction` under a presentation that does not write the instruction.

Only favourite-index writes the "PREFER favourite__<tool>" instruction that the field turns on or
off, so under flat or deferred the field is accepted (switching a project's presentation back and
forth keeps it) but warned about, naming the field, the presentation and the way out. Real
`mcpctl` processes: what a user running apply sees on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_support import SLACK
from mcpctl.resources.validate import validate_document
from mcpctl.resources.yamlio import parse_text

MCPCTL = str(Path(sys.executable).parent / "mcpctl")
SERVER = "apiVersion: mcpctl/v1\nkind: Server\nmetadata: {name: a}\nspec: {command: a}\n"


def _project(presentation: str | None, instruction: str | None, name: str = "p") -> str:
    lines = ["apiVersion: mcpctl/v1", "kind: Project", f"metadata: {{name: {name}}}", "spec:", "  servers: [a]",
             "  favouriteIndex:", "    tools: [a/x]"]
    if instruction is not None:
        lines.append(f"    instruction: {instruction}")
    if presentation is not None:
        lines.append(f"  presentation: {presentation}")
    return "\n".join(lines) + "\n"


def _apply(home: Path, manifest: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPCTL_HOME": str(home)}
    return subprocess.run([MCPCTL, "apply", "-f", str(manifest), *extra], capture_output=True, text=True,
                          env=env, timeout=60 * SLACK)


def test_instruction_outside_favourite_index_is_kept_with_a_warning(tmp_path: Path, tmp_home: Path) -> None:
    """One manifest, three projects (flat, deferred with false, deferred with true): apply
    --dry-run (the validation) and apply each warn once per project, naming the field, its line,
    the presentation and the way out, and store the field as written."""
    from mcpctl.resources.store import Store

    cases = {"pf": ("flat", "false"), "pd": ("deferred", "false"), "pt": ("deferred", "true")}
    manifest = tmp_path / "p.yaml"
    manifest.write_text(SERVER + "".join("---\n" + _project(pr, ins, name) for name, (pr, ins) in cases.items()))
    dry = _apply(tmp_home, manifest, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == "server/a created (dry run)\n" + "".join(f"project/{n} created (dry run)\n" for n in cases)
    r = _apply(tmp_home, manifest)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "server/a created\n" + "".join(f"project/{n} created\n" for n in cases)
    for out in (dry.stderr, r.stderr):
        text = " ".join(out.split())
        assert text.count("spec.favouriteIndex.instruction is set") == 3, out
        for doc, (name, (presentation, _)) in enumerate(cases.items(), start=2):
            line = 5 + (doc - 2) * 10 + 8          # the server's 4 lines and '---', then 10 per project
            assert f"{manifest}, document {doc}, line {line}: spec.favouriteIndex.instruction is set but " \
                   f"the presentation is '{presentation}'" in text, (name, out)
        assert text.count("or set spec.presentation: favourite-index") == 3
    for name, (presentation, instruction) in cases.items():
        spec = Store().get("Project", name)["spec"]
        assert spec["favouriteIndex"]["instruction"] is (instruction == "true")        # accepted as written
        assert spec["presentation"] == presentation


@pytest.mark.parametrize(("presentation", "instruction"), [("favourite-index", "false"),
                                                           ("favourite-index", "true"),
                                                           ("flat", None), ("deferred", None)])
def test_no_warning_where_the_instruction_applies_or_is_unset(presentation: str, instruction: str | None) -> None:
    v = validate_document(parse_text(_project(presentation, instruction), "p.yaml")[0])
    assert not [w for w in v.warnings if "instruction" in w], v.warnings


def test_enabled_favourite_index_without_presentation_is_favourite_index() -> None:
    """`favouriteIndex.enabled: true` alone gives favourite-index: no warning; the warning
    follows the effective presentation, not the presentation field."""
    text = _project(None, "false").replace("    tools: [a/x]", "    tools: [a/x]\n    enabled: true")
    assert not [w for w in validate_document(parse_text(text, "p.yaml")[0]).warnings if "instruction" in w]
    flat = validate_document(parse_text(_project(None, "false"), "p.yaml")[0]).warnings
    assert [w for w in flat if "the presentation is 'flat'" in w and "favouriteIndex.instruction" in w], flat
