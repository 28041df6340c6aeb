"""Rows as text: an aligned table, CSV, or JSON lines.

Every value has one JSON form, chosen by its Arrow type (:func:`json_encoder`): numbers as JSON
numbers (decimals exactly as written, e.g. ``-4.50``; NaN and infinities, which JSON lacks, as
the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``), strings as JSON strings, binary as base64
strings, dates, times and timestamps as ISO 8601 strings, durations as ISO 8601 durations
(``"PT1.5S"``), lists as arrays, structs as objects, maps as objects when their keys are strings
and as arrays of ``[key, value]`` pairs otherwise, nulls as ``null``.

- JSON lines: one object per row, that form for every column.
- CSV: what ``pyarrow.csv.write_csv`` writes (a header, RFC 4180 quoting, nulls as empty fields),
  after columns it cannot write (nested, binary) are replaced by strings of their JSON form
  (binary: the base64 text without quotes). :func:`csv_schema` says which.
- Table: columns aligned (numbers to the right), cells cut to :data:`MAX_CELL` characters with
  ``…``, strings and temporal values without quotes, nested values in their JSON form, nulls as
  ``null``, control characters escaped. The table fits ``max_width`` characters: the widest
  columns are narrowed first, then the last columns are dropped (the header says how many).
"""

from __future__ import annotations

import base64
import datetime
import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.types as pt

#: Widest cell of a table, in characters.
MAX_CELL = 40
#: Narrowest a column is made to fit the terminal, before columns are dropped.
MIN_CELL = 6

Encoder = Callable[[Any], str]


def json_encoder(type_: pa.DataType) -> Encoder:
    """A function from a value of ``type_`` (as ``to_pylist`` gives it) to its JSON text."""
    if pt.is_dictionary(type_):
        return json_encoder(type_.value_type)
    if pt.is_struct(type_):
        fields = [
            (type_.field(i).name, json.dumps(type_.field(i).name), json_encoder(type_.field(i).type))
            for i in range(type_.num_fields)
        ]

        def struct(v: dict[str, Any]) -> str:
            return "{" + ", ".join(f"{key}: {encode(v[name])}" for name, key, encode in fields) + "}"

        return _nullable(struct)
    if pt.is_map(type_):
        key, item = json_encoder(type_.key_type), json_encoder(type_.item_type)
        if pt.is_string(type_.key_type) or pt.is_large_string(type_.key_type):
            return _nullable(lambda v: "{" + ", ".join(f"{key(k)}: {item(x)}" for k, x in v) + "}")
        return _nullable(lambda v: "[" + ", ".join(f"[{key(k)}, {item(x)}]" for k, x in v) + "]")
    if _is_list(type_):
        element = json_encoder(type_.value_type)
        return _nullable(lambda v: "[" + ", ".join(element(x) for x in v) + "]")
    if _is_binary(type_):
        return _nullable(lambda v: '"' + base64.b64encode(v).decode("ascii") + '"')
    if pt.is_string(type_) or pt.is_large_string(type_) or pt.is_string_view(type_):
        return _nullable(lambda v: json.dumps(v, ensure_ascii=False))
    if pt.is_boolean(type_):
        return _nullable(lambda v: "true" if v else "false")
    if pt.is_integer(type_):
        return _nullable(str)
    if pt.is_floating(type_):
        return _nullable(_float)
    if pt.is_decimal(type_):
        return _nullable(str)
    if pt.is_duration(type_):
        return _nullable(lambda v: '"' + _iso_duration(v) + '"')
    if pt.is_temporal(type_):
        return _nullable(_temporal)
    if pt.is_null(type_):
        return lambda v: "null"
    return _nullable(lambda v: json.dumps(str(v), ensure_ascii=False))


def cell_encoder(type_: pa.DataType) -> Encoder:
    """A function from a value of ``type_`` to its table cell (see the module docs)."""
    encode = json_encoder(type_)
    if _is_nested(type_):
        return lambda v: escape(encode(v))
    if pt.is_string(type_) or pt.is_large_string(type_) or pt.is_string_view(type_):
        return lambda v: "null" if v is None else escape(v)
    # Other scalars whose JSON form is a string (binary, temporal, NaN) lose the quotes.
    return lambda v: _unquote(encode(v))


def is_numeric(type_: pa.DataType) -> bool:
    """Whether a column of ``type_`` is aligned to the right in a table."""
    return pt.is_integer(type_) or pt.is_floating(type_) or pt.is_decimal(type_)


def csv_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of :func:`csv_batch`'s batches: columns CSV cannot hold become strings."""
    return pa.schema(
        [pa.field(f.name, pa.string(), f.nullable) if _needs_text(f.type) else f for f in schema]
    )


def csv_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its nested and binary columns replaced by strings of their JSON form
    (binary: base64 without quotes); top-level nulls stay null. Other columns are untouched."""
    if not any(_needs_text(f.type) for f in batch.schema):
        return batch
    columns = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if _needs_text(field.type):
            encode = cell_encoder(field.type) if _is_binary(field.type) else json_encoder(field.type)
            column = pa.array([None if v is None else encode(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=csv_schema(batch.schema))


class CsvOutput:
    """Writes batches to ``out`` (a binary file) as one CSV text with one header."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._header = True

    def write(self, batch: pa.RecordBatch) -> None:
        sink = pa.BufferOutputStream()
        options = pacsv.WriteOptions(include_header=self._header)
        pacsv.write_csv(csv_batch(batch), sink, write_options=options)
        self._header = False
        self._out.write(sink.getvalue().to_pybytes())
        self._out.flush()

    def close(self, schema: pa.Schema) -> None:
        """Writes the header if no batch was written."""
        if self._header:
            self.write(_empty(schema))


class JsonLinesOutput:
    """Writes batches to ``out`` (a binary file) as one JSON object per row."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out

    def write(self, batch: pa.RecordBatch) -> None:
        keys = [json.dumps(name, ensure_ascii=False) for name in batch.schema.names]
        columns = [
            [encode(v) for v in column.to_pylist()]
            for encode, column in zip(
                (json_encoder(f.type) for f in batch.schema), batch.columns, strict=True
            )
        ]
        lines = (
            "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, row, strict=True)) + "}\n"
            for row in zip(*columns, strict=True)
        )
        self._out.write("".join(lines).encode("utf-8"))
        self._out.flush()

    def close(self, schema: pa.Schema) -> None:
        """Nothing to finish: no rows is no lines."""


class TableOutput:
    """Writes batches to ``out`` (a binary file) as an aligned table.

    The column widths come from the header and the first batch (cells are cut to them after
    that), so a table of any length streams in constant memory."""

    def __init__(self, out: IO[bytes], max_width: int | None) -> None:
        self._out = out
        self._max_width = max_width
        self._layout: _Layout | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        cells = [
            [encode(v) for v in column.to_pylist()]
            for encode, column in zip(
                (cell_encoder(f.type) for f in batch.schema), batch.columns, strict=True
            )
        ]
        lines = []
        if self._layout is None:
            self._layout = _Layout.fit(batch.schema, cells, self._max_width)
            lines.extend(self._layout.header())
        lines.extend(self._layout.row(list(row)) for row in zip(*cells, strict=True))
        self._out.write("".join(line + "\n" for line in lines).encode("utf-8"))
        self._out.flush()

    def close(self, schema: pa.Schema) -> None:
        """Writes the header if no batch was written."""
        if self._layout is None:
            self.write(_empty(schema))


def render_table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[bool], max_width: int | None
) -> list[str]:
    """The lines of an aligned table of text cells (``right``: which columns align right)."""
    rows = [list(row) for row in rows]
    layout = _Layout.fit_cells(list(headers), [list(c) for c in zip(*rows, strict=True)], right, max_width)
    return [*layout.header(), *(layout.row(row) for row in rows)]


class _Layout:
    """Column widths and alignment of a table, and how many columns were dropped to fit."""

    def __init__(self, headers: list[str], widths: list[int], right: list[bool], dropped: int) -> None:
        self.headers, self.widths, self.right, self.dropped = headers, widths, right, dropped

    @classmethod
    def fit(cls, schema: pa.Schema, columns: list[list[str]], max_width: int | None) -> _Layout:
        return cls.fit_cells(schema.names, columns, [is_numeric(f.type) for f in schema], max_width)

    @classmethod
    def fit_cells(
        cls, headers: list[str], columns: list[list[str]], right: Sequence[bool], max_width: int | None
    ) -> _Layout:
        columns = columns or [[] for _ in headers]
        widths = [
            min(MAX_CELL, max([len(h), *(len(c) for c in cells)]))
            for h, cells in zip(headers, columns, strict=True)
        ]
        kept = len(widths)
        if max_width is not None:
            while _total(widths[:kept], kept < len(widths)) > max_width:
                widest = max(range(kept), key=lambda i: widths[i], default=None)
                if widest is not None and widths[widest] > MIN_CELL:
                    widths[widest] -= 1
                elif kept > 1:
                    kept -= 1
                else:
                    break
        return cls(headers[:kept], widths[:kept], list(right[:kept]), len(headers) - kept)

    def header(self) -> list[str]:
        names = [_cut(h, w).ljust(w) if not r else _cut(h, w).rjust(w) for h, w, r in self._columns()]
        rules = ["-" * w for w in self.widths]
        more = [f"… {self.dropped} more"] if self.dropped else []
        return ["  ".join(names + more).rstrip(), "  ".join(rules)]

    def row(self, cells: list[str]) -> str:
        parts = [
            _cut(c, w).rjust(w) if r else _cut(c, w).ljust(w)
            for c, (_, w, r) in zip(cells, self._columns(), strict=False)
        ]
        return "  ".join(parts).rstrip()

    def _columns(self) -> list[tuple[str, int, bool]]:
        return list(zip(self.headers, self.widths, self.right, strict=True))


def _total(widths: list[int], note: bool) -> int:
    return sum(widths) + 2 * max(len(widths) - 1, 0) + (12 if note else 0)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _nullable(encode: Encoder) -> Encoder:
    return lambda v: "null" if v is None else encode(v)


def _float(v: float) -> str:
    if math.isnan(v):
        return '"NaN"'
    if math.isinf(v):
        return '"Infinity"' if v > 0 else '"-Infinity"'
    return repr(float(v))


def _temporal(v: Any) -> str:
    """A date, time or timestamp (``datetime``, or pandas ``Timestamp`` for nanoseconds) in ISO
    8601, quoted."""
    return '"' + v.isoformat() + '"' if hasattr(v, "isoformat") else json.dumps(str(v))


def _iso_duration(v: Any) -> str:
    """An ISO 8601 duration of seconds (``PT1.5S``, ``-PT3S``) for a ``timedelta`` (or a pandas
    ``Timedelta``, whose nanoseconds are kept)."""
    if isinstance(v, datetime.timedelta):
        nanos = (v.days * 86_400 + v.seconds) * 10**9 + v.microseconds * 1000 + getattr(v, "nanoseconds", 0)
    else:
        nanos = int(v)
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    seconds, fraction = divmod(nanos, 10**9)
    text = f"{seconds}.{fraction:09d}".rstrip("0").rstrip(".")
    return f"{sign}PT{text}S"


def _unquote(text: str) -> str:
    return escape(json.loads(text)) if text.startswith('"') else text


def escape(text: str) -> str:
    """``text`` with its control characters escaped (``\\n``, ``\\x00``), so a cell is one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicodeescape").decode("ascii") for c in text)


def _is_list(type_: pa.DataType) -> bool:
    return (
        pt.is_list(type_)
        or pt.is_large_list(type_)
        or pt.is_fixed_size_list(type_)
        or pt.is_list_view(type_)
        or pt.is_large_list_view(type_)
    )


def _is_binary(type_: pa.DataType) -> bool:
    return (
        pt.is_binary(type_)
        or pt.is_large_binary(type_)
        or pt.is_fixed_size_binary(type_)
        or pt.is_binary_view(type_)
    )


def _is_nested(type_: pa.DataType) -> bool:
    if pt.is_dictionary(type_):
        return _is_nested(type_.value_type)
    return pt.is_nested(type_)


def _needs_text(type_: pa.DataType) -> bool:
    """Whether ``pyarrow.csv`` cannot write a column of ``type_`` faithfully."""
    if pt.is_dictionary(type_):
        return _needs_text(type_.value_type)
    return pt.is_nested(type_) or _is_binary(type_)
