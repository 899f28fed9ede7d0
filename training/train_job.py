"""One retrain job of the service (api/jobs.py), run in its spawned worker process: the job's
arguments -> the inputs `train` reads -> a new version in the staging folder. The command line
hands this function to the service (cli/app.py): api/ never imports training/."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .config import TrainConfig
from .train import TrainInputs, train


def run_train_job(args: dict[str, Any], staging: Path,
                  on_step: Callable[[int, int, float], None]) -> dict[str, Any]:
    """Train into `staging`; returns the new version's name, metrics and manifest."""
    def path(name: str) -> Path | None:
        return Path(args[name]) if args.get(name) else None

    cfg = TrainConfig().overriding(epochs=args["epochs"], seed=args["seed"], threads=args["threads"])
    events = args.get("events")
    if events:
        from .events import inputs_from_events

        since = datetime.fromisoformat(events["since"]) if events.get("since") else None
        inputs = inputs_from_events(events["url"], since, staging, cfg.held_out_fraction,
                                    items=path("items"), schema=path("schema"),
                                    served=path("baseline"), judgments=path("judgments"),
                                    probes=path("probes"))
    else:
        inputs = TrainInputs(items=Path(args["items"]), interactions=path("interactions"),
                             schema=path("schema"), judgments=path("judgments"),
                             probes=path("probes"), baseline=path("baseline"),
                             on_bad_lines=args.get("on_bad_lines", "error"))
    result = train(inputs, staging, cfg, on_step)
    return {"version": result.version_dir.name, "metrics": result.metrics, "manifest": result.manifest}
