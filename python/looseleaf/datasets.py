"""Datasets of many looseleaf files: :func:`dataset` and :func:`write_dataset`.

A dataset is a directory (or object store prefix) of ``.leaf`` files at any depth, a glob
(``s3://bucket/sales/year=*/*.leaf``), a single file, or a list of files. Hive-style
``key=value`` directories become columns after the files' own (types discovered as
``pyarrow.dataset``'s ``partitioning="hive"`` does: ``int32`` when every value is a small
integer, ``int64`` when a larger one, else ``string``; ``__HIVE_DEFAULT_PARTITION__`` is null),
and a filter on them skips whole files without opening them for reading. Every file's schema is
checked on open; the first file that disagrees is named.

>>> ds = looseleaf.dataset("s3://bucket/sales/", storage_options={...})  # doctest: +SKIP
>>> ds.to_table(columns=["amount", "year"], filter=pc.field("year") == 2024)  # doctest: +SKIP
>>> ds.take([0, 10_000_000])  # rows numbered across files, in ``ds.files`` order  # doctest: +SKIP

The engine does the work (listing, opening, pruning, concurrent reads within one byte budget,
``take`` across files); this module only adapts arguments, as :mod:`looseleaf.reader` does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

import pyarrow as pa

from . import _looseleaf
from ._readable import Readable, with_filter
from .reader import ReadOptions

if TYPE_CHECKING:
    from .filters import Filter

PathLike = str | os.PathLike[str]


def dataset(
    source: PathLike | Sequence[PathLike],
    *,
    storage_options: Mapping[str, Any] | None = None,
    partitioning: Literal["hive"] | pa.Schema | None = "hive",
    **options: Unpack[ReadOptions],
) -> Dataset:
    """Opens the dataset at ``source``: a directory or prefix, a glob, a file, or a list of files.

    ``partitioning`` is ``"hive"`` (``key=value`` directories read as columns, types
    discovered), a ``pyarrow.Schema`` of the partition columns (their types; integers, strings
    and booleans), or ``None`` (directories are not columns). ``storage_options`` are those of
    :func:`looseleaf.open`; ``options`` (:class:`~looseleaf.ReadOptions`) are the defaults of
    every read. Opening lists the files and reads each file's tail (one request per file,
    32 at a time)."""
    one = isinstance(source, (str, os.PathLike))
    source = os.fspath(source) if one else [os.fspath(s) for s in source]
    native = _looseleaf.Dataset.open(
        source,
        storage_options=storage_options,
        partitioning="none" if partitioning is None else partitioning,
        **options,
    )
    return Dataset(native)


class Dataset(Readable):
    """Many looseleaf files read as one table. Thread safe; reads may run concurrently.

    Rows are numbered across files in the order of :attr:`files` (``take`` uses those numbers).
    A read streams the files in that order, several files read ahead at once within the read's
    ``io_buffer_bytes`` (one budget shared by the files, not one each)."""

    def __init__(self, native: _looseleaf.Dataset) -> None:
        self._native = native

    @property
    def schema(self) -> pa.Schema:
        """The rows' schema: the files' columns, then the partition columns."""
        return pa.schema(self._native.schema)

    @property
    def partition_schema(self) -> pa.Schema:
        """The partition columns (empty without ``key=value`` directories)."""
        return pa.schema(self._native.partition_schema)

    @property
    def files(self) -> list[str]:
        """The data files, in row order."""
        return self._native.files

    @property
    def file_partitions(self) -> pa.Table:
        """The partition values of each file: one row per file of :attr:`files`, in order."""
        return pa.RecordBatchReader.from_stream(self._native.file_partitions()).read_all()

    @property
    def file_rows(self) -> list[int]:
        """Rows of each file of :attr:`files`, in order."""
        return self._native.file_rows

    @property
    def num_rows(self) -> int:
        """Rows in all files (from their metadata)."""
        return self._native.num_rows

    def plan(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        indices: Any = None,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> dict[str, Any]:
        """The I/O a read would make, without reading data: ``files`` (per file, the plan
        :meth:`looseleaf.FileReader.plan` gives, with ``file`` and ``pruned``: ruled out by its
        partition values), and the totals ``requests``, ``bytes``, ``files_read`` and
        ``files_pruned``."""
        if isinstance(indices, pa.ChunkedArray):
            indices = indices.combine_chunks()
        files = self._native.plan(columns, start, num_rows, indices, **with_filter(options, filter))
        read = [f for f in files if not f["pruned"]]
        return {
            "files": files,
            "files_read": len(read),
            "files_pruned": len(files) - len(read),
            "requests": sum(f["requests"] for f in read),
            "bytes": sum(f["bytes"] for f in read),
        }

    def __repr__(self) -> str:
        return f"looseleaf.Dataset(files={len(self.files)}, num_rows={self.num_rows}, schema={self.schema})"


def write_dataset(
    data: Any,
    uri: PathLike,
    *,
    partitioning: Sequence[str] | None = None,
    max_rows_per_file: int | None = None,
    max_open_files: int | None = None,
    existing_data: Literal["error", "append", "overwrite"] = "error",
    schema: pa.Schema | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> list[str]:
    """Writes Arrow data as a directory of looseleaf files; returns the files written.

    ``data`` is anything :func:`looseleaf.write_table` takes. ``partitioning`` names top-level
    columns (integers, strings, booleans) whose values become ``key=value`` directories, as
    ``pyarrow.dataset.write_dataset(partitioning_flavor="hive")`` and Spark's ``partitionBy``
    write them (the columns are not stored in the files). ``max_rows_per_file`` starts a new
    file after that many rows; ``max_open_files`` (default 64) bounds the files being written
    at once (each holds its unfinished pages), finishing the least recently written first.
    ``existing_data``: ``"error"`` refuses a directory holding data files, ``"append"`` adds
    files of the same columns, ``"overwrite"`` replaces the dataset. Other keywords are
    :class:`looseleaf.FileWriter`'s (``page_size``, ``compression``, ...).

    The write is one commit of the directory's log: :func:`looseleaf.dataset` sees the dataset
    as it was until the last file is written, then all of the write at once; a write that fails
    deletes what it wrote, and one whose process dies leaves nothing readers see."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not hasattr(data, "__arrow_c_stream__"):
        batches = iter(data)
        if schema is None:
            first = next(batches, None)
            if first is None:
                from .exceptions import InvalidArgumentError

                raise InvalidArgumentError("write_dataset: no data and no schema")
            schema = first.schema
            batches = _chain(first, batches)
        data = pa.RecordBatchReader.from_batches(schema, batches)
    return _looseleaf.write_dataset(
        data,
        os.fspath(uri),
        partition_by=list(partitioning) if partitioning else None,
        max_rows_per_file=max_rows_per_file,
        max_open_files=max_open_files,
        existing_data=existing_data,
        storage_options=storage_options,
        **options,
    )


def _chain(first: pa.RecordBatch, rest: Any) -> Any:
    yield first
    yield from rest
