"""docker-compose.yml, deploy/nginx.conf and Dockerfile agree with the code: commands, settings,
volumes, ports, health checks, the load balancer's upstream and the store's PostgreSQL."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import make_url

from api.config import Settings
from cli.main import _parser
from tests.live_server import free_port

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
    assert {"api", "train", "lb", "postgres"} <= set(SERVICES)
    assert "train" in SERVICES["train"].get("profiles", [])  # one-shot: not started by `up`
    assert SERVICES["train"].get("restart", "no") == "no"


@pytest.mark.parametrize("name", ["api", "train"])
def test_command_is_the_console_script(name):
    command = SERVICES[name]["command"]
    command = shlex.split(command) if isinstance(command, str) else command
    assert command[0] in SCRIPTS and SCRIPTS[command[0]] == "cli.main:main"
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
    assert "ports" not in api  # replicas publish nothing: the load balancer does
    assert [str(p) for p in api["expose"]] == [str(port)]
    args = _parser().parse_args(api["command"][1:])
    assert args.host == "0.0.0.0" and args.port in (None, port)
    test = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{port}/ready" in test


def test_two_replicas_share_the_store_and_the_artifacts():
    api, pg = SERVICES["api"], SERVICES["postgres"]
    assert api["deploy"]["replicas"] == 2
    url = make_url(settings_of(api).store_url)
    assert url.drivername.startswith("postgresql") and url.host == "postgres" and url.port == 5432
    pg_env = env_of(pg)
    assert (url.username, url.password, url.database) == (
        pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"])
    assert settings_of(SERVICES["train"]).store_url == settings_of(api).store_url
    assert api["depends_on"]["postgres"]["condition"] == "service_healthy"
    check = pg["healthcheck"]["test"]
    assert check[:2] == ["CMD", "pg_isready"] and pg_env["POSTGRES_USER"] in check
    assert mounts(pg)["/var/lib/postgresql/data"] in COMPOSE["volumes"]
    # every replica follows an activation within 2 s (the deadline)
    assert settings_of(api).watch_interval_s <= 1


NGINX_CONF = ROOT / "deploy" / "nginx.conf"


def nginx_upstreams(text: str) -> dict[str, list[str]]:
    """upstream name -> its servers' host:port."""
    out = {}
    for name, block in re.findall(r"upstream\s+(\S+)\s*\{(.*?)\}", text, re.S):
        out[name] = re.findall(r"^\s*server\s+(\S+?)[\s;]", block, re.M)
    return out


def test_the_load_balancer_fronts_the_api_replicas():
    lb, api = SERVICES["lb"], SERVICES["api"]
    conf_mount = mounts(lb)["/etc/nginx/nginx.conf"]
    assert (ROOT / conf_mount).resolve() == NGINX_CONF and lb["volumes"][0].endswith(":ro")
    text = NGINX_CONF.read_text()
    upstreams = nginx_upstreams(text)
    port = settings_of(api).port
    passed = re.findall(r"proxy_pass\s+http://([^/;\s]+)", text)
    assert passed and all(u in upstreams for u in passed), (passed, upstreams)
    assert all(servers == [f"api:{port}"] for servers in upstreams.values()), upstreams
    listen = re.findall(r"^\s*listen\s+(\d+);", text, re.M)
    published = [interpolate(p) for p in lb["ports"]]
    assert listen and all(p.split(":")[-1] in listen for p in published), (listen, published)
    assert lb["depends_on"]["api"]["condition"] == "service_healthy"
    assert f"127.0.0.1:{listen[0]}/ready" in " ".join(lb["healthcheck"]["test"])
    # nginx's default body limit (1 MB) would refuse the api's training uploads
    size = re.search(r"client_max_body_size\s+(\d+)m;", text)
    assert size and int(size.group(1)) * 1_000_000 >= settings_of(api).max_upload_bytes
    # scripts/lb.sh swaps the servers between these markers for local replicas (the LB test)
    block = text.split("# servers\n", 1)[1].split("# end servers", 1)[0]
    assert re.findall(r"server\s+(\S+)", block) == [f"api:{port}"]


def test_the_load_balancer_config_passes_nginx_t(tmp_path):
    """nginx itself reads the config (scripts/lb.sh: the servers swapped for a local address)."""
    if not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        pytest.skip("nginx is missing: run `bash scripts/lb.sh install` (as root; `make test` does)")
    out = subprocess.run(["bash", str(ROOT / "scripts" / "lb.sh"), "start", str(free_port()),
                          f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    folder = out.stdout.strip().splitlines()[-1]
    subprocess.run(["bash", str(ROOT / "scripts" / "lb.sh"), "stop", folder], check=True, timeout=60)
    assert not Path(folder).exists()


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
    # the CPU build installed first is the very release the project pins
    pin = re.search(r'"(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin and f'--index-url https://download.pytorch.org/whl/cpu "{pin.group(1)}"' in text


def test_the_replicas_keep_idle_connections_far_longer_than_the_load_balancer_reuses_them():
    """nginx reuses an idle connection to a replica for up to its upstream keepalive_timeout; a
    replica that closes it sooner, or about as soon, races the next request on it (a shopper's
    POST, which nginx does not send again, was answered 502 with uvicorn's 5 s against 4 s)."""
    from api.server import KEEP_ALIVE_S

    upstream = re.search(r"upstream\s+\S+\s*\{(.*?)\}", NGINX_CONF.read_text(), re.S)
    reuse = re.search(r"keepalive_timeout\s+(\d+)s;", upstream.group(1)) if upstream else None
    assert reuse, "the upstream block sets keepalive_timeout in seconds"
    assert 4 * int(reuse.group(1)) <= KEEP_ALIVE_S
