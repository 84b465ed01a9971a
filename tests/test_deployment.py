"""docker/: no engine runs here, so the compose file and Dockerfiles are checked as data.

Every service's command must exist in the package, every variable they set must be a known
setting, images must be pinned and run as a non-root user.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.main import get_command

from bot.cli import build_app
from bot.config import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
REPAIRBOT_SERVICES = {"api", "worker", "beat", "gpu-runner"}
ENTRYPOINT_VARIABLES = {"PORT", "WORKER_QUEUES", "WORKER_CONCURRENCY", "GPU_TYPE"}
DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "gpu-runner.Dockerfile"]


def _entrypoint_roles() -> dict[str, list[str]]:
    """role → the repairbot command line it execs (from docker/entrypoint.sh)."""
    roles: dict[str, list[str]] = {}
    text = (DOCKER / "entrypoint.sh").read_text()
    for role, body in re.findall(r"^\s+([a-z-]+)\)(.*?);;", text, flags=re.M | re.S):
        match = re.search(r"exec repairbot ([^\n]+)", body)
        if match:
            roles[role] = shlex.split(match.group(1))
    return roles


def _setting_names() -> set[str]:
    return {f"REPAIRBOT_{name.upper()}" for name in Settings.model_fields}


def test_the_stack_has_every_service_with_health_checks_and_volumes():
    services = COMPOSE["services"]
    assert set(services) == {"postgres", "redis", *REPAIRBOT_SERVICES}
    for name in ("postgres", "redis", "api"):
        assert "healthcheck" in services[name], name
    assert set(COMPOSE["volumes"]) >= {"postgres-data", "redis-data", "repairbot-data"}
    devices = services["gpu-runner"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]


@pytest.mark.parametrize("service", sorted(REPAIRBOT_SERVICES))
def test_every_service_command_exists_in_the_package(service):
    roles = _entrypoint_roles()
    role = COMPOSE["services"][service]["command"][0]
    assert role in roles, f"{service}: entrypoint has no role {role!r}"
    subcommand = roles[role][0]
    commands = get_command(build_app()).commands  # type: ignore[attr-defined]
    assert subcommand in commands, f"{service}: `repairbot {subcommand}` does not exist"
    options = {
        p for param in commands[subcommand].params for p in [*param.opts, *param.secondary_opts]
    }
    for word in roles[role][1:]:
        if word.startswith("-"):
            assert word in options, f"`repairbot {subcommand}` has no option {word}"


@pytest.mark.parametrize("service", sorted(REPAIRBOT_SERVICES))
def test_every_variable_a_service_sets_is_a_known_setting(service):
    environment = COMPOSE["services"][service]["environment"]
    unknown = {key for key in environment if key not in _setting_names() | ENTRYPOINT_VARIABLES}
    assert not unknown, f"{service} sets unknown variables {sorted(unknown)}"


def test_the_example_environment_is_known_and_refused_until_edited():
    example = dict(
        line.split("=", 1)
        for line in (DOCKER / "example.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    referenced = set(re.findall(r"\$\{([A-Z_]+)", (DOCKER / "compose.yaml").read_text()))
    assert set(example) <= referenced | _setting_names()
    secrets = {
        k.removeprefix("REPAIRBOT_").lower(): v
        for k, v in example.items()
        if k.startswith("REPAIRBOT_")
    }
    with pytest.raises(ValueError, match="set real secrets"):
        Settings(environment="production", **secrets)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_are_pinned_non_root_and_copy_what_exists(dockerfile):
    lines = [line.strip() for line in dockerfile.read_text().splitlines()]
    images = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert images and all(re.search(r":\d+\.\d+", image) for image in images), images
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    for line in lines:
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), f"{dockerfile.name}: COPY {source} does not exist"
    assert any("--constraint" in line for line in lines)
    entrypoint = next(line for line in lines if line.startswith("ENTRYPOINT"))
    assert "repairbot-entrypoint" in entrypoint


def test_constraints_pin_every_package_and_the_cpu_torch():
    pins = [
        line
        for line in (DOCKER / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert all(re.match(r"^[A-Za-z0-9_.\-\[\]]+==[\w.+!-]+$", pin) for pin in pins), pins
    assert "torch==2.13.0" in pins
