"""docker-compose.yml and Dockerfile agree with the code: commands, settings, volumes, ports."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

from api.config import Settings
from training.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
_DEFAULTED = re.compile(r"\$\{[A-Z0-9_]+:-([^}]*)\}")


def interpolate(value: str) -> str:
    """Compose's `${VAR:-default}` with VAR unset."""
    return _DEFAULTED.sub(lambda m: m.group(1), str(value))


def env_of(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    return {k: interpolate(v) for k, v in env.items()}


def settings_of(service: dict) -> Settings:
    fields = {k.removeprefix("RECSYS_").lower(): v for k, v in env_of(service).items()}
    return Settings(**fields)


def mounts(service: dict) -> dict[str, str]:
    """container path -> source"""
    out = {}
    for v in service.get("volumes", []):
        source, target = v.split(":")[:2]
        out[target] = source
    return out


def test_services():
    assert {"api", "train"} <= set(SERVICES)
    assert "train" in SERVICES["train"].get("profiles", [])  # one-shot: not started by `up`
    assert SERVICES["train"].get("restart", "no") == "no"


@pytest.mark.parametrize("name", ["api", "train"])
def test_command_is_the_console_script(name):
    command = SERVICES[name]["command"]
    command = shlex.split(command) if isinstance(command, str) else command
    assert command[0] in SCRIPTS and SCRIPTS[command[0]] == "training.cli:main"
    args = _parser().parse_args(command[1:])  # SystemExit on an unknown subcommand or option
    assert args.command == {"api": "serve", "train": "train"}[name]


@pytest.mark.parametrize("name", ["api", "train"])
def test_environment_is_settings(name):
    env = env_of(SERVICES[name])
    unknown = {k for k in env if k.removeprefix("RECSYS_").lower() not in Settings.model_fields}
    assert not unknown and all(k.startswith("RECSYS_") for k in env)
    settings_of(SERVICES[name])  # every value parses


def test_volumes_are_shared_and_match_settings():
    api, train = SERVICES["api"], SERVICES["train"]
    s_api, s_train = settings_of(api), settings_of(train)
    artifacts = str(s_api.artifacts_dir)
    assert str(s_train.artifacts_dir) == artifacts
    assert mounts(api)[artifacts] == mounts(train)[artifacts] == "artifacts"
    assert "artifacts" in COMPOSE["volumes"]
    assert str(s_api.default_data_dir).startswith(artifacts + "/")  # the bootstrap data persists
    assert str(s_api.data_dir) in mounts(api)
    args = _parser().parse_args(train["command"][1:])
    assert str(args.out) == artifacts
    for path in (args.items, args.interactions):
        assert str(path).startswith(str(s_train.data_dir) + "/")
        assert str(s_train.data_dir) in mounts(train)


def test_ports_and_healthcheck():
    api = SERVICES["api"]
    port = settings_of(api).port
    published = [interpolate(p) for p in api["ports"]]
    assert any(p.split(":")[-1] == str(port) for p in published)
    args = _parser().parse_args(api["command"][1:])
    assert args.host == "0.0.0.0" and args.port in (None, port)
    test = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{port}/ready" in test


def test_dockerfile_agrees():
    text = (ROOT / "Dockerfile").read_text()
    env = dict(re.findall(r"(RECSYS_[A-Z_]+)=(\S+)", text))
    assert env and all(k.removeprefix("RECSYS_").lower() in Settings.model_fields for k in env)
    api_env = env_of(SERVICES["api"])
    for key in ("RECSYS_ARTIFACTS_DIR", "RECSYS_DATA_DIR", "RECSYS_DEFAULT_DATA_DIR", "RECSYS_PORT"):
        assert env[key] == api_env[key], key
    assert f"EXPOSE {api_env['RECSYS_PORT']}" in text
    assert '"recsys", "serve", "--host", "0.0.0.0"' in text and "/ready" in text
    assert SERVICES["api"]["build"] == "." and (ROOT / ".dockerignore").is_file()
