"""Every setting of the service and the command line, read from `RECSYS_*` environment variables.

This is the one place the environment is read.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECSYS_", extra="ignore")

    artifacts_dir: Path = Field(Path("artifacts"), description="folder of model versions")
    data_dir: Path = Field(Path("data"), description="server-side CSVs the admin API may train from")
    default_data_dir: Path = Field(
        Path("data/generated/default"), description="where the embedded default catalogue is generated"
    )
    host: str = "127.0.0.1"
    port: int = 8000
    admin_token: str | None = Field(None, description="bearer token for /admin; admin is off without it")
    max_query_chars: int = 512
    max_k: int = 100
    max_offset: int = 10_000
    max_list_items: int = 1_000  # candidates, exclude, filter values
    max_body_bytes: int = 1_000_000
    max_upload_bytes: int = 200_000_000
    log_level: str = "info"


def get_settings() -> Settings:
    return Settings()
