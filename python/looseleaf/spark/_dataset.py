"""Datasets of looseleaf files: which files a path names, their schema, and the split of their
rows into Spark input partitions.

Nothing here imports PySpark: it is plain planning over file metadata, testable alone.

A **dataset** is a file, a glob, or a directory, local or in an object store (see
:mod:`._storage`). A directory the data source wrote has a commit log, which names its data
files (see :mod:`._commits`); in any other directory, the data files are the ``*.leaf`` files
whose names do not start with ``_`` or ``.`` (other tools' hidden files), subdirectories
included only with ``recursive=True``. A glob matches whatever it matches, hidden names
excepted.

**Partitioning** works on row ranges, not on files or pages: each file's rows are cut into
equal ranges of about ``target_bytes`` of projected data (the stored bytes of the projection,
from its I/O plan, so a 10-column read of a 1,000-column file is sized by its 10 columns), and
consecutive ranges are packed into partitions of about ``target_bytes``, each range also
costing ``open_cost_bytes`` (Spark's ``spark.sql.files.openCostInBytes`` idea), so that one big
file feeds many tasks and many small files share one.
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from .. import _looseleaf
from ..exceptions import LooseleafError, NotFoundError
from ..reader import FileReader
from ..reader import open as open_file
from ._commits import LEGACY_SCHEMA_FILE, read_log
from ._storage import Storage, has_glob, is_remote, normalize

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


def list_files(paths: Sequence[str], *, recursive: bool = False, storage: Storage | None = None) -> list[str]:
    """The data files of ``paths`` (files, globs, directories), sorted per path and without
    duplicates. A directory with a commit log shows the files its commits make visible (see
    :mod:`._commits`), one without every ``*.leaf`` file not hidden. Raises
    :class:`~looseleaf.NotFoundError` for a path that names nothing."""
    storage = storage or Storage()
    found: list[str] = []
    for raw in paths:
        path = normalize(raw)
        if has_glob(path):
            matches = _glob_files(path, recursive, storage)
            if not matches:
                raise NotFoundError(f"{raw}: no file matches")
            found.extend(matches)
        elif path.endswith(DATA_SUFFIX) and storage.is_file(path):
            found.append(path)
        else:
            files, exists = directory_files(path, recursive, storage)
            if not exists:
                raise NotFoundError(f"{raw}: no such file or directory")
            found.extend(files)
    return list(dict.fromkeys(found))


def directory_files(directory: str, recursive: bool, storage: Storage) -> tuple[list[str], bool]:
    """The data files a reader sees in ``directory`` (chosen by the core,
    ``looseleaf::dataset::directory_files``), and whether it exists at all."""
    files = _looseleaf.dataset_files(directory, storage_options=storage.options, recursive=recursive)
    return files, bool(files) or storage.exists(directory)


def _glob_files(pattern: str, recursive: bool, storage: Storage) -> list[str]:
    """The data files a glob names: files it matches, and the files of directories it matches
    (those below them too with ``recursive``). A name segment of ``*``, ``?`` or ``[...]``
    matches one name; ``**`` matches any depth. Hidden names are skipped unless spelled out, and
    so are files a directory's commit log does not show."""
    separator = "/" if is_remote(pattern) else os.sep
    parts = pattern.split(separator)
    fixed = next(i for i, part in enumerate(parts) if has_glob(part))
    base = separator.join(parts[:fixed])
    depth = len(parts) - fixed
    spelled = set(parts)
    out = []
    for location, _ in storage.list(base, recursive=True):
        relative = location[len(base) :].lstrip(separator).split(separator)
        if any(is_hidden(part) and part not in spelled for part in relative):
            continue
        if "**" in parts:
            matched = fnmatch.fnmatchcase(location, pattern.replace("**", "*"))
        else:
            head = separator.join([*parts[:fixed], *relative[:depth]])
            inside = len(relative) - depth
            matched = (
                len(relative) >= depth
                and fnmatch.fnmatchcase(head, pattern)
                and (inside == 0 or inside == 1 or recursive)
            )
        if matched and location.endswith(DATA_SUFFIX):
            out.append(location)
    return _committed(out, storage)


def _committed(files: list[str], storage: Storage) -> list[str]:
    """``files`` but those of directories with a commit log that the log does not show."""
    visible: dict[str, set[str] | None] = {}
    out = []
    for location in files:
        directory = location[: len(location) - len(storage.name(location))].rstrip("/" + os.sep)
        if directory not in visible:
            log = read_log(directory, storage)
            visible[directory] = None if log is None else set(log.files(storage))
        shown = visible[directory]
        if shown is None or location in shown:
            out.append(location)
    return out


def schema_file(paths: Sequence[str], storage: Storage | None = None) -> str | None:
    """The dataset's schema file, if ``paths`` is one directory that has one (its last commit's,
    or ``_schema.leaf``)."""
    if len(paths) != 1 or has_glob(paths[0]):
        return None
    storage = storage or Storage()
    path = normalize(paths[0])
    if path.endswith(DATA_SUFFIX) and storage.is_file(path):
        return None
    log = read_log(path, storage)
    if log is not None:
        return log.schema_file(storage)
    candidate = storage.join(path, LEGACY_SCHEMA_FILE)
    return candidate if storage.is_file(candidate) else None


def projected_schema(reader: FileReader, columns: Sequence[str] | None) -> pa.Schema:
    """The Arrow schema a read of ``columns`` returns (the engine's own projection rules:
    struct fields keep their file order, a map is read whole, ...), without reading data."""
    return pa.schema(reader.stream(columns, start=0, num_rows=0).schema)


def open_files(
    paths: Sequence[str],
    visit: Callable[[FileReader], T],
    *,
    storage: Storage | None = None,
    threads: int = 16,
) -> list[T]:
    """Opens every file (a few at a time: opening is a small read at the end of each file, done
    without the GIL) and returns ``visit(reader)`` of each, in order. A failure names its file."""
    storage = storage or Storage()

    def one(path: str) -> T:
        try:
            return visit(open_file(path, **storage.open_kwargs()))
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
