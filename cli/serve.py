"""`recsys serve` from the command line: the service (api/server.py) with training's retrain
jobs (cli/app.py) and, when the artifacts folder has no model, the default one trained first.

With no model under the artifacts folder and no --model, the default synthetic catalogue is
generated and trained first, with a progress bar, so a fresh checkout serves something useful.
That happens once, before any worker starts.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from pathlib import Path

from api.config import Settings
from api.server import serve as serve_app
from recsys.artifact import FORMAT_VERSION, current_version, list_versions, resolve_version_dir
from training.train_job import run_train_job

log = logging.getLogger("recsys.api")

_BOOTSTRAP_LOCK = ".bootstrap.lock"  # a dot name: not a version, and kept by remove_stale_temp


def serve(settings: Settings, host: str | None = None, port: int | None = None,
          model: Path | None = None, workers: int | None = None) -> int:
    """The service, able to retrain, with a model to serve; returns the exit code."""
    return serve_app(settings, host, port, model, workers, train_runner=run_train_job,
                     ensure_a_model=ensure_a_model)


def ensure_a_model(settings: Settings) -> None:
    """Build the default model when the artifacts folder has none (or an old-format default).
    Replicas starting together on one shared folder take turns on a lock in it: the first
    builds, the others find its version when they get the lock."""
    root = Path(settings.artifacts_dir)
    current = current_version(root)
    if current is not None and not _stale_default(settings):
        return
    if current is None and any(v["ok"] for v in list_versions(root)):
        # versions trained here and kept, none served (a shop's first one below BM25): never
        # replaced by the synthetic default; the error names them and how to serve one
        resolve_version_dir(root)
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / _BOOTSTRAP_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when this process ends, however it ends
        if current_version(root) is None or _stale_default(settings):
            build_default_model(settings)
    finally:
        os.close(fd)


def build_default_model(settings: Settings) -> Path:
    """Generate the default synthetic data (if missing) and train the first version on it."""
    from recsys.synthetic import generate
    from training.config import TrainConfig
    from training.train import TrainInputs, train

    from .render import print_metrics, progress_bar

    data = settings.default_data_dir
    if not (data / "items.csv").is_file() or not (data / "interactions.csv").is_file():
        log.info("no model yet: generating the default synthetic catalogue", extra={"dir": str(data)})
        generate(data, n_items=settings.default_items, n_queries=settings.default_queries, seed=0)
    inputs = TrainInputs(items=data / "items.csv", interactions=data / "interactions.csv",
                         judgments=_optional(data / "judgments.csv"),
                         probes=_optional(data / "probes.csv"))
    log.info("training the default model", extra={"artifacts_dir": str(settings.artifacts_dir)})
    with progress_bar("training the default model") as on_step:
        cfg = TrainConfig().overriding(epochs=settings.train_epochs)
        result = train(inputs, settings.artifacts_dir, cfg, on_step)
    print_metrics(result.metrics)
    return result.version_dir


def _stale_default(settings: Settings) -> bool:
    """The current version is the default model written by an older release (another model
    format): it is retrained rather than served as an error. A model trained on the user's own
    data is never replaced; the store reports its format and asks for a retrain. So does it
    report a manifest it cannot read (GET /ready, 503 with the file and the problem)."""
    folder = resolve_version_dir(settings.artifacts_dir)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        items = manifest["data"]["items"]["file"]
    except Exception:  # noqa: BLE001 - unreadable: not a default model to retrain
        return False
    if manifest.get("format") == FORMAT_VERSION:
        return False
    stale = Path(str(items)).resolve().parent == Path(settings.default_data_dir).resolve()
    if stale:
        log.warning("the default model is in an older format: training it again",
                    extra={"version": folder.name, "format": manifest.get("format")})
    return stale


def _optional(path: Path) -> Path | None:
    return path if path.is_file() else None
