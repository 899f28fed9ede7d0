"""`recsys serve`: make sure there is a model, then run the app under uvicorn (one worker).

With no model under the artifacts folder and no --model, the default synthetic catalogue is
generated and trained first, with a progress bar, so a fresh checkout serves something useful.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import uvicorn

from recsys.artifact import FORMAT_VERSION, current_version, resolve_version_dir

from .config import Settings
from .logs import configure_logging
from .main import create_app

log = logging.getLogger("recsys.api")


def serve(settings: Settings, host: str | None = None, port: int | None = None,
          model: Path | None = None) -> None:
    configure_logging(settings.log_level)
    pinned = None
    if model is not None:
        model = Path(model)
        if (model / "manifest.json").is_file():
            pinned = resolve_version_dir(model)
        else:  # an artifacts folder: serve (and activate versions in) that one
            resolve_version_dir(model)  # ArtifactError, a clean CLI message, when it has no model
            settings = settings.model_copy(update={"artifacts_dir": model})
    elif current_version(settings.artifacts_dir) is None or _stale_default(settings):
        build_default_model(settings)
    app = create_app(settings, model_path=pinned)
    # One worker: requests share the loaded model (plain top-k ones on the event loop, heavier
    # ones in its thread pool, see api/routes/recommend.py); asyncio sets TCP_NODELAY on its own
    # sockets (the multi-worker Nagle stall of uvicorn --workers does not apply).
    config = uvicorn.Config(app, host=host or settings.host, port=port or settings.port, workers=1,
                            log_config=None, access_log=False, lifespan="on",
                            timeout_graceful_shutdown=settings.graceful_timeout_s)
    uvicorn.Server(config).run()


def build_default_model(settings: Settings) -> Path:
    """Generate the default synthetic data (if missing) and train the first version on it."""
    from recsys.synthetic import generate
    from training.config import TrainConfig
    from training.render import print_metrics, progress_bar
    from training.train import TrainInputs, train

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
