"""One error tree for every failure a user can cause or fix.

    GroundqaError                 exit 1 unless a subclass says otherwise
    ├── UsageError                a wrong option, value or combination (exit 2)
    ├── CorpusError               the corpus cannot be read as given
    │   ├── LoadError             unreadable, undecodable or malformed file, missing column
    │   ├── EmptyCorpusError      nothing to index under the given paths
    │   └── ValidationBlocked     a BLOCK finding stops indexing (carries the findings)
    ├── IndexError_               the index directory cannot be used as it is
    │   ├── IndexMissingError     no index at that path
    │   ├── IndexCorruptError     manifest missing, incomplete or not matching the files
    │   ├── IndexVersionError     built by an incompatible groundqa version
    │   ├── IndexLockedError      another build holds the index
    │   ├── IndexWriteError       the index cannot be written there: disk full, read-only,
    │   │                         no permission, not an ordinary folder
    │   └── StoreUnavailableError the database behind a store cannot be reached or lacks
    │                             what the store needs
    ├── ProbeError                a probe file or BEIR folder is malformed, or names no
    │                             section the index has
    ├── GenerationError           a generator failed: unreachable, timed out, malformed reply
    ├── EmbeddingError            an embedder failed, or its vectors do not fit the index
    ├── CalibrationError          a probe set cannot calibrate the gate, or a calibration
    │                             belongs to another index
    └── Interrupted               the user stopped a long job (exit 130)

Every message says what is wrong and what to do about it, in one line. The CLI
prints `error: <message>` and exits with `exit_code`; nothing a user did wrong
shows a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundqa.models import Finding


class GroundqaError(Exception):
    """Base of every error groundqa raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"error": self.kind, "message": self.message}


class UsageError(GroundqaError):
    exit_code = 2
    kind = "usage"


class CorpusError(GroundqaError):
    kind = "corpus"


class LoadError(CorpusError):
    kind = "load"

    def __init__(self, message: str, source: str | None = None) -> None:
        super().__init__(message)
        self.source = source


class EmptyCorpusError(CorpusError):
    kind = "empty_corpus"


class ValidationBlocked(CorpusError):
    kind = "validation_blocked"

    def __init__(self, findings: Sequence[Finding]) -> None:
        blocks = [f for f in findings if f.severity == "BLOCK"]
        first = blocks[0] if blocks else None
        where = f" ({first.where()})" if first else ""
        detail = f"{first.check}: {first.message}{where}" if first else "blocking findings"
        more = f" and {len(blocks) - 1} more" if len(blocks) > 1 else ""
        super().__init__(
            f"corpus has {len(blocks)} blocking finding(s): {detail}{more}; "
            "fix them (see `groundqa validate`) and run ingest again; the existing index is unchanged"
        )
        self.findings = list(findings)


class IndexError_(GroundqaError):
    kind = "index"


class IndexMissingError(IndexError_):
    kind = "index_missing"


class IndexCorruptError(IndexError_):
    kind = "index_corrupt"


class IndexVersionError(IndexError_):
    kind = "index_version"


class IndexLockedError(IndexError_):
    kind = "index_locked"


class IndexWriteError(IndexError_):
    """The system refused to write the index where it was asked (an OSError, explained)."""

    kind = "index_write"


class StoreUnavailableError(IndexError_):
    """The database behind a store cannot be reached or lacks what the store needs."""

    kind = "store_unavailable"


class ProbeError(GroundqaError):
    kind = "probe"


class GenerationError(GroundqaError):
    """A generator could not produce an answer. `ask` turns it into an Answer that says so
    and still carries the retrieved passages; it never escapes as a crash."""

    kind = "generation"


class EmbeddingError(GroundqaError):
    """An embedder could not embed (unreachable, malformed reply), or its vectors do not fit
    the index (another model, another dimension). Retrieval cannot go on without it."""

    kind = "embedding"


class CalibrationError(GroundqaError):
    """The gate cannot be calibrated as asked: too few probes, no negative ones, or a
    calibration made for another index."""

    kind = "calibration"


class Interrupted(GroundqaError):
    exit_code = 130
    kind = "interrupted"
