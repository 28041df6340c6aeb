"""Reading looseleaf files: :func:`open` and :class:`FileReader`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from . import _looseleaf
from ._args import columns_arg, count_arg
from .exceptions import InvalidArgumentError

#: Rows per batch of a read unless told otherwise (fewer for rows wider than 256 bytes: a default
#: batch holds at most 2 MiB of stored data).
DEFAULT_BATCH_SIZE = 8192

PathLike = str | os.PathLike[str]


def open(
    path: PathLike,
    *,
    batch_size: int | None = None,
    io_depth: int | None = None,
    io_buffer_bytes: int | None = None,
) -> FileReader:
    """Opens a looseleaf file.

    ``path`` is a local path, ``file://...``, or ``memory://name`` (the process's in-memory
    store). Opening reads the end of the file once; column metadata is read when a column is.

    Keyword arguments set the defaults of every read of this reader:

    - ``batch_size``: rows per output batch; unrelated to the page size. By default 8192, or
      fewer for wide rows (as many as fit in 2 MiB of stored data), so batches stay small.
    - ``io_depth``: reads in flight at once (default 8 for local files and memory).
    - ``io_buffer_bytes``: bytes read ahead of the consumer before reading pauses
      (default 256 MiB for local files and memory). A request for rows lower than everything
      buffered may exceed it, so a read can never deadlock on it.
    """
    native = _looseleaf.FileReader.open(
        path,
        batch_size=count_arg("batch_size", batch_size, minimum=1),
        io_depth=count_arg("io_depth", io_depth, minimum=1),
        io_buffer_bytes=count_arg("io_buffer_bytes", io_buffer_bytes, minimum=1),
    )
    return FileReader(native)


class FileReader:
    """An open looseleaf file. Thread safe; reads may run concurrently."""

    def __init__(self, native: _looseleaf.FileReader) -> None:
        self._native = native
        self._metadata: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        """The file's location."""
        return self._native.location

    @property
    def schema(self) -> pa.Schema:
        """The file's Arrow schema."""
        return pa.schema(self._native.schema)

    @property
    def num_rows(self) -> int:
        """Number of rows."""
        return self._native.num_rows

    @property
    def num_columns(self) -> int:
        """Number of stored columns (nested fields may have several)."""
        return self._native.num_columns

    @property
    def options(self) -> dict[str, int | None]:
        """The reader's defaults: ``batch_size`` (``None``: the default rule), ``io_depth``,
        ``io_buffer_bytes``."""
        return self._native.options

    @property
    def metadata(self) -> dict[str, Any]:
        """Columns, pages, encodings and sizes (reads every column's metadata once)."""
        if self._metadata is None:
            self._metadata = self._native.metadata()
        return self._metadata

    def stream(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        batch_size: int | None = None,
        io_depth: int | None = None,
        io_buffer_bytes: int | None = None,
        dictionary_columns: Sequence[str] | None = None,
    ) -> _looseleaf.ReadStream:
        """Starts a read and returns the native stream, which exports its batches through
        ``__arrow_c_stream__`` (once) and reports its I/O counters with ``io_stats()``."""
        return self._native.scan(
            columns=columns_arg(columns),
            start=count_arg("start", start),
            num_rows=count_arg("num_rows", num_rows),
            batch_size=count_arg("batch_size", batch_size, minimum=1),
            io_depth=count_arg("io_depth", io_depth, minimum=1),
            io_buffer_bytes=count_arg("io_buffer_bytes", io_buffer_bytes, minimum=1),
            dictionary_columns=columns_arg(dictionary_columns),
        )

    def read_all(
        self,
        columns: Sequence[str] | None = None,
        *,
        batch_size: int | None = None,
        io_depth: int | None = None,
        io_buffer_bytes: int | None = None,
        dictionary_columns: Sequence[str] | None = None,
    ) -> pa.RecordBatchReader:
        """Streams every row (of ``columns``, in that order) as batches of ``batch_size`` rows.

        Memory stays bounded by the I/O buffer, the page each column is decoding and the
        batches being decoded, whatever the file size. Columns named in ``dictionary_columns``
        come back as dictionary arrays (dictionary-encoded pages without materialising their
        values), with the narrowest keys (int8, int16 or int32) that index both the largest
        dictionary of the column's pages and a batch of distinct values; columns written from
        dictionary arrays always do, with their own keys."""
        return pa.RecordBatchReader.from_stream(
            self.stream(
                columns,
                batch_size=batch_size,
                io_depth=io_depth,
                io_buffer_bytes=io_buffer_bytes,
                dictionary_columns=dictionary_columns,
            )
        )

    def read_range(
        self,
        start: int,
        num_rows: int,
        columns: Sequence[str] | None = None,
        *,
        batch_size: int | None = None,
        io_depth: int | None = None,
        io_buffer_bytes: int | None = None,
    ) -> pa.RecordBatchReader:
        """Streams rows ``start`` to ``start + num_rows`` (which must lie within the file)."""
        if start is None or num_rows is None:
            raise InvalidArgumentError("read_range needs start and num_rows")
        return pa.RecordBatchReader.from_stream(
            self.stream(
                columns,
                start=start,
                num_rows=num_rows,
                batch_size=batch_size,
                io_depth=io_depth,
                io_buffer_bytes=io_buffer_bytes,
            )
        )

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        batch_size: int | None = None,
        dictionary_columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Reads every row (or ``start``/``num_rows``) into a table (``dictionary_columns`` as
        in :meth:`read_all`)."""
        batches = self._native.read_table(
            columns=columns_arg(columns),
            start=count_arg("start", start),
            num_rows=count_arg("num_rows", num_rows),
            batch_size=count_arg("batch_size", batch_size, minimum=1),
            dictionary_columns=columns_arg(dictionary_columns),
        )
        return pa.table(batches)

    def take(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows at ``indices`` (any order, repeats allowed), in that order.

        ``indices`` is anything ``pyarrow.array`` accepts as integers (a list, a numpy array, a
        pyarrow array). Only the bytes of those rows are read."""
        return pa.table(self._native.take(_indices_arg(indices), columns=columns_arg(columns)))

    def plan(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        indices: Any = None,
    ) -> dict[str, Any]:
        """The I/O a read would make, computed without reading any data.

        Returns totals (``requests``; storage ``reads``; ``bytes`` asked for and ``read_bytes``
        read, which includes the small gaps merged reads span), totals per column (``columns``),
        and every request (``request_list``, with its priority: the lowest row it serves).
        Requests that depend on data read earlier (the bytes of strings when only some rows are
        read) are counted in ``indirect_requests`` with an upper bound of their bytes."""
        return self._native.plan(
            columns=columns_arg(columns),
            start=count_arg("start", start),
            num_rows=count_arg("num_rows", num_rows),
            indices=None if indices is None else _indices_arg(indices),
        )

    def __repr__(self) -> str:
        return (
            f"looseleaf.FileReader({self.path!r}, num_rows={self.num_rows}, num_columns={self.num_columns})"
        )


def _indices_arg(indices: Any) -> pa.Array:
    try:
        if isinstance(indices, pa.ChunkedArray):
            indices = indices.combine_chunks()
        array = indices if isinstance(indices, pa.Array) else pa.array(indices)
        if len(array) == 0 and pa.types.is_null(array.type):
            array = pa.array([], pa.int64())
        if not pa.types.is_integer(array.type):
            raise InvalidArgumentError(f"row indices must be integers, got {array.type}")
        return array.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise InvalidArgumentError(f"row indices must be integers: {e}") from e
