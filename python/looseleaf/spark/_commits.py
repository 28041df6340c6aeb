"""The commit log of a dataset directory: which data files a reader sees, made visible by one
small write per job, so that no step needs an atomic rename (object stores have none).

Layout of a directory written by the data source::

    part-00000-<job>-<attempt>.leaf     data files, written by the tasks directly in place
    _commits/<job>.json                 one per committed job, written last by the driver
    _commits/<job>.aborted              one per aborted job (empty), written before its cleanup
    _schemas/<job>.leaf                 the dataset's schema (a file with no rows)

``<job>`` starts with the job's start time (``%020d`` nanoseconds), so the commits sort in the
order the jobs started. A commit names its mode (``append`` or ``overwrite``), its files and the
schema file it goes with. **What a reader sees**: the files of the last ``overwrite`` commit and
of every later commit, with the schema of the last commit; data files no commit names (a job
still running, failed, or whose driver died before committing) are invisible. A directory
without ``_commits/`` (written before this protocol, or by other means) shows every ``*.leaf``
file whose name does not start with ``_`` or ``.``, with ``_schema.leaf`` as its schema if there
is one.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

from .. import _looseleaf
from ._storage import Storage

COMMITS_DIR = "_commits"
SCHEMAS_DIR = "_schemas"
#: The schema file of directories without a commit log.
LEGACY_SCHEMA_FILE = "_schema.leaf"
FORMAT_VERSION = 1


def new_job_id() -> str:
    """A job id that sorts by start time."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Commit:
    """One committed job."""

    job: str
    mode: str
    files: tuple[str, ...]
    schema: str

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": FORMAT_VERSION,
                "job": self.job,
                "mode": self.mode,
                "files": list(self.files),
                "schema": self.schema,
            }
        ).encode()


@dataclass(frozen=True)
class CommitLog:
    """The commits of a directory, oldest first."""

    directory: str
    commits: tuple[Commit, ...]

    def visible(self) -> tuple[Commit, ...]:
        """The commits whose files a reader sees."""
        last_overwrite = max((i for i, c in enumerate(self.commits) if c.mode == "overwrite"), default=0)
        return self.commits[last_overwrite:]

    def files(self, storage: Storage) -> list[str]:
        return [storage.join(self.directory, name) for commit in self.visible() for name in commit.files]

    def schema_file(self, storage: Storage) -> str | None:
        return storage.join(self.directory, self.commits[-1].schema) if self.commits else None


def read_log(directory: str, storage: Storage) -> CommitLog | None:
    """The commit log of ``directory``, or ``None`` if it has none (read and checked by the
    core, ``looseleaf::dataset::CommitLog``, which the JVM connector reads too)."""
    commits = _looseleaf.read_commit_log(directory, storage_options=storage.options)
    if commits is None:
        return None
    return CommitLog(
        directory, tuple(Commit(job, mode, tuple(files), schema) for job, mode, files, schema in commits)
    )


def start_log(directory: str, storage: Storage, schema_data: bytes, legacy: list[str]) -> CommitLog:
    """Starts the commit log of a directory that has none, before a job's tasks write into it
    (else a reader listing the directory could see their files before the commit): a first
    commit adopts the files already there (``legacy``), with ``schema_data`` (a looseleaf file
    with no rows) as their schema."""
    job = new_job_id()
    schema = f"{SCHEMAS_DIR}/{job}.leaf"
    storage.write_bytes(storage.join(directory, schema), schema_data)
    commit = Commit(job, "overwrite", tuple(storage.name(f) for f in legacy), schema)
    write_commit(directory, storage, commit)
    return CommitLog(directory, (commit,))


def mark_aborted(directory: str, storage: Storage, job: str) -> None:
    """Records that ``job`` was aborted, before its files are deleted (see :func:`job_ended`)."""
    storage.write_bytes(storage.join(directory, f"{COMMITS_DIR}/{job}.aborted"), b"")


def job_ended(directory: str, storage: Storage, job: str) -> bool:
    """Whether ``job`` was committed or aborted. A task attempt that finishes its file after
    that (Spark does not wait for the attempts it cancels or that lost) deletes the file
    itself: the driver's cleanup, which lists the directory only after writing the commit or
    the abort marker, may have missed it, and no commit will ever name it."""
    commits = storage.join(directory, COMMITS_DIR)
    return any(storage.is_file(storage.join(commits, f"{job}{end}")) for end in (".json", ".aborted"))


def write_commit(directory: str, storage: Storage, commit: Commit) -> None:
    """Makes ``commit``'s files visible (one write, seen whole or not at all)."""
    storage.write_bytes(storage.join(directory, f"{COMMITS_DIR}/{commit.job}.json"), commit.to_json())
