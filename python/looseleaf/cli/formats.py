"""The formats the CLI reads and writes, batch by batch: looseleaf, Parquet, Arrow IPC and CSV.

:func:`open_source` gives a :class:`Source` (a schema and an iterator of record batches) and
:func:`open_sink` a :class:`Sink`; both stream, so memory stays around a batch (and, for
looseleaf, a page per column) whatever the size of the data.

Locations: looseleaf files and datasets go through :mod:`looseleaf`, so they are anything
:func:`looseleaf.open` takes (object store URLs with ``storage_options``). The other formats go
through ``pyarrow.fs``: local paths, ``file://``, and URLs ``pyarrow.fs.FileSystem.from_uri``
knows (``s3://``, ``gs://``, ``hdfs://``, ...). For ``s3://`` the storage options' S3 keys
(``aws_endpoint``, ``aws_region``, ``aws_access_key_id``, ``aws_secret_access_key``,
``aws_session_token``, ``aws_allow_http``) are translated to ``pyarrow.fs.S3FileSystem``'s; any
other key, or storage options on another scheme, is an error rather than silently ignored.

What this module deliberately does not do: read or write looseleaf itself (that is
:mod:`looseleaf`), guess CSV types beyond what ``pyarrow.csv`` infers from the first block, or
filter anything but looseleaf (the engine does that).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

import looseleaf

from ._common import CliError, is_dataset_path, open_dataset
from .text import csv_batch, csv_schema

#: Format names and the extensions that imply them.
EXTENSIONS = {
    "leaf": (".leaf",),
    "parquet": (".parquet", ".pq"),
    "arrow": (".arrow", ".feather", ".ipc", ".arrows"),
    "csv": (".csv",),
}
FORMATS = tuple(EXTENSIONS)

#: Rows per batch read from Parquet and CSV.
BATCH_ROWS = 65_536


def guess_format(path: str, *, default: str | None = None) -> str:
    """The format of ``path`` from its extension (a dataset is looseleaf); ``default`` when the
    extension is unknown, or a :class:`CliError` if there is none."""
    if is_dataset_path(path):
        return "leaf"
    name = path.split("?", 1)[0].lower()
    for fmt, extensions in EXTENSIONS.items():
        if name.endswith(extensions):
            return fmt
    if default is not None:
        return default
    known = ", ".join(e for extensions in EXTENSIONS.values() for e in extensions)
    raise CliError(f"cannot tell the format of {path} from its extension ({known}): pass --to FORMAT")


@dataclass
class Source:
    """Record batches being read; :meth:`close` stops the read (idempotent).

    ``num_rows``: the rows the batches will hold, if known before reading them; ``fraction``:
    how much of the input was read so far (0 to 1), for progress when ``num_rows`` is unknown.
    """

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    num_rows: int | None = None
    fraction: Callable[[], float | None] = lambda: None
    _closers: list[Callable[[], Any]] = field(default_factory=list)

    def close(self) -> None:
        while self._closers:
            with contextlib.suppress(Exception):
                self._closers.pop()()


def open_source(
    path: str,
    fmt: str,
    *,
    columns: Sequence[str] | None = None,
    filter: Any = None,
    limit: int | None = None,
    storage_options: dict[str, str],
) -> Source:
    """Starts reading ``path`` (format ``fmt``): ``columns`` only (all if ``None``), the rows
    ``filter`` selects (looseleaf only), at most ``limit`` rows. A looseleaf file read with a
    limit and no filter reads only those rows (``read_range``); otherwise the read stops once
    ``limit`` rows came."""
    if filter is not None and fmt != "leaf":
        raise CliError(f"--filter applies to looseleaf files only, not to {fmt} ({path})")
    if fmt == "leaf":
        source = _leaf_source(path, columns, filter, limit, storage_options)
    elif fmt == "parquet":
        source = _parquet_source(path, columns, storage_options)
    elif fmt == "arrow":
        source = _arrow_source(path, columns, storage_options)
    elif fmt == "csv":
        source = _csv_source(path, columns, storage_options)
    else:
        raise CliError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if limit is not None:
        source.batches = _limited(source.batches, limit)
        source.num_rows = limit if source.num_rows is None else min(limit, source.num_rows)
    return source


def _leaf_source(
    path: str, columns: Sequence[str] | None, filter: Any, limit: int | None, options: dict[str, str]
) -> Source:
    if is_dataset_path(path):
        dataset = open_dataset(path, options)
        filter = coerce_filter(filter, dataset.schema)
        stream = dataset.read_all(columns=columns, filter=filter)
        num_rows = dataset.count_rows() if filter is None and limit is None else None
        return _stream_source(stream, num_rows)
    reader = looseleaf.open(path, storage_options=options or None)
    filter = coerce_filter(filter, reader.schema)
    if filter is None and limit is not None:
        count = min(limit, reader.num_rows)
        return _stream_source(reader.read_range(0, count, columns), count)
    stream = reader.read_all(columns, filter=filter)
    return _stream_source(stream, reader.num_rows if filter is None else None)


def coerce_filter(filter: Any, schema: pa.Schema) -> Any:
    """``filter`` (``pyarrow.parquet``'s tuples, as ``--filter`` gives them) with string
    constants compared with a column that is not a string cast to the column's type, so that
    JSON can state dates, timestamps and decimals (``["d", ">=", "2024-01-31"]``). Anything
    else is left for the engine to accept or reject."""
    if filter is None:
        return None
    if isinstance(filter, tuple):
        name, op, value = filter
        if name not in schema.names:
            return filter
        type_ = schema.field(name).type
        if pa.types.is_string(type_) or pa.types.is_large_string(type_) or pa.types.is_dictionary(type_):
            return filter
        if isinstance(value, list):
            return (name, op, [_cast(v, type_, name) for v in value])
        return (name, op, _cast(value, type_, name))
    return [coerce_filter(f, schema) for f in filter]


def _cast(value: Any, type_: pa.DataType, name: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return pa.scalar(value).cast(type_).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CliError(f"--filter: {value!r} is not a value of column {name!r} ({type_}): {e}") from None


def _stream_source(stream: pa.RecordBatchReader, num_rows: int | None) -> Source:
    return Source(stream.schema, iter(stream), num_rows, _closers=[stream.close])


def _parquet_source(path: str, columns: Sequence[str] | None, options: dict[str, str]) -> Source:
    import pyarrow.parquet as pq

    file = _input_file(path, options)
    parquet = pq.ParquetFile(file)
    batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns)
    schema = parquet.schema_arrow if columns is None else None
    first = None
    if schema is None:
        # The schema of a projection is the one of its batches.
        first = next(batches, None)
        schema = first.schema if first is not None else _project(parquet.schema_arrow, columns, path)
    return Source(
        schema, _chain(first, batches), parquet.metadata.num_rows, _closers=[parquet.close, file.close]
    )


def _arrow_source(path: str, columns: Sequence[str] | None, options: dict[str, str]) -> Source:
    import pyarrow.ipc as ipc

    file = _input_file(path, options)
    try:
        reader = ipc.open_file(file)
    except pa.ArrowInvalid:
        # Not the file format: maybe the streaming format (.arrows, or a stream named .arrow).
        file.seek(0)
        stream = ipc.open_stream(file)
        schema = _project(stream.schema, columns, path)
        batches = (b.select(schema.names) if columns else b for b in stream)
        return Source(schema, batches, None, _fraction(file), [stream.close, file.close])
    count = reader.num_record_batches
    schema = _project(reader.schema, columns, path)
    done = 0

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal done
        for i in range(count):
            batch = reader.get_batch(i)
            done = i + 1
            yield batch.select(schema.names) if columns else batch

    return Source(schema, batches(), None, lambda: done / count if count else None, [file.close])


def _csv_source(path: str, columns: Sequence[str] | None, options: dict[str, str]) -> Source:
    import pyarrow.csv as pacsv

    file = _input_file(path, options)
    convert = pacsv.ConvertOptions(
        # What csv_batch writes: a null is an empty field, an empty string is "".
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
        include_columns=list(columns) if columns else None,
    )
    reader = pacsv.open_csv(file, read_options=pacsv.ReadOptions(block_size=1 << 22), convert_options=convert)
    return Source(reader.schema, iter(reader), None, _fraction(file), [reader.close, file.close])


def _project(schema: pa.Schema, columns: Sequence[str] | None, path: str) -> pa.Schema:
    if columns is None:
        return schema
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise CliError(
            f"{path}: no column {missing[0]!r} (the columns are: {', '.join(schema.names)}; "
            "nested fields can be selected in looseleaf files only)"
        )
    return pa.schema([schema.field(c) for c in columns])


def _fraction(file: pa.NativeFile) -> Callable[[], float | None]:
    size = file.size()

    def fraction() -> float | None:
        try:
            return file.tell() / size if size else None
        except (OSError, ValueError):
            return None

    return fraction


def _chain(first: pa.RecordBatch | None, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    if first is not None:
        yield first
    yield from rest


def _limited(batches: Iterator[pa.RecordBatch], limit: int) -> Iterator[pa.RecordBatch]:
    """The first ``limit`` rows of ``batches``; stops pulling batches once they came."""
    left = limit
    while left > 0:
        batch = next(batches, None)
        if batch is None:
            return
        if batch.num_rows > left:
            batch = batch.slice(0, left)
        left -= batch.num_rows
        yield batch


class Sink:
    """Where ``convert`` writes: :meth:`write` batches, then :meth:`close` (returns the bytes
    written) or :meth:`abort` (leaves nothing at the path, as far as the store allows)."""

    def __init__(
        self,
        write: Callable[[pa.RecordBatch], None],
        close: Callable[[], int | None],
        abort: Callable[[], None],
    ) -> None:
        self.write, self.close, self.abort = write, close, abort


def open_sink(
    path: str, fmt: str, schema: pa.Schema, *, page_size: int | None, storage_options: dict[str, str]
) -> Sink:
    """A writer of ``fmt`` at ``path`` for batches of ``schema``. CSV gets the nested and binary
    columns as text (:func:`looseleaf.cli.text.csv_batch`)."""
    if fmt == "leaf":
        if is_dataset_path(path):
            raise CliError(f"{path} is a directory: convert writes one file")
        writer = looseleaf.FileWriter(
            path, schema, page_size=page_size, storage_options=storage_options or None
        )
        return Sink(writer.write_batch, lambda: writer.close()["num_bytes"], writer.abort)
    if page_size is not None:
        raise CliError("--page-size applies to looseleaf destinations only")
    filesystem, where = _filesystem(path, storage_options)
    stream = filesystem.open_output_stream(where)
    finishers: list[Callable[[], None]] = []

    def abort() -> None:
        # The format's writer first (pyarrow's would close itself on a closed stream later,
        # from its finalizer, and complain), then the stream, then the partial file.
        for step in (*finishers, stream.close, lambda: filesystem.delete_file(where)):
            with contextlib.suppress(Exception):
                step()

    try:
        write, finish = _format_writer(fmt, stream, schema, streaming=path.endswith(".arrows"))
        finishers.append(finish)
    except BaseException:
        abort()
        raise

    def close() -> int | None:
        finish()
        size = stream.tell()
        stream.close()
        return size

    return Sink(write, close, abort)


def _format_writer(
    fmt: str, stream: pa.NativeFile, schema: pa.Schema, *, streaming: bool
) -> tuple[Callable[[pa.RecordBatch], None], Callable[[], None]]:
    """The write and finish functions of ``fmt``; Arrow IPC in the streaming format if
    ``streaming`` (``.arrows``), else the file format."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(stream, schema)
        return writer.write_batch, writer.close
    if fmt == "arrow":
        import pyarrow.ipc as ipc

        writer = ipc.new_stream(stream, schema) if streaming else ipc.new_file(stream, schema)
        return writer.write_batch, writer.close
    if fmt == "csv":
        import pyarrow.csv as pacsv

        writer = pacsv.CSVWriter(stream, csv_schema(schema))
        return (lambda batch: writer.write_batch(csv_batch(batch))), writer.close
    raise CliError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def _input_file(path: str, options: dict[str, str]) -> pa.NativeFile:
    if is_dataset_path(path):
        raise CliError(f"{path} is a directory: only looseleaf datasets can be read from directories")
    filesystem, where = _filesystem(path, options)
    return filesystem.open_input_file(where)


#: ``object_store``'s S3 keys (as looseleaf takes them) and ``pyarrow.fs.S3FileSystem``'s.
_S3_KEYS = {
    "aws_endpoint": "endpoint_override",
    "aws_endpoint_url": "endpoint_override",
    "endpoint": "endpoint_override",
    "aws_region": "region",
    "region": "region",
    "aws_access_key_id": "access_key",
    "access_key_id": "access_key",
    "aws_secret_access_key": "secret_key",
    "secret_access_key": "secret_key",
    "aws_session_token": "session_token",
    "session_token": "session_token",
    "aws_allow_http": None,
    "allow_http": None,
}


def _filesystem(path: str, options: dict[str, str]) -> tuple[Any, str]:
    """The ``pyarrow.fs`` filesystem of ``path`` and the path within it."""
    import pyarrow.fs as pafs

    scheme, sep, rest = path.partition("://")
    if not sep:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    scheme = scheme.lower()
    if scheme == "memory":
        raise CliError(f"{path}: memory:// is looseleaf's in-process store, for .leaf files only")
    if scheme in ("s3", "s3a"):
        return _s3(options), rest
    if options:
        raise CliError(
            f"{path}: --storage-option is supported for Parquet, Arrow and CSV on s3:// only "
            "(looseleaf files take them on every store)"
        )
    return pafs.FileSystem.from_uri(path)


def _s3(options: dict[str, str]) -> Any:
    import pyarrow.fs as pafs

    kwargs: dict[str, Any] = {}
    allow_http = False
    for key, value in options.items():
        if key.lower() not in _S3_KEYS:
            supported = ", ".join(k for k in _S3_KEYS if k.startswith("aws_"))
            raise CliError(
                f"storage option {key!r} is not supported for Parquet, Arrow or CSV on S3 "
                f"(pyarrow's S3 filesystem): use {supported}"
            )
        target = _S3_KEYS[key.lower()]
        if target is None:
            allow_http = value.strip().lower() in ("1", "true", "yes")
        else:
            kwargs[target] = value
    endpoint = kwargs.get("endpoint_override")
    if endpoint is not None and "://" in endpoint:
        scheme, _, kwargs["endpoint_override"] = endpoint.partition("://")
        kwargs["scheme"] = scheme
    elif allow_http:
        kwargs["scheme"] = "http"
    return pafs.S3FileSystem(**kwargs)
