"""Open an index by where it lives: a directory, or a `postgresql://` URL."""

from __future__ import annotations

from pathlib import Path

from groundqa.index.base import Store
from groundqa.text import Analyzer

URL_SCHEMES = ("postgresql://", "postgres://")


def is_store_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def open_store(location: str | Path, analyzer: Analyzer | None = None) -> Store:
    """The current build at `location`: a PostgreSQL store for a URL, else an index directory."""
    if is_store_url(location):
        from groundqa.index.postgres import PostgresStore

        return PostgresStore.open(str(location))
    from groundqa.index import load_index

    return load_index(Path(location), analyzer)
