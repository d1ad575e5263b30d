"""Limits as resources: a profile's `limits` and a server's `maxConcurrency` are checked at `apply`
(errors name the field), stored canonically so that `get -o yaml | apply -f -` is unchanged; and
the budgets themselves (`presentation.budgets.Limits`) on a still clock: refill, an identity's own
budget, the stdio client under `serve --profile`, a project edit while serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mcpctl.cli import app
from mcpctl.errors import EXIT_USER
from mcpctl.gateway.sessions import Caller
from mcpctl.presentation.budgets import Limits
from mcpctl.resources.kinds import ProjectSpec, ServerSpec

SERVER = """\
apiVersion: mcpctl/v1
kind: Server
metadata: {name: shared}
spec: {command: shared-server, maxConcurrency: 4}
"""
PROJECT = """\
apiVersion: mcpctl/v1
kind: Project
metadata: {name: p}
spec:
  servers: [shared]
  profiles:
    ci:
      limits:
        callsPerMinute: 60
        burst: 10
        identities:
          nightly: {callsPerMinute: 600, burst: 50}
          "alice@example.com": {burst: 2}
    reviewers:
      readOnly: true
"""


@pytest.fixture
def runner(tmp_home: Path) -> CliRunner:
    return CliRunner()


def _apply(runner: CliRunner, text: str) -> Any:
    return runner.invoke(app, ["apply", "-f", "-"], input=text)


def test_limits_are_stored_and_round_trip_unchanged(runner: CliRunner) -> None:
    assert _apply(runner, SERVER + "---\n" + PROJECT).stdout == "server/shared created\nproject/p created\n"
    for kind in ("server/shared", "project/p"):
        got = runner.invoke(app, ["get", *kind.split("/"), "-o", "yaml"])
        assert got.exit_code == 0, got.output
        again = _apply(runner, got.stdout)
        assert again.exit_code == 0 and again.stdout == f"{kind} unchanged\n", again.output
    got = runner.invoke(app, ["get", "project", "p", "-o", "yaml"]).stdout
    assert "limits:" in got and "reviewers:\n      readOnly: true\n" in got     # no limits: none written
    assert "maxConcurrency: 4" in runner.invoke(app, ["get", "server", "shared", "-o", "yaml"]).stdout
    described = " ".join(runner.invoke(app, ["describe", "project", "p"]).stdout.split())
    assert ("Limits (ci): each identity 60 calls per minute (burst 10); nightly: 600 calls per minute (burst 50); "
            "alice@example.com: 60 calls per minute (burst 2)") in described, described
    described = " ".join(runner.invoke(app, ["describe", "server", "shared"]).stdout.split())
    assert "Max concurrency: 4 calls in flight (more wait, each up to the call timeout)" in described, described


@pytest.mark.parametrize(("change", "names"), [
    (("callsPerMinute: 60", "callsPerMinute: 0"), "spec.profiles.ci.limits.callsPerMinute: must be between 1 and"),
    (("burst: 10", "burst: many"), "spec.profiles.ci.limits.burst must be a integer"),
    (("burst: 10", "brust: 10"), "unknown field 'spec.profiles.ci.limits.brust'"),
    (("        callsPerMinute: 60\n", ""), "spec.profiles.ci.limits.burst is given without callsPerMinute"),
    (("nightly: {callsPerMinute: 600, burst: 50}", "nightly: {burst: 50}\n          x: {rate: 1}"),
     "unknown field 'spec.profiles.ci.limits.identities.x.rate'"),
    (('"alice@example.com"', '" alice"'), "spec.profiles.ci.limits.identities. alice: ' alice' is not an identity"),
])
def test_a_wrong_limit_is_refused_naming_its_field(runner: CliRunner, change: tuple[str, str], names: str) -> None:
    r = _apply(runner, SERVER + "---\n" + PROJECT.replace(*change))
    assert r.exit_code == EXIT_USER, r.output
    assert names in r.stderr, r.stderr


def test_an_identity_budget_needs_a_rate_its_own_or_its_profiles(runner: CliRunner) -> None:
    text = PROJECT.replace("        callsPerMinute: 60\n        burst: 10\n", "")
    r = _apply(runner, SERVER + "---\n" + text)
    assert r.exit_code == EXIT_USER, r.output
    assert "spec.profiles.ci.limits.identities.alice@example.com.callsPerMinute is required: profile 'ci' " \
           "gives no callsPerMinute to inherit" in r.stderr, r.stderr
    assert "give identity 'alice@example.com' its own callsPerMinute" in r.stderr


def test_max_concurrency_must_be_positive(runner: CliRunner) -> None:
    r = _apply(runner, SERVER.replace("maxConcurrency: 4", "maxConcurrency: 0"))
    assert r.exit_code == EXIT_USER and "spec.maxConcurrency: must be between 1 and 100000, got 0" in r.stderr
    assert ServerSpec.from_resource({"metadata": {"name": "s"}, "spec": {}}).max_concurrency is None


# -- the budgets, on a still clock ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _spec(limits: dict[str, Any]) -> ProjectSpec:
    return ProjectSpec.from_resource({"metadata": {"name": "p"},
                                      "spec": {"profiles": {"ci": {"limits": limits}, "free": {}}}})


def _spend(limits: Limits, caller: Caller, n: int) -> list[bool]:
    """Whether each of `n` calls had budget."""
    return [limits.take(caller.profile, caller.credential) is None for _ in range(n)]


def test_a_bucket_spends_its_burst_then_refills_at_its_rate() -> None:
    clock = Clock()
    limits = Limits(_spec({"callsPerMinute": 30, "burst": 3}), clock)
    tok = Caller("s1", profile="ci", credential="tok")
    assert _spend(limits, tok, 4) == [True, True, True, False]
    over = limits.take(tok.profile, tok.credential)
    assert over is not None and over.retry_after == 2          # 30 a minute: one every 2 s
    clock.now += 1.9
    assert limits.take(tok.profile, tok.credential) is not None
    clock.now += 0.1
    assert _spend(limits, tok, 2) == [True, False]
    clock.now += 3600                                          # refilled to the burst, no further
    assert _spend(limits, tok, 4) == [True, True, True, False]
    # another identity, a profile without limits and the full view have budgets of their own or none
    assert _spend(limits, Caller("s2", profile="ci", credential="other"), 3) == [True] * 3
    assert _spend(limits, Caller("s3", profile="free", credential="tok"), 50) == [True] * 50
    assert _spend(limits, Caller("s4", credential=""), 50) == [True] * 50


def test_the_stdio_client_under_a_profile_has_the_profiles_budget() -> None:
    """`serve --profile ci` over stdio (no credential): the profile's budget holds, so a profile
    means the same whichever front selects it."""
    limits = Limits(_spec({"callsPerMinute": 60, "burst": 2, "identities": {"tok": {"burst": 9}}}), Clock())
    stdio = Caller("stdio", profile="ci")
    assert _spend(limits, stdio, 3) == [True, True, False]
    over = limits.take(stdio.profile, stdio.credential)
    assert over is not None and over.message.startswith("call limit reached: the stdio client may make 60 calls")


def test_a_project_edit_changes_the_rates_and_keeps_what_was_spent() -> None:
    clock = Clock()
    limits = Limits(_spec({"callsPerMinute": 60, "burst": 5}), clock)
    tok = Caller("s", profile="ci", credential="tok")
    assert _spend(limits, tok, 3) == [True] * 3
    limits.reproject(_spec({"callsPerMinute": 60, "burst": 5, "identities": {"tok": {"burst": 10}}}))
    assert _spend(limits, tok, 3) == [True, True, False]        # 2 left of the 5, the new burst refills
    clock.now += 8
    assert _spend(limits, tok, 9) == [True] * 8 + [False]
    limits.reproject(_spec({}))
    assert not limits.rates and _spend(limits, tok, 20) == [True] * 20


def test_a_person_is_named_by_the_whole_identity_their_sub_or_their_email() -> None:
    """A person signed in through an identity provider is `sub (email)` in the log; their own
    budget may name any of the three."""
    limits = Limits(_spec({"callsPerMinute": 60, "burst": 1, "identities": {
        "alice@example.com": {"burst": 2}, "auth0|bob": {"burst": 3}, "carol (carol@example.com)": {"burst": 4}}}),
        Clock())
    for who, burst in (("auth0|alice (alice@example.com)", 2), ("auth0|bob (Bob)", 3),
                       ("carol (carol@example.com)", 4), ("dave (dave@example.com)", 1)):
        assert _spend(limits, Caller("s", profile="ci", credential=who), burst + 1) == [True] * burst + [False], who



def test_a_charge_refills_then_subtracts_and_may_leave_a_debt_down_to_minus_burst() -> None:
    """What another replica admitted (`Limits.charge`, from `cluster.limits`): the bucket is brought
    to now, then spent, into debt if need be; the debt is waited out at the rate, then calls go on."""
    clock = Clock()
    limits = Limits(_spec({"callsPerMinute": 60, "burst": 10, "identities": {"vip": {"burst": 20}}}), clock)
    tok = Caller("s", profile="ci", credential="tok")
    assert _spend(limits, tok, 3) == [True] * 3                 # 7 left
    clock.now += 2                                              # 9 left
    limits.charge("ci", "tok", 4)
    assert limits.buckets["ci", "tok"].level == 5.0
    assert _spend(limits, tok, 6) == [True] * 5 + [False]
    limits.charge("ci", "tok", 30)                              # 0 - 30: the debt stops at -burst
    assert limits.buckets["ci", "tok"].level == -10.0
    over = limits.take("ci", "tok")
    assert over is not None and over.retry_after == 11          # back to 1 call at one a second
    clock.now += 10.5
    assert limits.take("ci", "tok") is not None
    clock.now += 0.5
    assert _spend(limits, tok, 2) == [True, False]
    limits.charge("ci", "new", 4)                               # a bucket not used here yet: full, then spent
    assert _spend(limits, Caller("s", profile="ci", credential="new"), 7) == [True] * 6 + [False]
    limits.charge("ci", "vip", 15)                              # an identity's own rate
    assert _spend(limits, Caller("s", profile="ci", credential="vip"), 6) == [True] * 5 + [False]
    limits.charge("free", "tok", 5)                             # a profile without limits: nothing
    limits.charge("ci", "tok", 0)
    assert ("free", "tok") not in limits.buckets


def test_drain_counts_each_credentials_admitted_calls_since_the_last_drain() -> None:
    """The counts the cluster shares: admitted calls only, credentials only (not the stdio client's
    None), each count once."""
    clock = Clock()
    limits = Limits(_spec({"callsPerMinute": 60, "burst": 3}), clock)
    assert limits.drain() == {}
    _spend(limits, Caller("s", profile="ci", credential="tok"), 5)         # 3 admitted, 2 refused
    _spend(limits, Caller("s", profile="ci", credential=""), 2)            # the project's own token
    _spend(limits, Caller("s", profile="ci"), 2)                           # the stdio client
    assert limits.drain() == {("ci", "tok"): 3, ("ci", ""): 2}
    assert limits.drain() == {}
    clock.now += 1
    _spend(limits, Caller("s", profile="ci", credential="tok"), 2)
    assert limits.drain() == {("ci", "tok"): 1}
