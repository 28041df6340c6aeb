"""Datasets of looseleaf files: which files a path names, their schema, and the split of their
rows into Spark input partitions.

Nothing here imports PySpark: it is plain planning over file metadata, testable alone.

A **dataset** is a file, a glob, or a directory. In a directory, the data files are the
``*.leaf`` files whose names do not start with ``_`` or ``.`` (those are the writer's schema file,
its ``_temporary/`` staging directory, and other tools' hidden files); subdirectories are read
only with ``recursive=True``. A glob matches whatever it matches, hidden names excepted.

**Partitioning** works on row ranges, not on files or pages: each file's rows are cut into
equal ranges of about ``target_bytes`` of projected data (the stored bytes of the projection,
from its I/O plan, so a 10-column read of a 1,000-column file is sized by its 10 columns), and
consecutive ranges are packed into partitions of about ``target_bytes``, each range also
costing ``open_cost_bytes`` (Spark's ``spark.sql.files.openCostInBytes`` idea), so that one big
file feeds many tasks and many small files share one.
"""

from __future__ import annotations

import glob
import itertools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from .. import _looseleaf
from ..exceptions import InvalidArgumentError, LooseleafError, NotFoundError, UnsupportedError
from ..reader import FileReader
from ..reader import open as open_file

#: Name of the schema file the Spark writer leaves in a dataset directory: a looseleaf file
#: with no rows. Readers use it for the schema of a directory (and of an empty one).
SCHEMA_FILE = "_schema.leaf"

#: Staging directory of the Spark writer: ``_temporary/<job id>/``.
TEMPORARY_DIR = "_temporary"

#: Suffix of data files in a dataset directory.
DATA_SUFFIX = ".leaf"

DEFAULT_TARGET_BYTES = 128 * 1024 * 1024
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024

T = TypeVar("T")


@dataclass(frozen=True)
class FileRange:
    """Rows ``start`` to ``start + count`` of the file at ``path``."""

    path: str
    start: int
    count: int


@dataclass(frozen=True)
class FileInfo:
    """What partitioning needs to know of one file."""

    path: str
    num_rows: int
    #: Bytes a read of the projection over all rows would fetch (from the file's I/O plan).
    projected_bytes: int


@dataclass(frozen=True)
class PartitionOptions:
    """How rows are split into partitions (see the module documentation)."""

    target_bytes: int = DEFAULT_TARGET_BYTES
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES
    min_partitions: int = 1


def is_hidden(name: str) -> bool:
    """Names that readers skip: ``_schema.leaf``, ``_temporary``, ``.crc`` files, ..."""
    return name.startswith(("_", "."))


def local_path(path: str) -> str:
    """A local path from a path or ``file://`` URI (parsed by the engine); other schemes are
    refused (Spark tasks run in other processes, so ``memory://`` cannot work either)."""
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"a looseleaf dataset path must be a non-empty string, got {path!r}")
    try:
        scheme, parsed = _looseleaf.parse_location(path)
    except UnsupportedError as e:
        raise InvalidArgumentError(
            f"{path}: the Spark data source reads and writes local (or shared, mounted) paths and "
            f"file:// URIs only ({e})"
        ) from None
    if scheme != "file":
        raise InvalidArgumentError(f"{path}: Spark tasks run in other processes and cannot read {scheme}://")
    return os.path.abspath(os.path.expanduser(parsed))


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def list_files(paths: Sequence[str], *, recursive: bool = False) -> list[str]:
    """The data files of ``paths`` (files, globs, directories), sorted per path and without
    duplicates. Raises :class:`~looseleaf.NotFoundError` for a path that names nothing."""
    found: list[str] = []
    for raw in paths:
        path = local_path(raw)
        if _has_magic(path):
            matches = [m for m in sorted(glob.glob(path, recursive=True)) if not _hidden_below(m, path)]
            if not matches:
                raise NotFoundError(f"{raw}: no file matches")
            for match in matches:
                found.extend(_directory_files(match, recursive) if os.path.isdir(match) else [match])
        elif os.path.isdir(path):
            found.extend(_directory_files(path, recursive))
        elif os.path.exists(path):
            found.append(path)
        else:
            raise NotFoundError(f"{raw}: no such file or directory")
    return list(dict.fromkeys(found))


def _hidden_below(match: str, pattern: str) -> bool:
    """Whether a glob match has a hidden component the pattern did not spell out."""
    spelled = set(pattern.split(os.sep))
    return any(is_hidden(part) and part not in spelled for part in match.split(os.sep))


def _directory_files(directory: str, recursive: bool) -> list[str]:
    files: list[str] = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if is_hidden(entry.name):
                continue
            if entry.is_dir():
                if recursive:
                    files.extend(_directory_files(entry.path, recursive))
            elif entry.name.endswith(DATA_SUFFIX):
                files.append(entry.path)
    return files


def schema_file(paths: Sequence[str]) -> str | None:
    """The writer's schema file, if ``paths`` is one directory that has one."""
    if len(paths) != 1:
        return None
    path = local_path(paths[0])
    candidate = os.path.join(path, SCHEMA_FILE)
    return candidate if not _has_magic(path) and os.path.isfile(candidate) else None


def projected_schema(reader: FileReader, columns: Sequence[str] | None) -> pa.Schema:
    """The Arrow schema a read of ``columns`` returns (the engine's own projection rules:
    struct fields keep their file order, a map is read whole, ...), without reading data."""
    return pa.schema(reader.stream(columns, start=0, num_rows=0).schema)


def open_files(paths: Sequence[str], visit: Callable[[FileReader], T], *, threads: int = 16) -> list[T]:
    """Opens every file (a few at a time: opening is a small read at the end of each file, done
    without the GIL) and returns ``visit(reader)`` of each, in order. A failure names its file."""

    def one(path: str) -> T:
        try:
            return visit(open_file(path))
        except LooseleafError:
            raise  # already names the file
        except Exception as e:
            raise type(e)(f"{path}: {e}") from e

    if len(paths) <= 1:
        return [one(p) for p in paths]
    with ThreadPoolExecutor(max_workers=min(threads, len(paths))) as pool:
        return list(pool.map(one, paths))


def file_info(reader: FileReader, columns: Sequence[str] | None) -> FileInfo:
    """Rows and projected bytes of one file. Uses the I/O plan of the projection, which reads
    only the metadata of the projected columns."""
    num_rows = reader.num_rows
    projected = reader.plan(columns)["bytes"] if num_rows else 0
    return FileInfo(reader.path, num_rows, projected)


def plan_partitions(files: Iterable[FileInfo], options: PartitionOptions) -> list[list[FileRange]]:
    """Splits the rows of ``files`` into partitions of about ``options.target_bytes``.

    Each file is cut into equal row ranges (so no range is a small leftover), then ranges are
    packed in file order. Like Spark's file sources, the partition size is lowered for small
    datasets so that there are at least ``min_partitions`` (when the data allows), but never
    below ``open_cost_bytes``."""
    files = [f for f in files if f.num_rows > 0]
    if not files:
        return []
    open_cost = options.open_cost_bytes
    total = sum(f.projected_bytes + open_cost for f in files)
    split = min(options.target_bytes, max(open_cost, math.ceil(total / max(1, options.min_partitions))))
    ranges: list[tuple[FileRange, int]] = []
    for f in files:
        pieces = max(1, min(f.num_rows, math.ceil(f.projected_bytes / split)))
        bounds = [f.num_rows * i // pieces for i in range(pieces + 1)]
        for start, end in itertools.pairwise(bounds):
            count = end - start
            cost = math.ceil(f.projected_bytes * count / f.num_rows) + open_cost
            ranges.append((FileRange(f.path, start, count), cost))
    partitions: list[list[FileRange]] = []
    current: list[FileRange] = []
    current_bytes = 0
    for file_range, cost in ranges:
        if current and current_bytes + cost > split:
            partitions.append(current)
            current, current_bytes = [], 0
        current.append(file_range)
        current_bytes += cost
    if current:
        partitions.append(current)
    return partitions


def parse_columns(value: str | Sequence[str] | None) -> list[str] | None:
    """The ``columns`` option: comma-separated column paths (``a, meta.score``), duplicates
    dropped; ``None`` or empty means every column."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    columns = [c.strip() for c in items if c.strip()]
    return list(dict.fromkeys(columns)) or None
