"""The service's store: shopper events, version decisions and activations, admin jobs.

SQLAlchemy 2 over SQLite (WAL, the embedded default under the data folder) or PostgreSQL (by
URL); the schema is Alembic's (`store/migrations`), brought to `head` when the service starts.
Infrastructure only: it knows tables and rows, not models or HTTP.
"""
