"""Open an index by where it lives: a directory, or a `postgresql://` URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundqa.index.base import Store
from groundqa.index.manifest import Manifest, current_build, read_manifest, update_part

URL_SCHEMES = ("postgresql://", "postgres://")


def is_store_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def open_store(location: str | Path) -> Store:
    """The current build at `location`: a PostgreSQL store for a URL, else an index directory."""
    if is_store_url(location):
        from groundqa.index.postgres import PostgresStore

        return PostgresStore.open(str(location))
    from groundqa.index.directory import load_index

    return load_index(Path(location))


def current_manifest(location: str | Path) -> Manifest:
    """The manifest of the build served now, wherever the index lives."""
    if is_store_url(location):
        from groundqa.index.postgres import read_current_manifest

        return read_current_manifest(str(location))
    return read_manifest(current_build(Path(location)))


def set_gate(
    location: str | Path, gate: dict[str, Any], fingerprint: str | None = None
) -> Manifest:
    """Replace the current build's gate settings (refused when `fingerprint` is not current)."""
    return set_part(location, "gate", gate, fingerprint)


def set_part(
    location: str | Path, part: str, value: dict[str, Any], fingerprint: str | None = None
) -> Manifest:
    """Replace one updatable part of the current build's manifest (`gate` or `retrieval`),
    wherever the index lives; refused when `fingerprint` is not the current build."""
    if is_store_url(location):
        from groundqa.index import postgres

        return postgres.update_part(str(location), part, value, fingerprint)
    return update_part(Path(location), part, value, fingerprint)
