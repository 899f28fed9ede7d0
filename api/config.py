"""Every setting of the service and the command line, read from `RECSYS_*` environment variables.

This is the one place the environment is read.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from recsys.synthetic import DEFAULT_ITEMS, DEFAULT_QUERIES


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
    events_token: str | None = Field(
        None, description="bearer token for POST /events; ingestion is off without it")
    database_url: str | None = Field(
        None, description="the store (events, version decisions, jobs): a SQLAlchemy URL such as "
                          "postgresql://user:pw@host/db; unset: SQLite at <data_dir>/recsys.db")
    max_event_batch: int = Field(1000, ge=1, description="events one POST /events may carry")
    max_item_batch: int = Field(1000, ge=1, description="items one PUT /admin/items may carry")
    event_clock_skew_s: float = Field(
        300.0, ge=0, description="how far in the future an event's timestamp may be (clock skew)")
    max_query_chars: int = 512
    max_query_words: int = Field(32, ge=1, description="words a query may have")
    max_word_chars: int = Field(64, ge=1, description="letters one query word may have")
    max_k: int = 100
    max_offset: int = 10_000
    max_list_items: int = 1_000  # candidates, exclude, filter values
    max_filter_keys: int = 32
    # an id's length (an item id, a filter key or value) is no setting: recsys.io.ids.MAX_ID_CHARS,
    # which the items CSV, catalogue changes and every request share
    max_body_bytes: int = 1_000_000
    max_upload_bytes: int = 200_000_000
    max_train_rows: int = Field(
        2_000_000, ge=1, description="lines one training CSV (uploaded or in the data folder) may have")
    train_memory_mb: int = Field(
        4096, ge=0, description="address space a training job may use, in MB (0 = no limit)")
    request_timeout_s: float = Field(
        5.0, gt=0, description="time budget of one scoring request; past it the answer is 503")
    # scoring holds the GIL most of the time: more threads than cores only queue for it, and
    # every one of them delays the event loop's turn (GET /health) by a switch interval
    scoring_threads: int = Field(2, ge=1, description="requests scored at the same time")
    log_level: str = "info"

    # the default model `recsys serve` builds when there is none
    default_items: int = Field(DEFAULT_ITEMS, ge=1)
    default_queries: int = Field(DEFAULT_QUERIES, ge=1)
    # training's defaults are TrainConfig's (training/config.py): these only override them for
    # this server's own runs, and unset leaves them as they are
    train_epochs: int | None = Field(
        None, ge=1, description="most epochs of the default model and of admin retrains that name "
                                "none (unset: TrainConfig's; training stops early)"
    )
    max_train_epochs: int = Field(50, ge=1)
    train_threads: int | None = Field(
        None, ge=0, description="torch threads of a training job (unset: TrainConfig's; 0 = torch default)")
    max_queued_jobs: int = Field(8, ge=1)

    # serving
    # one: a query's matrices are tiny, and intra-op threads only fight the request threads (on a
    # busy 2-core machine, 2 torch threads made a query 50x slower than 1)
    torch_threads: int = Field(1, ge=0, description="torch threads of the service (0 = torch default)")
    # 0.5 s: a poll is two small queries and a file read; processes sharing the store should
    # agree on a running experiment's split within about a second, and every process (worker or
    # replica) must follow an activation within 2 s: under load, the activating process's own
    # swap and a busy follower's turn at the GIL took up to 0.7 s on top of the wait for a poll
    watch_interval_s: float = Field(
        0.5, ge=0, description="how often the service checks the artifacts' `current` pointer, the "
                               "store's newest activation and running experiment (0 = never)"
    )
    graceful_timeout_s: int = Field(10, ge=0, description="seconds in-flight requests get at shutdown")
    # a few seconds: a shopper's click shows in their next answers soon, while a shopper paging
    # or refining a search is answered from memory, one store read per user per few seconds
    profile_ttl_s: float = Field(
        5.0, ge=0, description="seconds a shopper's profile (POST /recommend with a user_id) is "
                               "kept per process before the store is read again (0: every request)")
    profile_users: int = Field(
        10_000, ge=1, description="shoppers' profiles each process keeps at most (the least "
                                  "recently used dropped first)")
    # about 60 searches of ten impressions and their choices
    profile_events: int = Field(
        1000, ge=1, description="a shopper's newest events (impressions, clicks, carts, purchases) a "
                                "profile is built from")
    standby_versions: int = Field(
        1, ge=0, description="versions besides the served one each process keeps loaded (the "
                             "newest): activating one, or rolling back to the one just replaced, "
                             "is then a swap in every process, not a load (0: none)")
    workers: int | None = Field(
        None, ge=1, description="server processes sharing the port (unset: one per core, "
                                "os.cpu_count(); 1: a single process, no supervisor)")
    spare_workers: int = Field(
        1, ge=0, description="with several workers: processes kept loaded (and following the "
                             "store) but not accepting, started once the port is open; one "
                             "replaces a worker that dies at once, while a new spare loads "
                             "(0: none; a dead worker is replaced by a new process, which "
                             "loads first)")
    synonyms_file: Path | None = Field(
        None, description="a synonyms.txt file (`navy => blue`, `sofa, couch, settee`; docs/data.md) "
                          "served beside the store's synonyms (/admin/synonyms, which replace its "
                          "rules name for name); read at start and again at the poll after it changes "
                          "(a broken file keeps the last good one)")
    max_worker_restarts: int = Field(
        5, ge=0, description="crashed workers restarted within a minute before the service gives "
                             "up and exits (non-zero)")

    @field_validator("admin_token", "events_token")
    @classmethod
    def _blank_token_is_off(cls, token: str | None) -> str | None:
        return token if token and token.strip() else None

    @property
    def store_url(self) -> str:
        """The store's URL: RECSYS_DATABASE_URL, or the embedded SQLite file under the data folder."""
        return self.database_url or f"sqlite:///{self.data_dir / 'recsys.db'}"


def get_settings() -> Settings:
    return Settings()
