"""Reading looseleaf files: :func:`open` and :class:`FileReader`.

Every read method takes the same keyword options (:class:`ReadOptions`); :func:`open` takes them
too, as the defaults of the reader's reads. The options are checked by the engine, so a bad value
raises the same :class:`~looseleaf.InvalidArgumentError` (a ``ValueError``), naming the option,
from every method.

Every read method also takes ``filter``: a ``pyarrow.compute.Expression`` (as
``pyarrow.dataset`` takes) or the list of ``(column, op, value)`` tuples of
``pyarrow.parquet.read_table(filters=...)``. Only the rows it selects are returned, exactly as
``table.filter(expression)`` would keep them from the unfiltered read, in file order; the
engine skips the zones of rows (``zone_map_rows`` of the writer) whose statistics rule it out.

>>> reader.to_table(filter=(pc.field("qty") < 24) & pc.field("kind").isin(["a", "b"]))  # doctest: +SKIP
>>> reader.to_table(filter=[("qty", "<", 24), ("kind", "in", ["a", "b"])])  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import pyarrow as pa

from . import _looseleaf
from ._readable import Readable, with_filter

if TYPE_CHECKING:
    from .filters import Filter
    from .trace import Trace

PathLike = str | os.PathLike[str]


class ReadOptions(TypedDict, total=False):
    """Keyword options of :func:`open` and of every read method.

    - ``batch_size``: rows per output batch; unrelated to the page size. By default 65,536
      (32,768 with ``dictionary_columns``, so that keys stay ``int16``), or fewer for wide
      columns and rows (as many as fit in 2 MiB of the widest column's stored data and in
      64 MiB of the whole row's), so batches stay within a page of each column and bounded in
      memory; a short read gets at least four batches per decode thread (down to 8,192 rows),
      so that none waits idle.
    - ``io_depth``: reads in flight at once: a number, or ``"auto"`` to find the depth where
      throughput stops rising (and back off when the store throttles). Default: 8 for local
      files and memory, ``"auto"`` between 8 and 256 for object stores.
    - ``io_depth_min``, ``io_depth_max``: the bounds of an adaptive depth.
    - ``io_buffer_bytes``: the I/O buffer, bytes read ahead of the consumer before reading pauses
      (default 128 MiB for local files and memory); a number or a size such as ``"64 MiB"``. A
      request for rows lower than everything buffered may exceed it, so a read never deadlocks
      on it. The promise: a read holds at most the buffer, plus the pages its decoders wait for
      when the buffer is smaller than them (at most two pages of each column read), plus the
      batches in flight (``decode_parallelism + 3`` batches, and the result of a ``take``),
      plus a small constant — whatever the file's size, the number of columns or the page
      size; and it never deadlocks, down to a buffer of one byte. Reads of scattered rows
      (``take``) are decoded in steps whose pages fit the buffer, so they keep to it too.
    - ``io_budget``: an :class:`IoBudget` shared with other reads (default: the one set by
      :func:`set_io_budget`, if any). Every read given it counts its bytes and its reads in
      flight there, on top of its own ``io_buffer_bytes`` and ``io_depth``: ``N`` concurrent
      reads then hold one budget and run one depth of reads, not ``N``. Each read keeps its
      own way past the budget for the rows its decoders wait for (priorities of different
      reads cannot be compared), so the promise becomes: the shared budget, plus each read's
      own minimum progress (the pages its decoders wait for) and batches in flight, plus a
      constant; and still no deadlock, whatever the other reads do.
    - ``dictionary_columns``: top-level columns returned as dictionary arrays (dictionary-encoded
      pages without materialising their values), with the narrowest keys (int8, int16 or int32)
      that index both the largest dictionary of the column's pages and a batch of distinct
      values; columns written from dictionary arrays always are, with their own keys.
    - ``decode_parallelism``: decode threads a read keeps busy (default: the number of CPUs);
      one batch more than this is decoded at once.
    - ``verify_checksums``: check every page buffer read whole against the CRC-32 the writer
      stored (default ``True``; files written before format 2.0 have none). A mismatch raises
      :class:`CorruptFileError` naming the column and page. ``False`` saves about 50 ms per GB
      read, at the price of damaged data going unnoticed.
    - ``string_view``: return strings and binaries (at any depth) as ``string_view`` /
      ``binary_view`` (Arrow's ``Utf8View``/``BinaryView``, what Vortex and Polars return):
      a 16-byte view per value over the bytes as decoded — the page read for plain pages, the
      dictionary for dictionary-encoded ones — so no string is copied (default ``False``).
      Dictionary columns keep their value type.
    - ``trace``: a :class:`~looseleaf.Trace` to record the read in (read methods only, not
      :func:`open`): every I/O request (queued, issued, completed; whether it went past the
      budget), the scheduling loop, each decode task, each batch handed out and the I/O buffer
      over time, for ``trace.to_png(path)`` or ``trace.to_chrome_json(path)`` (Perfetto). A
      filtered read records all its stages. Without it, a read records nothing and pays
      nothing measurable.
    """

    batch_size: int
    io_depth: int | str
    io_depth_min: int
    io_depth_max: int
    io_buffer_bytes: int | str
    io_budget: _looseleaf.IoBudget
    dictionary_columns: Sequence[str]
    decode_parallelism: int
    verify_checksums: bool
    string_view: bool
    trace: Trace


def open(
    path: PathLike,
    *,
    storage_options: Mapping[str, Any] | None = None,
    **options: Unpack[ReadOptions],
) -> FileReader:
    """Opens a looseleaf file.

    ``path`` is a local path, a ``file://`` URL, ``memory://name`` (the process's in-memory
    store), or an object store URL: ``s3://bucket/key`` (or ``s3a://``), ``gs://``, ``az://``,
    ``abfs[s]://``, ``http[s]://``. ``storage_options`` configures the store with
    ``object_store``'s keys (``aws_endpoint``, ``aws_region``, ``aws_access_key_id``,
    ``aws_secret_access_key``, ``aws_allow_http``, ``google_service_account``, ...), on top of
    the environment's (``AWS_*`` variables and the like); secrets never appear in an error.
    A reader reads the version it opened: an object overwritten, or a local file truncated or
    rewritten in place, since then raises :class:`ObjectChangedError`. Local files are read with
    copies; ``storage_options={"memory_map": True}`` maps large reads instead (on Linux; faster
    first reads, the default on read-only file systems) for files nothing rewrites in place
    while they are read (a file truncated while batches share its pages would end the process
    with ``SIGBUS``).

    Opening reads the end of the file once (one request to an object store);
    column metadata is read when a column is. ``options`` (see :class:`ReadOptions`) are the
    defaults of every read of this reader."""
    return FileReader(_looseleaf.FileReader.open(path, storage_options=storage_options, **options))


class FileReader(Readable):
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
    def options(self) -> dict[str, Any]:
        """The reader's read options: ``batch_size`` (``None``: the default rule), ``io_depth``,
        ``io_buffer_bytes`` (the storage's defaults unless set), ``dictionary_columns``,
        ``decode_parallelism``, ``verify_checksums``, ``string_view``."""
        return self._native.options

    @property
    def metadata(self) -> dict[str, Any]:
        """Columns, pages, encodings and sizes (reads every column's metadata once)."""
        if self._metadata is None:
            self._metadata = self._native.metadata()
        return self._metadata

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
        """The I/O a read would make, computed without reading any data.

        Returns totals (``requests``; storage ``reads``; ``bytes`` asked for and ``read_bytes``
        read, which includes the small gaps merged reads span), totals per column (``columns``),
        and every request (``request_list``, with its priority: the lowest row it serves).
        Requests that depend on data read earlier (the bytes of strings when only some rows are
        read) are counted in ``indirect_requests`` with an upper bound of their bytes.

        With ``filter`` (see :meth:`stream`), the plan has a ``"filter"`` key: the zones of rows
        and those their statistics rule out (skipped)."""
        if isinstance(indices, pa.ChunkedArray):
            indices = indices.combine_chunks()
        return self._native.plan(columns, start, num_rows, indices, **with_filter(options, filter))

    def __repr__(self) -> str:
        return (
            f"looseleaf.FileReader({self.path!r}, num_rows={self.num_rows}, num_columns={self.num_columns})"
        )
