"""A looseleaf file or dataset as a Polars ``LazyFrame``: :func:`scan_polars`, a Polars IO
source (``polars.io.plugins.register_io_source``) into which Polars pushes the columns a query
needs, its filters, its row limit and its batch size.

>>> a = looseleaf.dataset("s3://bucket/sales").arrow_dataset()  # doctest: +SKIP
>>> looseleaf.scan_polars(a).filter(pl.col("year") == 2024).select("amount").collect()  # doctest: +SKIP
>>> a.last_io_stats["bytes_read"]  # what that query read  # doctest: +SKIP

Filters arrive as Polars expressions. Those of their top-level conjuncts (``a & b & ...``) that
translate into pyarrow expressions with the same meaning are pushed into the scan (and from
there, where the engine evaluates them, into looseleaf with its zone maps and partition
pruning): comparisons of a column with a constant, ``is_null``, ``is_not_null``, ``is_in``,
``is_between``, and ``&``, ``|``, ``~`` of those. The whole Polars predicate is then applied to
the rows read, so results are exact whatever is or is not translated.

Polars imports only when this module does (:func:`looseleaf.scan_polars` imports it).
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
import operator
import os
import warnings
from collections.abc import Iterator
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_dataset import ArrowDataset
from .exceptions import InvalidArgumentError

__all__ = ["scan_polars", "to_arrow_filter"]

#: Polars' comparison operators (``BinaryExpr.op`` in an expression's JSON form), as pyarrow's.
_COMPARISONS = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtEq": operator.le,
    "Gt": operator.gt,
    "GtEq": operator.ge,
}
#: The same comparison with its two sides swapped (``3 < a`` is ``a > 3``).
_SWAPPED = {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq"}
_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")


def scan_polars(source: Any, **options: Any) -> pl.LazyFrame:
    """``source`` as a Polars ``LazyFrame`` read by looseleaf.

    ``source`` is a :class:`looseleaf.FileReader`, a :class:`looseleaf.Dataset`, one's
    :meth:`~looseleaf.FileReader.arrow_dataset` (whose ``last_io_stats`` then show what each
    query read), or anything :func:`looseleaf.dataset` opens (a path, a glob, a list of files);
    ``options`` are then :func:`looseleaf.dataset`'s (``storage_options``, ``partitioning``,
    read options). Polars pushes projections, filters (see the module documentation), its row
    limit (``head``, ``limit``: only those rows are read when no filter comes before) and its
    batch size into the scan."""
    if isinstance(source, ArrowDataset):
        if options:
            raise InvalidArgumentError(
                f"scan_polars: options {sorted(options)} are for a path; an ArrowDataset has its own"
            )
        arrow = source
    elif hasattr(source, "arrow_dataset"):
        arrow = source.arrow_dataset(**options)
    elif isinstance(source, (str, os.PathLike, list, tuple)):
        from .datasets import dataset

        arrow = dataset(source, **options).arrow_dataset()
    else:
        raise InvalidArgumentError(
            f"scan_polars: source must be a path, a list of paths, a FileReader, a Dataset or an "
            f"ArrowDataset, got {type(source).__name__}"
        )
    from polars.io.plugins import register_io_source

    schema = pl.from_arrow(arrow.schema.empty_table()).schema

    def scan(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, batch_size: int | None
    ) -> Iterator[pl.DataFrame]:
        return _scan(arrow, with_columns, predicate, n_rows, batch_size)

    return register_io_source(scan, schema=schema)


def _scan(
    arrow: ArrowDataset,
    with_columns: list[str] | None,
    predicate: pl.Expr | None,
    n_rows: int | None,
    batch_size: int | None,
) -> Iterator[pl.DataFrame]:
    if n_rows is not None and n_rows <= 0:
        return
    columns = with_columns
    if predicate is not None and with_columns is not None:
        # The predicate is applied here, to the rows read: they need its columns too.
        needed = set(predicate.meta.root_names()) - set(with_columns)
        columns = [*with_columns, *sorted(needed)]
    arrow_filter = to_arrow_filter(predicate, arrow.schema) if predicate is not None else None
    scanner = arrow.scanner(columns, arrow_filter, batch_size)
    # Without a filter, a limit is a range: only its rows are read.
    bounded = {}
    if n_rows is not None and predicate is None:
        bounded = {"start": 0, "num_rows": min(n_rows, arrow.source.num_rows)}
    batches = scanner.to_batches(**bounded)
    left = n_rows
    try:
        for batch in batches:
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None and columns != with_columns:
                frame = frame.select(with_columns)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame
            if left == 0:
                return
    finally:
        batches.close()


def to_arrow_filter(predicate: pl.Expr, schema: pa.Schema) -> pc.Expression | None:
    """The conjuncts of Polars' ``predicate`` over columns of ``schema`` that translate into
    pyarrow expressions of the same meaning, and-ed (``None`` if none does). Every row the
    predicate keeps, the result keeps; it may keep more (the conjuncts not translated)."""
    try:
        with warnings.catch_warnings():
            # The JSON form is not promised stable across Polars versions: whatever is not
            # recognised is not translated.
            warnings.simplefilter("ignore")
            tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:
        return None
    translated = [t for node in _conjuncts(tree) if (t := _Translator(schema).translate(node)) is not None]
    return functools.reduce(operator.and_, translated) if translated else None


def _conjuncts(node: Any) -> list[Any]:
    binary = node.get("BinaryExpr") if isinstance(node, dict) else None
    if binary is not None and binary.get("op") in _AND:
        return [*_conjuncts(binary["left"]), *_conjuncts(binary["right"])]
    return [node]


class _Untranslatable(Exception):
    """A part of a Polars expression with no pyarrow equivalent here."""


class _Translator:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def translate(self, node: Any) -> pc.Expression | None:
        try:
            return self.predicate(node)
        except _Untranslatable:
            return None

    def predicate(self, node: Any) -> pc.Expression:
        if not isinstance(node, dict) or len(node) != 1:
            raise _Untranslatable
        kind, body = next(iter(node.items()))
        if kind == "BinaryExpr":
            op = body.get("op")
            if op in _AND or op in _OR:
                left, right = self.predicate(body["left"]), self.predicate(body["right"])
                return left & right if op in _AND else left | right
            if op in _COMPARISONS:
                return self.comparison(op, body["left"], body["right"])
        if kind == "Function":
            return self.function(body)
        raise _Untranslatable

    def function(self, body: dict[str, Any]) -> pc.Expression:
        function, inputs = body.get("function"), body.get("input", [])
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        if boolean == "Not" and len(inputs) == 1:
            return ~self.predicate(inputs[0])
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
            field, _ = self.column(inputs[0])
            return field.is_null() if boolean == "IsNull" else field.is_valid()
        if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
            if boolean["IsIn"].get("nulls_equal"):
                raise _Untranslatable
            field, type = self.column(inputs[0])
            values = _constant(inputs[1])
            if not isinstance(values, list) or any(v is None for v in values):
                raise _Untranslatable
            return field.isin(pa.array([_literal(v, type) for v in values], type))
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            closed = boolean["IsBetween"].get("closed")
            if closed not in ("Both", "Left", "Right", "None"):
                raise _Untranslatable
            field, type = self.column(inputs[0])
            low, high = _literal(_constant(inputs[1]), type), _literal(_constant(inputs[2]), type)
            lower = field >= low if closed in ("Both", "Left") else field > low
            upper = field <= high if closed in ("Both", "Right") else field < high
            return lower & upper
        raise _Untranslatable

    def comparison(self, op: str, left: Any, right: Any) -> pc.Expression:
        if _is_column(right) and not _is_column(left):
            op, left, right = _SWAPPED[op], right, left
        field, type = self.column(left)
        value = _constant(right)
        if value is None:
            # A comparison with null is null: no row is kept, which pyarrow agrees with, but
            # nothing is gained by pushing it.
            raise _Untranslatable
        return _COMPARISONS[op](field, _literal(value, type))

    def column(self, node: Any) -> tuple[pc.Expression, pa.DataType]:
        if not _is_column(node):
            raise _Untranslatable
        name = node["Column"]
        index = self.schema.get_field_index(name)
        if index < 0:
            raise _Untranslatable
        return pc.field(name), self.schema.field(index).type


def _is_column(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("Column"), str)


def _constant(node: Any) -> Any:
    """The value of an expression that refers to no column (a literal, a cast of one), as
    Polars computes it: its Python value."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
        if expr.meta.root_names():
            raise _Untranslatable
        series = pl.select(expr.alias("value")).to_series()
    except _Untranslatable:
        raise
    except Exception as e:
        raise _Untranslatable from e
    if series.len() != 1:
        raise _Untranslatable
    return series.to_list()[0]


def _literal(value: Any, type: pa.DataType) -> pa.Scalar:
    """``value`` as a scalar of the column's ``type``, if it is one exactly: what a comparison
    with it means then does not depend on how either side would be cast."""
    if value is None:
        raise _Untranslatable
    if pa.types.is_boolean(type):
        exact = isinstance(value, bool)
    elif pa.types.is_integer(type) or pa.types.is_floating(type):
        exact = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif pa.types.is_decimal(type):
        exact = isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool)
    elif pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_string_view(type):
        exact = isinstance(value, str)
    elif pa.types.is_date(type):
        exact = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    elif pa.types.is_timestamp(type):
        exact = isinstance(value, datetime.datetime) and (value.tzinfo is None) == (type.tz is None)
    else:
        exact = False
    if not exact:
        raise _Untranslatable
    try:
        scalar = pa.scalar(value).cast(type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError) as e:
        raise _Untranslatable from e
    if scalar.as_py() != value:
        raise _Untranslatable
    return scalar
