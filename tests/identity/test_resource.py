"""The `IdentityProvider` kind: applied, listed, described, round-tripped unchanged, and every
wrong field refused with the field named and the store unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpctl.cli import app

MANIFEST = """\
apiVersion: mcpctl/v1
kind: IdentityProvider
metadata:
  name: acme
spec:
  issuer: https://login.acme.example/
  groupsClaim: realm_access.roles
  introspection:
    endpoint: https://login.acme.example/introspect
    clientId: mcpctl
    clientSecret: ${env:ACME_SECRET}
  projects:
    demo:
      groups:
        engineers: all
        support: read-only
"""


def run(*args: str, input: str | None = None) -> object:
    return CliRunner().invoke(app, list(args), input=input, prog_name="mcpctl")


def test_applied_listed_described_and_round_tripped(tmp_home: Path, tmp_path: Path) -> None:
    f = tmp_path / "idp.yaml"
    f.write_text(MANIFEST)
    r = run("apply", "-f", str(f))
    assert r.exit_code == 0 and r.stdout == "identityprovider/acme created\n", r.output  # type: ignore[attr-defined]
    got = run("get", "idp", "acme", "-o", "yaml")
    assert run("apply", "-f", "-", input=got.stdout).stdout == "identityprovider/acme unchanged\n"  # type: ignore[attr-defined]
    listed = run("get", "identityproviders").stdout  # type: ignore[attr-defined]
    assert "acme" in listed and "https://login.acme.example/" in listed and "demo" in listed, listed
    shown = run("describe", "idp", "acme").stdout  # type: ignore[attr-defined]
    assert "demo: group engineers" in shown and "profile all" in shown and "refused" in shown, shown
    assert "RS256" in shown, shown


@pytest.mark.parametrize(("change", "says"), [
    ("  issuer: https://login.acme.example/", "  issuer: http://login.acme.example/"),
    ("  groupsClaim: realm_access.roles", "  groupsClaim: realm_access.roles\n  algorithms: [HS256]"),
    ("    clientSecret: ${env:ACME_SECRET}", "    clientSecret: hunter2"),
    ("        support: read-only", "        support: Read_Only"),
])
def test_wrong_fields_are_refused_by_name(tmp_home: Path, tmp_path: Path, change: str, says: str) -> None:
    f = tmp_path / "idp.yaml"
    f.write_text(MANIFEST.replace(change, says))
    r = run("apply", "-f", str(f))
    assert r.exit_code != 0, r.output  # type: ignore[attr-defined]
    field = {"issuer": "spec.issuer", "algorithms": "spec.algorithms", "clientSecret": "introspection.clientSecret",
             "support": "spec.projects.demo.groups.support"}
    wanted = next(v for k, v in field.items() if k in says)
    assert wanted in r.output, r.output  # type: ignore[attr-defined]
    assert "acme" not in run("get", "idps").output, "the store changed"  # type: ignore[attr-defined]
