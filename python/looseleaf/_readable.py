"""The read methods :class:`~looseleaf.FileReader` and :class:`~looseleaf.Dataset` share.

Both describe a read the same way — ``columns``, the rows (``start``/``num_rows``, or the
indices of ``take``), ``filter``, ``trace`` and the read options — and the engine carries it out
for a file or a dataset alike; this class only adapts the arguments (pyarrow types in and out,
the filter converted by :func:`looseleaf.filters.to_native`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

import pyarrow as pa

from .filters import to_native

if TYPE_CHECKING:
    from . import _looseleaf
    from .arrow_dataset import ArrowDataset
    from .filters import Filter
    from .reader import ReadOptions


class Readable:
    """Reads of a file or a dataset: ``self._native`` is the engine's object."""

    _native: Any

    def stream(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> _looseleaf.ReadStream:
        """Starts a read and returns the native stream, which exports its batches through
        ``__arrow_c_stream__`` (once) and reports its I/O counters with ``io_stats()`` (for a
        dataset, summed over its files, with ``files_read``).

        ``filter`` (a ``pyarrow.compute.Expression`` or ``pyarrow.parquet``'s list of tuples)
        keeps only the rows it selects, as ``table.filter`` would; ``io_stats()`` then counts the
        zones of rows skipped by their statistics (``zones_skipped``) and read (``zones_read``).
        The filter's columns need not be among ``columns``."""
        return self._native.stream(columns, start, num_rows, **with_filter(options, filter))

    def read_all(
        self,
        columns: Sequence[str] | None = None,
        *,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> pa.RecordBatchReader:
        """Streams every row (of ``columns``, in that order) as batches of ``batch_size`` rows.

        Memory stays bounded by the I/O buffer, the page each column is decoding and the
        batches being decoded, whatever the size of the data. ``filter`` keeps only the rows it
        selects (see :meth:`stream`). Errors raise looseleaf's exceptions as the batches are read."""
        return _reader(self.stream(columns, filter=filter, **options))

    def read_range(
        self,
        start: int,
        num_rows: int,
        columns: Sequence[str] | None = None,
        *,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> pa.RecordBatchReader:
        """Streams rows ``start`` to ``start + num_rows`` (which must lie within the rows);
        with ``filter``, only those of them it selects (see :meth:`stream`)."""
        return _reader(self.stream(columns, start=start, num_rows=num_rows, filter=filter, **options))

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> pa.Table:
        """Reads every row (or ``start``/``num_rows``) into a table; with ``filter``, only the
        rows it selects (see :meth:`stream`)."""
        batches = self._native.read_table(columns, start, num_rows, **with_filter(options, filter))
        return pa.RecordBatchReader.from_stream(batches).read_all()

    def take(
        self,
        indices: Any,
        columns: Sequence[str] | None = None,
        *,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> pa.Table:
        """The rows at ``indices`` (any order, repeats allowed), in that order.

        ``indices`` is a sequence of integers, a numpy array of integers, or a pyarrow integer
        array (chunked or not). Only the bytes of those rows are read. With ``filter``, the rows
        at ``indices`` that it selects, still in the order of ``indices`` (see :meth:`stream`)."""
        if isinstance(indices, pa.ChunkedArray):
            indices = indices.combine_chunks()
        batches = self._native.take(indices, columns, **with_filter(options, filter))
        return pa.RecordBatchReader.from_stream(batches).read_all()

    def arrow_dataset(self, **options: Unpack[ReadOptions]) -> ArrowDataset:
        """This file or dataset as a ``pyarrow.dataset.Dataset``, for DuckDB
        (``duckdb.sql("SELECT ... FROM a")``), Polars (``pl.scan_pyarrow_dataset(a)``) and
        anything else that takes one: projections and filters are pushed into looseleaf, and
        ``last_io_stats`` shows what the last scan read. ``options`` apply to every scan. See
        :mod:`looseleaf.arrow_dataset` (which imports ``pyarrow.dataset``, so only then)."""
        from .arrow_dataset import ArrowDataset

        return ArrowDataset(self, **options)

    def count_rows(
        self,
        *,
        start: int | None = None,
        num_rows: int | None = None,
        filter: Filter | None = None,
        **options: Unpack[ReadOptions],
    ) -> int:
        """Rows a read (of ``start``/``num_rows``, with ``filter``) returns: without a filter,
        from metadata alone; with one, only the filter's columns are read (and, in a dataset,
        files its partition parts rule out are skipped)."""
        return self._native.count_rows(start, num_rows, **with_filter(options, filter))


def with_filter(options: dict[str, Any], filter: Filter | None) -> dict[str, Any]:
    """The native call's options: ``options`` and, if there is a filter, its engine form."""
    if filter is None:
        return options
    return {**options, "filter": to_native(filter)}


def _reader(stream: _looseleaf.ReadStream) -> pa.RecordBatchReader:
    """A pyarrow reader of a native stream whose errors are looseleaf's exceptions naming the file
    (a reader made with ``from_stream`` would raise Arrow's ``ArrowInvalid`` instead): the batches
    are pulled one at a time through ``next_batch``, and pyarrow re-raises what its source raised."""

    def batches() -> Any:
        while (batch := stream.next_batch()) is not None:
            yield pa.RecordBatchReader.from_stream(batch).read_next_batch()

    return pa.RecordBatchReader.from_batches(pa.schema(stream.schema), batches())
