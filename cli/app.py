"""The service's app as the command line builds it: api's `create_app` with training's retrain
jobs (training/train_job.py). Tests that retrain through the HTTP API build their app here."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from api.main import create_app as create_api_app
from training.train_job import run_train_job


def create_app(*args: Any, **kwargs: Any) -> FastAPI:
    """`api.main.create_app` (the same arguments) with the retrain jobs' runner."""
    return create_api_app(*args, train_runner=run_train_job, **kwargs)
