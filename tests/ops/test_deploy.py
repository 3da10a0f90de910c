"""The deployment files, checked as far as this machine can: no container daemon and no
cluster here, so nothing is built or started. What is checked:

- the alert rules pass `promtool check rules` and their unit tests (`promtool test rules`);
- every metric the rules and the Grafana dashboard use is exported by a live rota server;
- the kustomize base builds (`kubectl kustomize`) and every object validates strictly
  (kubernetes-validate); the worker's termination grace exceeds its shutdown grace;
- the Dockerfile is hadolint-clean;
- every rota command line in compose.yaml, the manifests and the Dockerfile parses with
  the real CLI, every ROTA_* variable they set is one rota reads, and every file compose
  mounts exists.

A missing tool skips its check with a SKIPPED line naming it (make test installs
promtool when it can; kubectl is part of this machine's image)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
import yaml

from rota.api.settings import ApiSettings
from rota.cli.main import main
from rota.config import Settings
from rota.config.schema import SECRET_VARIABLES
from rota.config.secret_files import FILE_SUFFIX
from tests.api.test_cli_e2e import server as server
from tests.helpers import REPO

from .live import scrape_once_published

DEPLOY = REPO / "deploy"
RULES = DEPLOY / "prometheus" / "rota-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "rota.json"
KUSTOMIZE_BASE = DEPLOY / "kubernetes" / "base"
METRIC = re.compile(r"\brota_[a-z_]+\b")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def _tool(name: str, where: Path | None = None) -> str:
    found = shutil.which(name, path=str(where) if where else None)
    if found is None:
        pytest.skip(f"SKIPPED: {name} is not installed here, so this deploy check cannot run")
    return found


def _run(*command: str, cwd: Path = REPO) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# -- alerts and dashboard -----------------------------------------------------------------
def test_the_rules_pass_promtool() -> None:
    promtool = _tool("promtool")
    _run(promtool, "check", "rules", str(RULES))
    _run(promtool, "test", "rules", "rota-rules.test.yml", cwd=RULES.parent)


def _rule_expressions() -> list[str]:
    document = yaml.safe_load(RULES.read_text())
    return [rule["expr"] for group in document["groups"] for rule in group["rules"]]


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            found.append(query["query"])
    return found


def test_the_dashboard_covers_what_an_operator_asks() -> None:
    used = {m for expr in _dashboard_expressions() for m in METRIC.findall(expr)}
    for needed in (
        "rota_runs_finished_total",  # throughput and failures
        "rota_run_pickup_delay_seconds_bucket",
        "rota_run_duration_seconds_bucket",  # durations by handler
        "rota_queue_runs",  # queue depth
        "rota_dead_letter_runs",
        "rota_workers",
        "rota_leader",
    ):
        assert needed in used, needed


@pytest.fixture
def live_scrape(server: str) -> str:
    """The /metrics of a live `rota server` (embedded worker and leader), once the
    leader has published the cluster gauges, after one API request to count."""
    httpx.get(f"{server}/api/v1/workers", timeout=5)
    return scrape_once_published(server)


def _exported(scrape: str) -> set[str]:
    """Every series name the scrape declares or has samples of."""
    names: set[str] = set()
    for line in scrape.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            names.add(name)
            if kind == "histogram":
                names |= {name + suffix for suffix in HISTOGRAM_SUFFIXES}
            if kind == "counter":
                names.add(name.removesuffix("_total") + "_total")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


@pytest.mark.slow
def test_every_metric_the_rules_and_dashboard_use_is_exported(live_scrape: str) -> None:
    exported = _exported(live_scrape)
    for source, expressions in (
        ("rota-rules.yml", _rule_expressions()),
        ("rota.json", _dashboard_expressions()),
    ):
        used = {m for expr in expressions for m in METRIC.findall(expr)}
        assert used, source
        missing = sorted(used - exported)
        assert missing == [], f"{source} uses metrics rota does not export: {missing}"


# -- Kubernetes -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    kubectl = _tool("kubectl")
    built = _run(kubectl, "kustomize", str(KUSTOMIZE_BASE))
    return [doc for doc in yaml.safe_load_all(built) if doc]


def test_the_kustomize_base_validates(manifests: list[dict[str, Any]], tmp_path: Path) -> None:
    validate = _tool("kubernetes-validate", Path(sys.executable).parent)
    built = tmp_path / "built.yaml"
    built.write_text(yaml.safe_dump_all(manifests))
    _run(validate, "--strict", str(built))
    _run(validate, "--strict", str(KUSTOMIZE_BASE / "secret.example.yaml"))
    kinds = sorted(doc["kind"] for doc in manifests)
    assert kinds == [
        "ConfigMap",
        "Deployment",
        "Deployment",
        "Job",
        "PodDisruptionBudget",
        "Service",
    ]


def _containers(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found = {}
    for doc in manifests:
        pod = doc.get("spec", {}).get("template", {}).get("spec")
        if pod:
            for container in pod["containers"]:
                found[doc["metadata"]["name"]] = {**container, "_pod": pod}
    return found


def test_workers_get_longer_to_stop_than_they_take(manifests: list[dict[str, Any]]) -> None:
    worker = _containers(manifests)["rota-worker"]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    shutdown_grace = float(
        env.get("ROTA_SHUTDOWN_GRACE_SECONDS") or Settings().shutdown_grace_seconds
    )
    assert worker["_pod"]["terminationGracePeriodSeconds"] > shutdown_grace
    for probe in ("livenessProbe", "readinessProbe"):
        assert worker[probe]["httpGet"]["path"] in {"/health/live", "/health/ready"}


def test_manifest_commands_and_variables_exist(manifests: list[dict[str, Any]]) -> None:
    containers = _containers(manifests)
    assert set(containers) == {"rota-server", "rota-worker", "rota-migrate"}
    assert containers["rota-migrate"]["args"] == ["db", "upgrade"]
    for container in containers.values():
        _check_command(["--log-json", *container["args"]])
        _check_variables(e["name"] for e in container["env"])


# -- Docker and compose ---------------------------------------------------------------------
def test_the_dockerfile_is_hadolint_clean() -> None:
    hadolint = _tool("hadolint", Path(sys.executable).parent)
    _run(hadolint, str(REPO / "Dockerfile"))


def _dockerfile_json(instruction: str) -> list[str]:
    text = (REPO / "Dockerfile").read_text()
    match = re.search(rf"^{instruction} (\[.*\])$", text, re.MULTILINE)
    assert match, instruction
    return list(json.loads(match.group(1)))


def test_the_images_default_command_exists() -> None:
    entrypoint = _dockerfile_json("ENTRYPOINT")
    assert entrypoint[0] == "rota"
    _check_command([*entrypoint[1:], *_dockerfile_json("CMD")])
    assert re.search(r"^USER 10001$", (REPO / "Dockerfile").read_text(), re.MULTILINE)


def test_compose_names_commands_variables_and_files_that_exist() -> None:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "server", "worker-1", "worker-2", "prometheus", "grafana"} <= set(services)
    entry = _dockerfile_json("ENTRYPOINT")[1:]
    for name, service in services.items():
        if service.get("image", "").startswith("rota"):
            _check_command([*entry, *service["command"]])
            _check_variables(service.get("environment", {}))
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), f"{name} mounts {source}, which is missing"
    assert services["server"]["command"][0] == "server"
    for worker in ("worker-1", "worker-2"):
        assert services[worker]["command"][0] == "worker"
        grace = float(services[worker]["environment"]["ROTA_SHUTDOWN_GRACE_SECONDS"])
        assert float(services[worker]["stop_grace_period"].removesuffix("s")) > grace


@pytest.mark.parametrize("path", ["deploy/config/rota.yaml", "deploy/kubernetes/base/rota.yaml"])
def test_the_configuration_files_check(path: str) -> None:
    """What `rota config check` does: keys, kinds, and the rules between settings."""
    alone = {"ROTA_CONFIG": str(REPO / path)}
    assert Settings.from_env(alone).auto_migrate is False  # a migrate step applies it
    assert ApiSettings.from_env(alone).embedded_worker is False


def test_no_rota_container_is_handed_a_secret_in_a_variable(
    manifests: list[dict[str, Any]],
) -> None:
    """Secrets are files (ROTA_*_FILE): a variable shows up in `docker inspect`, in
    /proc/PID/environ and in every child process."""
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    rota_services = [s for s in compose["services"].values() if s["image"].startswith("rota")]
    given = [set(service["environment"]) for service in rota_services]
    given += [{e["name"] for e in c["env"]} for c in _containers(manifests).values()]
    for names in given:
        assert not names & set(SECRET_VARIABLES), names
        assert "ROTA_CONFIG" in names


def _check_command(argv: list[str]) -> None:
    """Parse ``argv`` with the real CLI, down to the leaf command (nothing runs)."""
    command: click.Command = main
    context = command.make_context("rota", list(argv))
    while isinstance(command, click.Group):
        rest = [*getattr(context, "_protected_args", []), *context.args]
        assert rest, f"{argv}: a command group needs a command"
        name, found, args = command.resolve_command(context, rest)
        assert found is not None, f"{argv}: no command {name}"
        command, context = found, found.make_context(name or "", args, parent=context)


def _known_variables() -> set[str]:
    source = "\n".join(p.read_text() for p in (REPO / "src" / "rota").rglob("*.py"))
    named = set(re.findall(r"\bROTA_[A-Z_]+\b", source))
    from_files = {
        variable + FILE_SUFFIX for variable in SECRET_VARIABLES
    }  # rota.config.secret_files
    return named | from_files | {f"ROTA_{f.name.upper()}" for f in fields(Settings)}


def _check_variables(names: Any) -> None:
    known = _known_variables() | {"ROTA_HEALTHCHECK_URL"}  # the Dockerfile's own
    unknown = sorted(n for n in names if n.startswith("ROTA_") and n not in known)
    assert unknown == [], f"variables rota does not read: {unknown}"
