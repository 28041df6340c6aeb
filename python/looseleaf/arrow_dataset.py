"""A looseleaf file or dataset as a ``pyarrow.dataset.Dataset``: :class:`ArrowDataset`, which
DuckDB, Polars and anything else that takes a pyarrow dataset scan with their projections and
filters pushed into looseleaf.

>>> a = looseleaf.dataset("s3://bucket/sales").arrow_dataset()  # doctest: +SKIP
>>> duckdb.sql("SELECT sum(amount) FROM a WHERE year = 2024")  # doctest: +SKIP
>>> pl.scan_pyarrow_dataset(a).filter(pl.col("year") == 2024).select("amount").collect()  # doctest: +SKIP
>>> a.last_io_stats["bytes_read"]  # what the last scan read  # doctest: +SKIP

A view rather than :class:`looseleaf.Dataset` itself: ``pyarrow.dataset`` imports pandas where
it is installed (about 280 ms here), which every ``import looseleaf`` would then pay; this
module is imported by :meth:`~looseleaf.Dataset.arrow_dataset` only.

Filters are exact, whatever the caller passes (DuckDB and Polars do not filter again what a
scan returns): the conjuncts the engine takes (:func:`looseleaf.filters.pushdown`) are
evaluated by it, with zone maps and partition pruning; if anything is left, the whole filter is
applied by pyarrow to the rows read, whose columns then include those the filter needs.

Only the methods listed here exist: pyarrow's others (``join``, ``sort_by``, fragments...) raise
``NotImplementedError`` rather than reaching the C++ dataset that this class does not have.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as pds

from .exceptions import InvalidArgumentError
from .filters import Pushdown, pushdown

if TYPE_CHECKING:
    from ._readable import Readable

__all__ = ["ArrowDataset", "Scanner"]

#: Options of pyarrow's scans that have no meaning here (threads, readahead and memory are the
#: engine's own, set by its read options); accepted and ignored so that callers passing them work.
_IGNORED = frozenset(
    {
        "batch_readahead",
        "fragment_readahead",
        "fragment_scan_options",
        "use_threads",
        "cache_metadata",
        "memory_pool",
    }
)


class ArrowDataset(pds.Dataset):
    """``source`` (a :class:`looseleaf.FileReader` or :class:`looseleaf.Dataset`) as a
    ``pyarrow.dataset.Dataset``. ``options`` (:class:`~looseleaf.ReadOptions`) apply to every
    scan. :attr:`last_io_stats` shows what the last scan read, so that pushdown can be checked."""

    def __init__(self, source: Readable, **options: Any) -> None:
        # pyarrow's own constructor is not called: this dataset has no C++ side.
        self._source = source
        self._options = options
        # The last scan started: its native stream, whose counters are live (a stream whose
        # batches were handed over as a whole holds nothing else), or the counters of one that
        # ended (a stream read batch by batch holds its buffers until dropped).
        self._last_read: Any = None

    @property
    def last_io_stats(self) -> dict[str, Any] | None:
        """The I/O counters of the last scan started (bytes, requests, zones skipped, files
        read; so far, if it is still running), or ``None`` before any."""
        last = self._last_read
        return last if last is None or isinstance(last, dict) else last.io_stats()

    @property
    def source(self) -> Readable:
        """The file reader or dataset read."""
        return self._source

    @property
    def schema(self) -> pa.Schema:
        return self._source.schema

    def scanner(
        self,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> Scanner:
        """A scan of ``columns`` (all if ``None``) of the rows ``filter`` selects (a
        ``pyarrow.compute.Expression``, any), in batches of at most ``batch_size`` rows."""
        _check_kwargs(kwargs)
        return Scanner(self, columns, filter, batch_size)

    def to_batches(
        self, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter, **kwargs).to_batches()

    def to_table(self, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).to_table()

    def head(
        self, num_rows: int, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).head(num_rows)

    def take(
        self, indices: Any, columns: Sequence[str] | None = None, filter: Any = None, **kwargs: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **kwargs).take(indices)

    def count_rows(self, filter: Any = None, **kwargs: Any) -> int:
        return self.scanner(None, filter, **kwargs).count_rows()

    def __reduce__(self) -> Any:
        raise TypeError(
            "a looseleaf ArrowDataset cannot be pickled: open the file or dataset where it is used"
        )

    def __repr__(self) -> str:
        return f"looseleaf.ArrowDataset({self._source!r})"


def _unsupported(name: str, member: Any) -> Any:
    def method(self: ArrowDataset, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"looseleaf's ArrowDataset has no {name}: scan it (to_table, to_batches), then use pyarrow"
        )

    method.__name__ = name
    # Attributes of the C++ dataset (partition_expression) are properties: so are their guards.
    return property(method) if inspect.isgetsetdescriptor(member) else method


# Every member of pyarrow's Dataset not defined above would reach its missing C++ side (a crash).
for _name, _member in vars(pds.Dataset).items():
    if _name not in vars(ArrowDataset) and _name not in ("__doc__", "__init__", "__new__", "__pyx_vtable__"):
        setattr(ArrowDataset, _name, _unsupported(_name, _member))


class Scanner:
    """One scan of an :class:`ArrowDataset`, as ``pyarrow.dataset.Scanner`` offers it: read with
    :meth:`to_reader`, :meth:`to_batches` or :meth:`to_table`; each starts a read of its own."""

    def __init__(
        self, dataset: ArrowDataset, columns: Sequence[str] | None, filter: Any, batch_size: int | None
    ) -> None:
        if isinstance(columns, dict):
            raise InvalidArgumentError(
                "scanner: columns as a dict of expressions is not supported: name columns"
            )
        self._dataset = dataset
        self._columns = list(columns) if columns is not None else None
        self._filter = filter
        self._pushdown = pushdown(filter) if filter is not None else Pushdown(None, True, frozenset())
        self._options = dict(dataset._options)
        if batch_size is not None:
            self._options["batch_size"] = batch_size

    @property
    def dataset_schema(self) -> pa.Schema:
        return self._dataset.schema

    @property
    def projected_schema(self) -> pa.Schema:
        schema = self._dataset.schema
        if self._columns is None:
            return schema
        return pa.schema([schema.field(name) for name in self._columns])

    def _read_columns(self) -> list[str] | None:
        """The columns to read: those asked for, and those an inexact filter needs."""
        if self._columns is None or self._pushdown.exact:
            return self._columns
        extra = sorted(self._pushdown.columns - set(self._columns))
        return [*self._columns, *extra]

    def _native_options(self) -> dict[str, Any]:
        if self._pushdown.native is None:
            return self._options
        return {**self._options, "filter": self._pushdown.native}

    def _stream(
        self, columns: list[str] | None, start: int | None = None, num_rows: int | None = None
    ) -> Any:
        stream = self._dataset._source._native.stream(columns, start, num_rows, **self._native_options())
        self._dataset._last_read = stream
        return stream

    def to_batches(
        self, *, start: int | None = None, num_rows: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The batches, one at a time; errors are looseleaf's exceptions naming the file."""
        stream = self._stream(self._read_columns(), start, num_rows)
        schema = self.projected_schema
        try:
            while (exported := stream.next_batch()) is not None:
                batch = pa.RecordBatchReader.from_stream(exported).read_next_batch()
                if not self._pushdown.exact:
                    batch = batch.filter(self._filter)
                if self._columns is not None:
                    batch = batch.select(self._columns)
                yield batch.cast(schema) if batch.schema != schema else batch
        finally:
            # Also when the caller stops early (head, a LIMIT): the stream and its buffers go.
            if self._dataset._last_read is stream:
                self._dataset._last_read = stream.io_stats()

    def to_reader(self) -> pa.RecordBatchReader:
        """The batches as a reader. When the engine evaluates the whole filter, the reader is the
        engine's stream itself (no Python between batches, as DuckDB reads it); its errors are
        then pyarrow's ``ArrowInvalid``, with looseleaf's message naming the file."""
        if self._pushdown.exact:
            reader = pa.RecordBatchReader.from_stream(self._stream(self._read_columns()))
            if reader.schema == self.projected_schema:
                return reader
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def head(self, num_rows: int) -> pa.Table:
        if num_rows < 0:
            raise InvalidArgumentError(f"head: num_rows must not be negative, got {num_rows}")
        # Without a filter, only the rows asked for are read.
        total = self._dataset._source.num_rows
        bounded = {"start": 0, "num_rows": min(num_rows, total)} if self._filter is None else {}
        batches, rows = [], 0
        batches_iter = self.to_batches(**bounded)
        try:
            for batch in batches_iter if num_rows > 0 else ():
                batches.append(batch.slice(0, num_rows - rows))
                rows += batches[-1].num_rows
                if rows >= num_rows:
                    break
        finally:
            batches_iter.close()
        return pa.Table.from_batches(batches, schema=self.projected_schema)

    def take(self, indices: Any) -> pa.Table:
        table = self._dataset._source.take(indices, self._read_columns(), **self._options)
        if self._filter is not None:
            table = table.filter(self._filter)
        return table.select(self._columns) if self._columns is not None else table

    def count_rows(self) -> int:
        source = self._dataset._source
        if self._pushdown.exact:
            return source._native.count_rows(None, None, **self._native_options())
        stream = self._stream(sorted(self._pushdown.columns))
        count = 0
        while (exported := stream.next_batch()) is not None:
            batch = pa.RecordBatchReader.from_stream(exported).read_next_batch()
            count += batch.filter(self._filter).num_rows
        self._dataset._last_read = stream.io_stats()
        return count


def _check_kwargs(kwargs: dict[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _IGNORED)
    if unknown:
        raise InvalidArgumentError(
            f"scanner: unknown option(s) {unknown}; pyarrow's {sorted(_IGNORED)} are ignored"
        )
