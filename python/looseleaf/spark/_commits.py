"""The commit log of a dataset directory: which data files a reader sees, made visible by one
small write per job, so that no step needs an atomic rename (object stores have none). The
core reads and writes it (``looseleaf::dataset``: ``CommitLog``, and ``WriteJob``, which the
Python data source and the JVM connector both drive); this module shows it to Python.

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

from dataclasses import dataclass

from .. import _looseleaf
from ._storage import Storage

#: The schema file of directories without a commit log.
LEGACY_SCHEMA_FILE = "_schema.leaf"


@dataclass(frozen=True)
class Commit:
    """One committed job."""

    job: str
    mode: str
    files: tuple[str, ...]
    schema: str


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
