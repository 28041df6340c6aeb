"""``looseleaf inspect``: a file's summary and one line per stored column, from its metadata.

Per column (a leaf path such as ``tags.item`` or ``meta.score``, parents included): the Arrow
type, the page encodings (and compression), pages, bytes on disk, the size in Arrow memory and
its ratio to the bytes on disk. ``--pages`` adds a table of every page; ``--json`` prints
:attr:`looseleaf.FileReader.metadata` as it is (binary page statistics as base64 strings).

The Arrow size is not in the metadata. ``--arrow-size read`` measures it by reading the file
once (streaming, memory bounded as any read) and counting each column's own Arrow buffers;
``estimate`` computes it from the metadata alone, exactly for fixed-width columns (values and
validity bitmaps, list offsets) and not at all for strings and binary (shown ``-``); ``auto``
(the default) reads files whose data is at most :data:`AUTO_READ_BYTES` and estimates larger
ones.
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.types as pt

import looseleaf

from ._common import human_bytes
from .text import escape, render_table

#: ``--arrow-size auto`` reads files with at most this many bytes of data.
AUTO_READ_BYTES = 64 * 1000 * 1000
ARROW_SIZES = ("auto", "read", "estimate")


def run_inspect(
    path: str,
    *,
    pages: bool,
    as_json: bool,
    arrow_size: str = "auto",
    storage_options: dict[str, str] | None = None,
) -> int:
    """Prints the summary and the column table of ``path`` (see the module docs)."""
    reader = looseleaf.open(path, storage_options=storage_options or None)
    metadata = reader.metadata
    if as_json:
        print(json.dumps(metadata, indent=2, default=_json_default))
        return 0
    columns = metadata["columns"]
    data_bytes = sum(c["bytes"] for c in columns)
    num_pages = sum(c["num_pages"] for c in columns)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    read = arrow_size == "read" or (arrow_size == "auto" and data_bytes <= AUTO_READ_BYTES)
    types = dict(_leaf_types(reader.schema))
    sizes = _measured_sizes(reader, types) if read else _estimated_sizes(columns, types)

    size = _file_size(path)
    print(
        f"{metadata['location']}: {metadata['num_rows']:,} rows, {len(reader.schema)} columns "
        f"({metadata['num_columns']} stored), {num_pages:,} pages"
    )
    print(f"  format {metadata['format_version']}, written by {metadata.get('created_by') or 'unknown'}")
    print(
        f"  data {human_bytes(data_bytes)} ({data_bytes:,} bytes)"
        + (f", file {human_bytes(size)} ({size:,} bytes)" if size is not None else "")
    )
    print(f"  arrow size {'measured by reading the file' if read else 'estimated from the metadata'}")
    print()
    rows = []
    for column in columns:
        arrow = sizes.get(column["field"])
        rows.append(
            [
                column["field"],
                str(types.get(column["field"], column["type"])),
                _encodings(column["pages"]),
                f"{column['num_pages']:,}",
                f"{column['bytes']:,}",
                "-" if arrow is None else f"{arrow:,}",
                _ratio(arrow, column["bytes"]),
            ]
        )
    known = [sizes.get(c["field"]) for c in columns]
    total_arrow = None if any(a is None for a in known) else sum(a for a in known if a is not None)
    rows.append(
        [
            "(total)",
            "",
            "",
            f"{num_pages:,}",
            f"{data_bytes:,}",
            "-" if total_arrow is None else f"{total_arrow:,}",
            _ratio(total_arrow, data_bytes),
        ]
    )
    headers = ["column", "type", "encodings", "pages", "bytes", "arrow bytes", "arrow/disk"]
    right = [False, False, False, True, True, True, True]
    for line in render_table(headers, rows, right, width):
        print(line)
    if pages:
        print()
        page_rows = [
            [
                column["field"],
                f"{i}",
                f"{page['num_rows']:,}",
                f"{page['bytes']:,}",
                page["encoding"],
                page.get("compression") or "none",
                _text(page.get("null_count")),
                _text(page.get("min")),
                _text(page.get("max")),
            ]
            for column in columns
            for i, page in enumerate(column["pages"])
        ]
        headers = ["column", "page", "rows", "bytes", "encoding", "compression", "nulls", "min", "max"]
        right = [False, True, True, True, False, False, True, False, False]
        for line in render_table(headers, page_rows, right, width):
            print(line)
    return 0


def _leaf_types(schema: pa.Schema) -> Iterator[tuple[str, pa.DataType]]:
    """Every field path of ``schema`` (``parent.child``, lists' ``item``, maps'
    ``entries.key``) with its Arrow type, parents before children."""
    for field in schema:
        yield from _walk_type(field.name, field.type)


def _walk_type(path: str, type_: pa.DataType) -> Iterator[tuple[str, pa.DataType]]:
    yield path, type_
    for child in _children(type_):
        yield from _walk_type(f"{path}.{child.name}", child.type)


def _children(type_: pa.DataType) -> list[pa.Field]:
    """The child fields of ``type_`` in the order of its arrays' buffers."""
    if pt.is_dictionary(type_):
        return []
    return [type_.field(i) for i in range(type_.num_fields)]


def _measured_sizes(reader: looseleaf.FileReader, types: dict[str, pa.DataType]) -> dict[str, int]:
    """Each stored column's own Arrow buffers, in bytes, summed over a read of every row.

    A batch's buffers, compacted (``Array.buffers()``: an array's own, then its children's, depth first)
    are handed out along the type tree: ``num_buffers`` to each field. Fields with no stored
    column of their own (a map's ``entries``) count towards their nearest stored parent."""
    stored = set(types)
    sizes: dict[str, int] = defaultdict(int)
    for batch in reader.read_all():
        for field, column in zip(batch.schema, batch.columns, strict=True):
            # A batch may be a slice of larger buffers (booleans are): compact it first.
            buffers = iter(pa.concat_arrays([column]).buffers())
            _hand_out(field.name, field.type, buffers, sizes, stored, field.name)
    return dict(sizes)


def _hand_out(
    path: str,
    type_: pa.DataType,
    buffers: Iterator[pa.Buffer | None],
    sizes: dict[str, int],
    stored: set[str],
    owner: str,
) -> None:
    owner = path if path in stored else owner
    for _ in range(type_.num_buffers):
        buffer = next(buffers, None)
        sizes[owner] += 0 if buffer is None else buffer.size
    for child in _children(type_):
        _hand_out(f"{path}.{child.name}", child.type, buffers, sizes, stored, owner)


def _estimated_sizes(columns: list[dict[str, Any]], types: dict[str, pa.DataType]) -> dict[str, int]:
    """Arrow sizes computed from the metadata: fixed-width values, validity bitmaps (for
    columns with nulls, or whose null count is not stored) and list offsets; strings and binary
    are left out."""
    sizes = {}
    for column in columns:
        type_ = types.get(column["field"])
        if type_ is None:
            continue
        n = column["num_values"]
        nulls = [p.get("null_count") for p in column["pages"]]
        bitmap = 0 if all(c == 0 for c in nulls) else math.ceil(n / 8)
        if pt.is_struct(type_):
            sizes[column["field"]] = bitmap
        elif pt.is_list(type_) or pt.is_map(type_):
            sizes[column["field"]] = bitmap + 4 * (n + 1)
        elif pt.is_large_list(type_):
            sizes[column["field"]] = bitmap + 8 * (n + 1)
        elif pt.is_fixed_size_list(type_):
            # Lists of fixed-width items are stored in the list's column, their items with it.
            items, item = n, type_
            while pt.is_fixed_size_list(item):
                items, item = items * item.list_size, item.value_type
            try:
                sizes[column["field"]] = bitmap + math.ceil(items * item.bit_width / 8)
            except ValueError:
                sizes[column["field"]] = bitmap
        else:
            try:
                bits = type_.bit_width
            except ValueError:
                continue
            sizes[column["field"]] = bitmap + math.ceil(n * bits / 8)
    return sizes


def _encodings(pages: list[dict[str, Any]]) -> str:
    encodings = sorted({p["encoding"] for p in pages})
    compressions = sorted({p.get("compression") for p in pages} - {None, "none"})
    return ", ".join(encodings) + (f" [{', '.join(compressions)}]" if compressions else "")


def _ratio(arrow: int | None, disk: int) -> str:
    if arrow is None or disk == 0:
        return "-"
    return f"{arrow / disk:.2f}x"


def _text(value: Any) -> str:
    """A page statistic as a table cell; binary as hexadecimal (``0x00ff``)."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return escape(value) if isinstance(value, str) else json.dumps(value)


def _json_default(value: Any) -> Any:
    """``--json``'s form of what JSON lacks: binary statistics as base64 strings."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} in the metadata is not JSON serializable")


def _file_size(path: str) -> int | None:
    """The size of a local file (``None`` for other locations: the metadata does not say)."""
    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" in local:
        return None
    try:
        return os.path.getsize(local)
    except OSError:
        return None
