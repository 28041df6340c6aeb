"""Writing looseleaf files: :func:`write_table` and :class:`FileWriter`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from . import _looseleaf
from .exceptions import InvalidArgumentError

PathLike = str | os.PathLike[str]


class FileWriter:
    """Writes record batches to a looseleaf file.

    The file appears at ``path`` only when the writer is closed successfully; a writer left by
    an exception (in a ``with`` block), aborted or dropped leaves nothing behind. ``path`` is
    anything :func:`looseleaf.open` takes; on an object store the file is a multipart upload
    completed by :meth:`close` (``storage_options`` as for :func:`looseleaf.open`). Pages are
    encoded (on the process's encoding threads, one per core, shared by every writer) and
    written as they fill, so memory stays around one page (``page_size`` bytes) per column,
    plus two pages per core being encoded, whatever the batch sizes. An
    error encoding a page (an encoding forced where it cannot store it) is raised by the
    :meth:`write` that filled it or a later call, :meth:`close` at the latest.

    Each page's encoding is chosen from its values (bit-packing, delta, dictionary, run-length,
    OnPair, FSST, ALP, ALP-RD, constant or plain). ``encodings`` forces or forbids encodings per
    column (dotted paths; ``"*"`` for all other columns): ``{"id": "delta"}`` forces one,
    ``{"comment": {"forbid": ["onpair"]}}`` forbids some, ``{"*": {"forbid": [...]}}`` sets the
    default; ``encodings="plain"`` stores every value plain. ``compression`` (``"lz4"`` or
    ``"zstd"``, at ``compression_level``) compresses whole pages on top, at the cost of reading
    a whole page for any row of it. ``statistics`` stores each page's null count, minimum and
    maximum; ``checksums`` a CRC-32 of every page buffer, which readers verify.
    ``zone_map_rows`` (default 8192; 0 for none) sets the rows per zone of the zone maps of
    flat top-level columns (null count, minimum and maximum per zone of rows, whatever the page
    size), which reads with a ``filter`` skip zones by.

    >>> with FileWriter("out.leaf", table.schema) as writer:  # doctest: +SKIP
    ...     writer.write_table(table)
    """

    def __init__(
        self,
        path: PathLike,
        schema: pa.Schema,
        *,
        page_size: int | None = None,
        compression: str | None = None,
        compression_level: int | None = None,
        encodings: Mapping[str, Any] | str | None = None,
        statistics: bool = True,
        checksums: bool = True,
        zone_map_rows: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(schema, pa.Schema):
            raise InvalidArgumentError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
        self._native = _looseleaf.FileWriter(
            path,
            schema,
            page_size=page_size,
            compression=compression,
            compression_level=compression_level,
            encodings=_encodings_arg(encodings),
            statistics=bool(statistics),
            checksums=bool(checksums),
            zone_map_rows=zone_map_rows,
            storage_options=storage_options,
        )
        self.schema = schema
        self.path = os.fspath(path)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Appends one record batch."""
        self._native.write_batch(batch)

    def write_table(self, table: pa.Table | pa.RecordBatchReader) -> None:
        """Appends every batch of a table or reader (anything with ``__arrow_c_stream__``)."""
        self._native.write_stream(table)

    def write(self, data: Any) -> None:
        """Appends a batch, a table, a reader, or an iterable of batches."""
        if isinstance(data, pa.RecordBatch):
            self.write_batch(data)
        elif hasattr(data, "__arrow_c_stream__"):
            self.write_table(data)
        elif isinstance(data, Iterable):
            for batch in data:
                self.write_batch(batch)
        else:
            raise InvalidArgumentError(f"cannot write a {type(data).__name__}: expected Arrow data")

    @property
    def num_rows(self) -> int:
        """Rows written so far."""
        return self._native.num_rows

    @property
    def closed(self) -> bool:
        """Whether the writer was closed or aborted."""
        return self._native.closed

    def close(self) -> dict[str, int]:
        """Finishes the file (metadata, footer) and makes it visible at its path.

        Returns ``{"num_rows": ..., "num_bytes": ...}``."""
        return self._native.finish()

    def abort(self) -> None:
        """Abandons the file; nothing is left at its path."""
        self._native.abort()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.closed:
            return
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_table(
    data: Any,
    path: PathLike,
    *,
    schema: pa.Schema | None = None,
    page_size: int | None = None,
    **options: Any,
) -> dict[str, int]:
    """Writes Arrow data to a new looseleaf file at ``path``.

    ``data`` is a ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader``, anything with
    ``__arrow_c_stream__``, or an iterable of record batches (then ``schema`` is needed if it
    may be empty). ``page_size`` is the target page size in bytes (default 8 MiB); other
    keyword arguments are :class:`FileWriter`'s (``compression``, ``encodings``,
    ``storage_options``, ...).
    Returns ``{"num_rows": ..., "num_bytes": ...}``."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        if not isinstance(data, pa.Table | pa.RecordBatchReader):
            data = pa.RecordBatchReader.from_stream(data)
        schema = data.schema
        with FileWriter(path, schema, page_size=page_size, **options) as writer:
            writer.write_table(data)
            return writer.close()
    if isinstance(data, Iterable):
        batches = iter(data)
        first = next(batches, None)
        if first is None and schema is None:
            raise InvalidArgumentError("cannot infer a schema from no batches: pass schema=")
        schema = schema if schema is not None else first.schema
        with FileWriter(path, schema, page_size=page_size, **options) as writer:
            if first is not None:
                writer.write_batch(first)
            for batch in batches:
                writer.write_batch(batch)
            return writer.close()
    raise InvalidArgumentError(f"cannot write a {type(data).__name__}: expected Arrow data")


#: Every encoding but plain values (the core's list).
_LIGHTWEIGHT = [name for name in _looseleaf.ENCODINGS if name != "plain"]


def _encodings_arg(
    encodings: Mapping[str, Any] | str | None,
) -> dict[str, tuple[str | None, list[str]]] | None:
    """``{column: "name" | {"force": "name", "forbid": [...]}}`` (or ``"plain"`` for plain
    values everywhere) as the bindings take it."""
    if encodings is None:
        return None
    if encodings == "plain":
        return {"*": (None, list(_LIGHTWEIGHT))}
    if not isinstance(encodings, Mapping):
        raise InvalidArgumentError(
            f"encodings must be a mapping of column names, got {type(encodings).__name__}"
        )
    out: dict[str, tuple[str | None, list[str]]] = {}
    for column, policy in encodings.items():
        if isinstance(policy, str):
            out[column] = (policy, [])
        elif isinstance(policy, Mapping) and set(policy) <= {"force", "forbid"}:
            forbid = policy.get("forbid", [])
            if isinstance(forbid, str):
                forbid = [forbid]
            out[column] = (policy.get("force"), list(forbid))
        else:
            raise InvalidArgumentError(
                f"the encodings of {column!r} must be an encoding name or {{'force': ..., 'forbid': [...]}}"
            )
    return out
