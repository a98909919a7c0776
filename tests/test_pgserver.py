"""The PostgreSQL the tests get: 18 or later, pgvector in `pg_url`, none in `pg_url_novector`."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip(
    "psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'"
)


def test_server_is_postgresql_18_or_later(pg_admin_url: str) -> None:
    with psycopg.connect(pg_admin_url) as conn:
        assert conn.info.server_version >= 180000
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None and int(row[0].split(".")[0]) >= 18


def test_pg_url_has_pgvector(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT '[1,2,3]'::vector <#> '[1,0,0]'::vector").fetchone()
        assert row == (-1.0,)
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert ext.fetchone() is not None


def test_pg_url_novector_cannot_create_the_extension(pg_url_novector: str) -> None:
    with psycopg.connect(pg_url_novector, autocommit=True) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        assert row == (False,)
        assert (
            conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE EXTENSION vector")
