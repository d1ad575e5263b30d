"""examples/team (a compose file, a Dockerfile, Kubernetes manifests) against the code it deploys.

No container runtime or cluster runs here, so what is tested is what can be: every YAML file
parses; every `mcpctl ...` command line in them is parsed by the real CLI (typer's parser: an
unknown flag or a bad value fails); probe and health-check paths are the gateway's; every
environment variable named is one mcpctl reads; the compose file, the manifests and the Dockerfile
agree with each other (commands, ports, names, labels, the project file); and the command lines
the manifests run are run against a real PostgreSQL (tests/pg_support.py): the migration, the
apply of team.yaml, then the compose file's two gateways and one replica of the Deployment, each
with its own home, /readyz 200 on each, the compose health check passing, and a call through each
with one token created through the CLI, sent with the Host its --allow-host names.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from gwkit import MCPCTL, REPO, SLACK, SRC_ENV, listening_port, stop, text_of

EXAMPLE = REPO / "examples" / "team"
K8S = EXAMPLE / "k8s"
IMAGE = "mcpctl-team:latest"


def load_all(path: Path) -> list[Any]:
    from ruamel.yaml import YAML

    return [d for d in YAML(typ="safe").load_all(path.read_text(encoding="utf-8")) if d is not None]


def compose() -> dict[str, Any]:
    (doc,) = load_all(EXAMPLE / "compose.yaml")
    return doc  # type: ignore[no-any-return]


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_all(path):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def dockerfile_json(instruction: str) -> list[str]:
    m = re.search(rf"^{instruction} (\[.*\])$", (EXAMPLE / "Dockerfile").read_text(), re.M)
    assert m is not None, f"the Dockerfile has no {instruction} in exec (JSON) form"
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def pod_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def mcpctl_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose()["services"].items() if s.get("image") == IMAGE}


def command_lines() -> list[tuple[str, list[str]]]:
    """Every mcpctl command line the examples run: (where, the arguments after `mcpctl`)."""
    assert dockerfile_json("ENTRYPOINT") == ["mcpctl"]
    lines = [("Dockerfile CMD", dockerfile_json("CMD"))]
    lines += [(f"compose {name}", s["command"]) for name, s in mcpctl_services().items()]
    for (kind, name), doc in manifests().items():
        if kind in ("Deployment", "Job"):
            for c in pod_containers(doc):
                assert c["command"] == ["mcpctl"], (name, c["name"])
                lines.append((f"{kind} {name} {c['name']}", c["args"]))
    return lines


def parse_cli(argv: list[str]) -> dict[str, Any]:
    """`mcpctl ARGV` through the real CLI's parser (typer's click): the verb chain resolved, the
    options parsed and converted, the command not run. An unknown verb, flag or bad value raises."""
    import typer

    from mcpctl.cli import app

    root = typer.main.get_command(app)
    ctx = root.make_context("mcpctl", [], resilient_parsing=True)
    cmd: Any = root
    i = 0
    while hasattr(cmd, "get_command"):
        assert i < len(argv), f"{argv}: no verb after {argv[:i]}"
        sub = cmd.get_command(ctx, argv[i])
        assert sub is not None, f"{argv}: unknown verb {argv[i]!r}"
        if hasattr(sub, "get_command"):
            ctx = sub.make_context(argv[i], [], parent=ctx, resilient_parsing=True)
        cmd, i = sub, i + 1
    return dict(cmd.make_context(argv[i - 1], list(argv[i:]), parent=ctx).params)


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def allowed(argv: list[str]) -> set[str]:
    return {n for v in option(argv, "--allow-host") for n in v.split(",")}


def without_allow_host(argv: list[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--allow-host":
            skip = True
        else:
            out.append(a)
    return out


# -- the files themselves -------------------------------------------------------------------------


def test_every_yaml_file_parses_and_kustomize_lists_every_manifest() -> None:
    files = sorted(EXAMPLE.rglob("*.yaml"))
    assert {p.relative_to(EXAMPLE).as_posix() for p in files} >= {"compose.yaml", "team.yaml", "k8s/deployment.yaml"}
    for path in files:
        docs = load_all(path)
        assert docs and all(isinstance(d, dict) for d in docs), path
    (kustomization,) = load_all(K8S / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == sorted(p.name for p in K8S.glob("*.yaml")
                                                        if p.name != "kustomization.yaml")
    for (kind, name), doc in manifests().items():
        assert doc["apiVersion"] and (kind == "Namespace" or doc["metadata"]["namespace"] == "mcpctl"), (kind, name)


def test_every_mcpctl_command_line_parses_with_the_real_cli() -> None:
    lines = command_lines()
    assert len(lines) >= 8
    for where, argv in lines:
        try:
            parse_cli(argv)
        except Exception as e:    # an AssertionError above, or click's UsageError
            pytest.fail(f"{where}: mcpctl {' '.join(argv)}: {e}")
    with pytest.raises(Exception, match="--allow-hosts"):           # the parser does refuse an unknown flag
        parse_cli(["serve", "--project", "team", "--allow-hosts", "x"])
    with pytest.raises(Exception, match="integer"):
        parse_cli(["serve", "--project", "team", "--port", "http"])


def test_probes_and_health_checks_ask_the_gateways_paths() -> None:
    from mcpctl.gateway.http import HEALTH_PATHS

    deployment = manifests()[("Deployment", "mcpctl-gateway")]
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    port_names = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in (c["readinessProbe"], c["livenessProbe"]):
        assert probe["httpGet"]["path"] in HEALTH_PATHS
        assert port_names[probe["httpGet"]["port"]] == int(option(c["args"], "--port")[0])
        assert probe["timeoutSeconds"] >= 3                   # /readyz may wait 2.5 s for a database away
    for name, s in mcpctl_services().items():
        if s["command"][0] != "serve":
            continue
        test = " ".join(s["healthcheck"]["test"])
        m = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", test)
        assert m is not None, name
        assert (int(m.group(1)), m.group(2)) == (int(option(s["command"], "--port")[0]), "/readyz"), name
        assert s["ports"][0].endswith(f":{m.group(1)}"), name     # published: the port it serves on


def test_environment_variables_are_the_ones_mcpctl_reads() -> None:
    from mcpctl.db.config import ENV_URL
    from mcpctl.paths import ENV_HOME

    named: set[str] = set()
    for s in mcpctl_services().values():
        named |= set(s["environment"])
        assert ENV_URL in s["environment"]
    for (kind, _), doc in manifests().items():
        if kind in ("Deployment", "Job"):
            for c in pod_containers(doc):
                env = {e["name"] for e in c["env"]}
                assert ENV_URL in env
                named |= env
    named |= set(re.findall(r"^ENV (\w+)=", (EXAMPLE / "Dockerfile").read_text(), re.M))
    assert {ENV_URL, ENV_HOME, "MCPCTL_GATEWAY_HOST"} <= named
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "src" / "mcpctl").rglob("*.py"))
    for name in named:
        assert f'"{name}"' in source, f"{name}: no mcpctl module reads it"


def test_compose_manifests_and_dockerfile_agree() -> None:
    c = compose()
    services = mcpctl_services()
    ms = manifests()
    deployment, job, service = ms[("Deployment", "mcpctl-gateway")], ms[("Job", "mcpctl-migrate")], \
        ms[("Service", "mcpctl-gateway")]
    (gw,) = deployment["spec"]["template"]["spec"]["containers"]
    migrate, apply = pod_containers(job)
    # the same commands everywhere
    assert services["migrate"]["command"] == migrate["args"] == ["db", "migrate"]
    assert services["seed"]["command"] == apply["args"] == ["apply", "-f", "/config/team.yaml"]
    serve = without_allow_host(gw["args"])
    assert serve == dockerfile_json("CMD")
    gateways = {n: s for n, s in services.items() if s["command"][0] == "serve"}
    assert len(gateways) == 2
    for name, s in gateways.items():
        assert without_allow_host(s["command"]) == serve, name
        assert allowed(s["command"]) == {name, *s["networks"]["default"]["aliases"]}, name
        assert s["environment"]["MCPCTL_GATEWAY_HOST"] == name
        assert s["depends_on"] == {"seed": {"condition": "service_completed_successfully"}}
    assert services["seed"]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    # the Service, the Deployment and the names its replicas answer to
    name, ns = service["metadata"]["name"], service["metadata"]["namespace"]
    assert allowed(gw["args"]) == {name, f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"] == labels
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in gw["ports"]}
    assert port["port"] == int(option(gw["args"], "--port")[0])
    # the project file: mounted at the same path, the ConfigMap holding the same text
    assert "./team.yaml:/config/team.yaml:ro" in services["seed"]["volumes"]
    (mount,) = apply["volumeMounts"]
    (volume,) = job["spec"]["template"]["spec"]["volumes"]
    assert (mount["mountPath"], mount["name"]) == ("/config", volume["name"])
    configmap = ms[("ConfigMap", volume["configMap"]["name"])]
    assert configmap["data"]["team.yaml"] == (EXAMPLE / "team.yaml").read_text(encoding="utf-8")
    # the database URL: one Secret key; compose's URL points at its own db service
    secret = ms[("Secret", "mcpctl-database")]
    for container in (gw, migrate, apply):
        (ref,) = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if e["name"] == "MCPCTL_DATABASE_URL"]
        assert ref["name"] == "mcpctl-database" and ref["key"] in secret["stringData"]
    url = services["migrate"]["environment"]["MCPCTL_DATABASE_URL"]
    db = c["services"]["db"]["environment"]
    assert url == f"postgresql://{db['POSTGRES_USER']}:{db['POSTGRES_PASSWORD']}@db:5432/{db['POSTGRES_DB']}"
    # one image, built from this Dockerfile with the postgres extra
    assert {x["image"] for x in (gw, migrate, apply)} == {IMAGE}
    assert services["migrate"]["build"] == {"context": "../..", "dockerfile": "examples/team/Dockerfile"}
    assert (EXAMPLE / services["migrate"]["build"]["context"]).resolve() == REPO
    text = (EXAMPLE / "Dockerfile").read_text()
    assert re.search(r'pip install [^\n]*"/src\[postgres\]"', text) and f"-t {IMAGE}" in text
    assert "postgres = [" in (REPO / "pyproject.toml").read_text()


# -- the command lines, run against a real PostgreSQL ----------------------------------------------


def run_mcpctl(argv: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPCTL, *argv], capture_output=True, text=True, timeout=120 * SLACK, input=stdin,
                          env={**os.environ, **SRC_ENV, **env})


def localised(argv: list[str]) -> list[str]:
    """A manifest's serve command line as this machine runs it: loopback only, a port the system picks."""
    out = list(argv)
    out[out.index("--host") + 1] = "127.0.0.1"
    out[out.index("--port") + 1] = "0"
    return out


@contextlib.contextmanager
def started(argv: list[str], env: dict[str, str], home: Path, what: str) -> Iterator[int]:
    home.mkdir(parents=True)
    err = home.parent / f"{home.name}.stderr"
    with open(err, "w") as log:
        proc = subprocess.Popen([MCPCTL, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                env={**os.environ, **SRC_ENV, **env, "MCPCTL_HOME": str(home)})
        try:
            yield listening_port(proc, err, what)
        finally:
            stop(proc, timeout=20)


def status_of(port: int, path: str, host: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30 * SLACK)
    try:
        conn.request("GET", path, headers={"Host": host} if host else {})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def until_ready(port: int, timeout: float = 60.0) -> float:
    started_at = time.monotonic()
    deadline = started_at + timeout * SLACK
    while status_of(port, "/readyz") != 200:
        assert time.monotonic() < deadline, f"/readyz not 200 within {timeout * SLACK:.0f}s"
        time.sleep(0.2)
    return time.monotonic() - started_at


@contextlib.asynccontextmanager
async def client(port: int, secret: str, host: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}", "Host": host},
                                  timeout=httpx2.Timeout(30, read=60)) as h, \
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=h)) as c:
        yield c


def test_the_command_lines_run_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    services = mcpctl_services()
    deployment = manifests()[("Deployment", "mcpctl-gateway")]
    env = {"MCPCTL_DATABASE_URL": pg_url}
    # the one-shot steps: migrate (twice: a Job may run again), then the project file where it is mounted
    for _ in range(2):
        r = run_mcpctl(services["migrate"]["command"], env)
        assert r.returncode == 0, r.stderr
    seed = [str(EXAMPLE / "team.yaml") if a == "/config/team.yaml" else a for a in services["seed"]["command"]]
    r = run_mcpctl(seed, env)
    assert r.returncode == 0, r.stderr
    r = run_mcpctl(["create", "token", "alice", "--project", "team"], env)       # examples/team/README.md
    assert r.returncode == 0, r.stderr
    secret = r.stdout.strip()
    # the gateways: compose's two and one replica of the Deployment, each with its own home
    replicas = [(name, localised(s["command"]), {**env, "MCPCTL_GATEWAY_HOST": s["environment"]["MCPCTL_GATEWAY_HOST"]})
                for name, s in services.items() if s["command"][0] == "serve"]
    (gw,) = deployment["spec"]["template"]["spec"]["containers"]
    replicas.append(("mcpctl-gateway", localised(gw["args"]), {**env, "MCPCTL_GATEWAY_HOST": "mcpctl-gateway-0"}))
    healthcheck = services["gw1"]["healthcheck"]["test"]
    assert healthcheck[:2] == ["CMD", "python"]
    with contextlib.ExitStack() as stack:
        ports = [stack.enter_context(started(argv, e, tmp_path / name, name)) for name, argv, e in replicas]
        took = [until_ready(port) for port in ports]
        for port in ports:       # compose's health check itself, pointed at this port
            check = [sys.executable, *(a.replace("127.0.0.1:8765", f"127.0.0.1:{port}") for a in healthcheck[2:])]
            assert subprocess.run(check, capture_output=True, timeout=60 * SLACK).returncode == 0

        async def calls() -> list[str]:
            out = []
            for (name, _, _), port in zip(replicas, ports, strict=True):
                assert status_of(port, "/mcp", f"{name}:8765") == 401        # its Host passes; the token is next
                assert status_of(port, "/mcp", "elsewhere.example:8765") == 421
                async with client(port, secret, f"{name}:8765") as c:
                    tools = {t.name for t in (await c.list_tools()).tools}
                    echo = next(t for t in tools if t.endswith("echo"))
                    result = await c.session.call_tool(echo, {"text": f"via {name}"})
                    out.append(text_of(result))
            return out

        assert anyio.run(calls) == [f"via {name}" for name, _, _ in replicas]
    print("/readyz 200 " + ", ".join(f"{t:.1f}" for t in took) + " s after all three listened (gw1, gw2, a Deployment replica)")
