"""Property tests of filtered reads (the ``filter=`` of every read method): random tables written
with small zones (``zone_map_rows``) so that files have many, random predicates, and every read
path must keep the rows pyarrow's ``table.filter(expression)`` keeps from the unfiltered data.

Where pyarrow itself cannot evaluate a predicate (it refuses a pair of types, or a cast of its
own fails on the data: an int64 column holding values beyond 2**24 compared with a float, an
int literal compared with a decimal column), an exact row-by-row evaluation in Python (Kleene
logic, exact comparisons of numbers) is the truth instead, and an
:class:`~looseleaf.InvalidArgumentError` is accepted too; when the types cannot be compared at
all (a string column with an int), the error is required.
"""

from __future__ import annotations

import datetime
import math
import random
from dataclasses import dataclass
from decimal import Decimal
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import looseleaf
from strategies import schema_with_views, take_rows

ZONE_ROWS = st.sampled_from([16, 100])
PAGE_SIZES = st.sampled_from([64, 1000, 8192, None])
BATCH_SIZES = st.sampled_from([None, 1, 7, 64, 1000])
UTC = datetime.UTC

# --- random tables ---------------------------------------------------------------------------

_INT_TYPES = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(), "u32": pa.uint32()}
_FLOATS = [0.0, -0.0, 1.0, -1.5, 2.5, 1e300, -1e300, float("inf"), float("-inf"), float("nan")]
_STRINGS = ["", "a", "ab", "abc", "b", "ba", "z", "é", "漢字", "😀"]
_DAY0 = datetime.date(2000, 1, 1)
_TS0 = datetime.datetime(2000, 1, 1)
_DECIMAL = pa.decimal128(9, 2)


def _bounds(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if pa.types.is_signed_integer(t) else (0, 2**bits - 1)


def _int_values(rng: random.Random, t: pa.DataType, n: int) -> list[int]:
    lo, hi = _bounds(t)
    if rng.random() < 0.6:  # a small domain: equalities hit
        return [rng.randint(max(lo, -8), min(hi, 8)) for _ in range(n)]
    return [rng.choice([lo, hi, 0]) if rng.random() < 0.1 else rng.randint(lo, hi) for _ in range(n)]


def _float_values(rng: random.Random, n: int) -> list[float]:
    return [rng.choice(_FLOATS) if rng.random() < 0.5 else round(rng.uniform(-10, 10), 1) for _ in range(n)]


def _values(rng: random.Random, name: str, t: pa.DataType, n: int) -> list[Any]:
    if name in _INT_TYPES:
        return _int_values(rng, t, n)
    if name in ("f32", "f64"):
        return _float_values(rng, n)
    if name in ("s", "ls"):
        return [rng.choice(_STRINGS) for _ in range(n)]
    if name == "d":
        return [_DAY0 + datetime.timedelta(days=rng.randint(-40, 40)) for _ in range(n)]
    if name == "ts":
        return [_TS0 + datetime.timedelta(seconds=rng.randint(-100, 100)) for _ in range(n)]
    if name == "tsz":
        return [
            (_TS0 + datetime.timedelta(seconds=rng.randint(-100, 100))).replace(tzinfo=UTC) for _ in range(n)
        ]
    if name == "dec":
        return [Decimal(rng.randint(-2000, 2000)).scaleb(-2) for _ in range(n)]
    if name == "b":
        return [rng.random() < 0.5 for _ in range(n)]
    raise AssertionError(name)


FLAT_COLUMNS = {
    **_INT_TYPES,
    "f32": pa.float32(),
    "f64": pa.float64(),
    "s": pa.string(),
    "ls": pa.large_string(),
    "d": pa.date32(),
    "ts": pa.timestamp("us"),
    "tsz": pa.timestamp("ms", tz="UTC"),
    "dec": _DECIMAL,
    "b": pa.bool_(),
}
STRUCT = pa.struct([pa.field("a", pa.int32()), pa.field("s", pa.string())])


def _with_nulls(rng: random.Random, values: list[Any], fraction: float) -> list[Any]:
    return [None if rng.random() < fraction else v for v in values]


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 600) -> pa.Table:
    """A table of every filterable type (nulls at random densities, a sorted ``k``), a struct
    and a list column as a passenger."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, max_rows))

    def fraction() -> float:
        return rng.choice([0.0, 0.0, 0.1, 0.5, 0.9, 1.0])

    columns: dict[str, pa.Array] = {}
    keys = sorted(rng.randint(0, max(n // 2, 1)) for _ in range(n))
    columns["k"] = pa.array(_with_nulls(rng, keys, rng.choice([0.0, 0.05])), pa.int64())
    for name, t in FLAT_COLUMNS.items():
        columns[name] = pa.array(_with_nulls(rng, _values(rng, name, t, n), fraction()), t)
    children = [
        pa.array(_with_nulls(rng, _int_values(rng, pa.int32(), n), fraction()), pa.int32()),
        pa.array(_with_nulls(rng, [rng.choice(_STRINGS) for _ in range(n)], fraction()), pa.string()),
    ]
    struct_nulls = pa.array([rng.random() < 0.2 for _ in range(n)], pa.bool_())
    columns["st"] = pa.StructArray.from_arrays(children, fields=list(STRUCT), mask=struct_nulls)
    lists = [
        None if rng.random() < 0.2 else [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
        for _ in range(n)
    ]
    columns["lst"] = pa.array(lists, pa.list_(pa.int32()))
    return pa.table(columns)


# --- random predicates: a spec, its pyarrow expression and its exact evaluation -------------

COLUMN_TYPES = {"k": pa.int64(), **FLAT_COLUMNS, ("st", "a"): pa.int32(), ("st", "s"): pa.string()}
PATHS = [(c,) if isinstance(c, str) else c for c in COLUMN_TYPES]
OPS = ["eq", "not_eq", "lt", "lt_eq", "gt", "gt_eq"]
PC_COMPARE = {
    "eq": pc.equal,
    "not_eq": pc.not_equal,
    "lt": pc.less,
    "lt_eq": pc.less_equal,
    "gt": pc.greater,
    "gt_eq": pc.greater_equal,
}


def column_type(path: tuple[str, ...]) -> pa.DataType:
    return COLUMN_TYPES[path[0] if len(path) == 1 else path]


def _column_values(table: pa.Table, path: tuple[str, ...]) -> list[Any]:
    values = table.column(path[0]).to_pylist()
    for name in path[1:]:
        values = [None if v is None else v[name] for v in values]
    return values


def _present(table: pa.Table, path: tuple[str, ...]) -> list[Any]:
    return [v for v in _column_values(table, path) if v is not None]


def _same_type_literal(draw: st.DrawFn, t: pa.DataType, present: list[Any]) -> Any:
    if present and draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(present))
    if pa.types.is_integer(t):
        lo, hi = _bounds(t)
        return draw(st.one_of(st.integers(-9, 9), st.sampled_from([lo, hi]), st.integers(lo, hi)))
    if pa.types.is_floating(t):
        return draw(st.sampled_from([*_FLOATS, 0.5, -1.0]))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return draw(st.sampled_from([*_STRINGS, "aa", "b\x00", "zz"]))
    if t == pa.date32():
        return _DAY0 + datetime.timedelta(days=draw(st.integers(-50, 50)))
    if pa.types.is_timestamp(t):
        value = _TS0 + datetime.timedelta(
            seconds=draw(st.integers(-120, 120)), microseconds=draw(st.sampled_from([0, 1]))
        )
        return value.replace(tzinfo=UTC) if t.tz else value
    if pa.types.is_decimal(t):
        return Decimal(draw(st.integers(-2500, 2500))).scaleb(-2)
    if pa.types.is_boolean(t):
        return draw(st.booleans())
    raise AssertionError(t)


def _other_literal(draw: st.DrawFn, t: pa.DataType) -> Any:
    """A literal of another type than the column's: other numeric types and widths,
    out-of-range values, and now and then a type that cannot be compared."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        lo, hi = _bounds(t) if pa.types.is_integer(t) else (-(2**63), 2**63 - 1)
        return draw(
            st.sampled_from(
                [
                    3,
                    -1,
                    lo - 1,
                    hi + 1,
                    1000,
                    -(10**12),
                    2**62,
                    2.5,
                    -0.5,
                    3.0,
                    float("nan"),
                    float("inf"),
                    Decimal("2.5"),
                    Decimal("-1.005"),
                    Decimal("3"),
                    pa.scalar(3, pa.int8()),
                    pa.scalar(-2, pa.int16()),
                    pa.scalar(7, pa.uint8()),
                    pa.scalar(2.5, pa.float32()),
                    "3",
                ]
            ).filter(lambda v: not isinstance(v, int) or -(2**63) <= v < 2**63)
        )
    if t == pa.date32():
        return draw(st.sampled_from([_TS0 + datetime.timedelta(hours=36), "2000-01-01", 5]))
    if pa.types.is_timestamp(t):
        return draw(st.sampled_from([_DAY0 + datetime.timedelta(days=1), "x", 1]))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return draw(st.sampled_from([1, 2.5, True, b"a"]))
    return draw(st.sampled_from([1, "true"]))


@st.composite
def comparisons(draw: st.DrawFn, table: pa.Table) -> tuple:
    path = draw(st.sampled_from(PATHS))
    t = column_type(path)
    kind = draw(st.integers(0, 9))
    if kind == 0:
        value = None
    elif kind <= 2:
        value = _other_literal(draw, t)
    else:
        value = _same_type_literal(draw, t, _present(table, path))
    return ("cmp", path, draw(st.sampled_from(OPS)), value, draw(st.booleans()))


@st.composite
def is_ins(draw: st.DrawFn, table: pa.Table) -> tuple:
    path = draw(st.sampled_from(PATHS))
    t = column_type(path)
    present = _present(table, path)
    nulls = draw(st.lists(st.booleans(), max_size=4))
    values = [None if null else _same_type_literal(draw, t, present) for null in nulls]
    if pa.types.is_integer(t) and draw(st.integers(0, 4)) == 0:
        values.append(draw(st.sampled_from([2.0, 2.5, 10**10, -(10**12)])))
        try:
            pa.array(values)
        except (pa.ArrowInvalid, OverflowError):  # floats with ints beyond 2**53
            values.pop()
    return ("isin", path, values, draw(st.booleans()))


@st.composite
def leaves(draw: st.DrawFn, table: pa.Table) -> tuple:
    choice = draw(st.integers(0, 9))
    if choice <= 4:
        return draw(comparisons(table))
    if choice <= 6:
        return draw(is_ins(table))
    if choice == 7:
        return ("null", draw(st.sampled_from(PATHS)), draw(st.booleans()))
    if choice == 8:
        return ("field", ("b",))
    return ("lit", draw(st.sampled_from([True, False, None])))


def predicates(table: pa.Table) -> st.SearchStrategy[tuple]:
    def extend(children: st.SearchStrategy[tuple]) -> st.SearchStrategy[tuple]:
        return st.one_of(
            st.tuples(st.sampled_from(["and", "or"]), st.lists(children, min_size=2, max_size=3)),
            st.tuples(st.just("not"), children),
        )

    return st.recursive(leaves(table), extend, max_leaves=5)


def expression(spec: tuple) -> pc.Expression:
    """The pyarrow expression of a spec."""
    kind = spec[0]
    if kind == "cmp":
        _, path, op, value, literal_left = spec
        field, literal = pc.field(*path), pc.scalar(value)
        return PC_COMPARE[op](literal, field) if literal_left else PC_COMPARE[op](field, literal)
    if kind == "isin":
        _, path, values, skip_nulls = spec
        return pc.is_in(pc.field(*path), value_set=pa.array(values), skip_nulls=skip_nulls)
    if kind == "null":
        _, path, is_null = spec
        return pc.field(*path).is_null() if is_null else pc.field(*path).is_valid()
    if kind == "field":
        return pc.field(*spec[1])
    if kind == "lit":
        return pc.scalar(pa.scalar(spec[1], pa.bool_()))
    if kind == "and":
        return reduce(lambda a, b: a & b, map(expression, spec[1]))
    if kind == "or":
        return reduce(lambda a, b: a | b, map(expression, spec[1]))
    if kind == "not":
        return ~expression(spec[1])
    raise AssertionError(kind)


def referenced(spec: tuple) -> set[str]:
    """The top-level columns a spec reads."""
    if spec[0] in ("and", "or"):
        return set().union(*map(referenced, spec[1]))
    if spec[0] == "not":
        return referenced(spec[1])
    if spec[0] == "lit":
        return set()
    return {spec[1][0]}


class Incomparable(Exception):
    """The predicate compares types that cannot be compared."""


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    # Arrow compares dates with timestamps without a time zone (a date is its midnight).
    if pa.types.is_timestamp(t) and t.tz:
        return "timestamp with a time zone"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "instant"
    return str(t)


def _check_comparable(column: pa.DataType, literal: pa.DataType) -> None:
    if not pa.types.is_null(literal) and _kind(column) != _kind(literal):
        raise Incomparable(f"{column} vs {literal}")


def _same_member(v: Any, w: Any) -> bool:
    """Whether ``is_in`` matches value ``v`` with member ``w``: pyarrow's set lookup tells NaN
    from nothing and -0.0 from 0.0 (``is_in([-0.0], [0.0])`` is false)."""
    if _is_nan(v) or _is_nan(w):
        return _is_nan(v) and _is_nan(w)
    if isinstance(v, float) and isinstance(w, float) and v == 0 == w:
        return math.copysign(1.0, v) == math.copysign(1.0, w)
    return v == w


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _instant(v: Any) -> Any:
    """A date as the datetime of its midnight (how Arrow compares it with a timestamp)."""
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return datetime.datetime(v.year, v.month, v.day)
    return v


def _compare(op: str, left: Any, right: Any) -> bool | None:
    if left is None or right is None:
        return None
    if _is_nan(left) or _is_nan(right):
        return op == "not_eq"
    if isinstance(left, datetime.datetime) != isinstance(right, datetime.datetime):
        left, right = _instant(left), _instant(right)
    return {
        "eq": left == right,
        "not_eq": left != right,
        "lt": left < right,
        "lt_eq": left <= right,
        "gt": left > right,
        "gt_eq": left >= right,
    }[op]


def _pyarrow_mask(spec: tuple, table: pa.Table) -> list[bool | None] | None:
    """A comparison evaluated by pyarrow alone, as True, False or None per row; None if pyarrow
    cannot evaluate it either. (A member whose types Python cannot compare, such as a string
    column and a binary constant, which pyarrow compares by casting, when another member of the
    predicate sent the whole predicate here.)"""
    indexed = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    try:
        true_rows = set(indexed.filter(expression(spec)).column("__row").to_pylist())
        false_rows = set(indexed.filter(~expression(spec)).column("__row").to_pylist())
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        return None
    return [True if i in true_rows else False if i in false_rows else None for i in range(table.num_rows)]


def _literal_type(spec: tuple) -> pa.DataType:
    """The type of a comparison's constant, or of an ``is_in``'s values."""
    if spec[0] == "isin":
        return pa.array(spec[2]).type
    value = spec[3]
    return (value if isinstance(value, pa.Scalar) else pa.scalar(value)).type


def exact(spec: tuple, table: pa.Table) -> list[bool | None]:
    """The predicate on every row, evaluated in Python: Kleene logic, numbers compared exactly,
    NaN compares false but for ``!=``; ``is_in`` matches as pyarrow's does: its set cast to the
    column's type, NaN matching NaN, a zero only a zero of its sign."""
    n = table.num_rows
    kind = spec[0]
    if kind in ("cmp", "isin"):
        try:
            _check_comparable(column_type(spec[1]), _literal_type(spec))
        except Incomparable:
            mask = _pyarrow_mask(spec, table)
            if mask is None:
                raise
            return mask
    if kind == "cmp":
        _, path, op, value, literal_left = spec
        literal = value if isinstance(value, pa.Scalar) else pa.scalar(value)
        value = literal.as_py()
        values = _column_values(table, path)
        if literal_left:
            return [_compare(op, value, v) for v in values]
        return [_compare(op, v, value) for v in values]
    if kind == "isin":
        _, path, values, skip_nulls = spec
        wanted = [v for v in values if v is not None]
        if column_type(path) == pa.float32() and all(isinstance(w, float) for w in wanted):
            # pyarrow looks the values up in the set cast to the column's type (1e300 as inf).
            wanted = pa.array(wanted, pa.float64()).cast(pa.float32(), safe=False).to_pylist()
        null_matches = None in values and not skip_nulls
        return [
            null_matches if v is None else any(_same_member(v, w) for w in wanted)
            for v in _column_values(table, path)
        ]
    if kind == "null":
        _, path, is_null = spec
        return [(v is None) == is_null for v in _column_values(table, path)]
    if kind == "field":
        return _column_values(table, spec[1])
    if kind == "lit":
        return [spec[1]] * n
    if kind == "not":
        return [None if v is None else not v for v in exact(spec[1], table)]
    members = [exact(s, table) for s in spec[1]]
    out: list[bool | None] = []
    for row in zip(*members, strict=True):
        if kind == "and":
            out.append(False if False in row else None if None in row else True)
        else:
            out.append(True if True in row else None if None in row else False)
    return out


@dataclass
class Expected:
    """What a filtered read must return: ``table``, or (``error_allowed``) an
    InvalidArgumentError; ``table`` is None when only the error is right."""

    table: pa.Table | None
    error_allowed: bool


def expected(table: pa.Table, spec: tuple, filter_expression: pc.Expression) -> Expected:
    try:
        return Expected(table.filter(filter_expression), error_allowed=False)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        pass
    try:
        mask = exact(spec, table)
    except (Incomparable, TypeError):  # TypeError: Python cannot compare them either
        return Expected(None, error_allowed=True)
    return Expected(table.filter(pa.array([v is True for v in mask], pa.bool_())), error_allowed=True)


def _plain(values: list[Any]) -> list[Any]:
    """Values comparable with ``==``: NaN as a marker, the sign of zeros kept."""
    out = []
    for v in values:
        if isinstance(v, float):
            out.append(("float", "nan") if math.isnan(v) else ("float", v, math.copysign(1.0, v)))
        elif isinstance(v, dict):
            out.append({k: _plain([x])[0] for k, x in v.items()})
        elif isinstance(v, list):
            out.append(_plain(v))
        else:
            out.append(v)
    return out


def assert_same(actual: pa.Table, want: pa.Table, context: Any) -> None:
    """Equal tables (``Table.equals`` never finds NaN equal to itself: then by values)."""
    actual, want = actual.combine_chunks(), want.combine_chunks()
    if actual.equals(want):
        return
    assert actual.schema == want.schema, context
    assert actual.num_rows == want.num_rows, (context, actual.num_rows, want.num_rows)
    for name in want.column_names:
        if not actual.column(name).equals(want.column(name)):
            assert _plain(actual.column(name).to_pylist()) == _plain(want.column(name).to_pylist()), (
                context,
                name,
            )


def check(want: Expected, context: Any, read, *args: Any, **kwargs: Any) -> None:
    """Runs ``read(*args, **kwargs)`` (returning a table) and compares it with ``want``."""
    if want.table is None:
        with pytest.raises(looseleaf.InvalidArgumentError):
            read(*args, **kwargs)
        return
    try:
        actual = read(*args, **kwargs)
    except looseleaf.InvalidArgumentError:
        if want.error_allowed:
            return
        raise
    assert_same(actual, want.table, context)


def write(table: pa.Table, path, zone_rows: int, page_size: int | None) -> None:
    looseleaf.write_table(table, path, page_size=page_size, zone_map_rows=zone_rows)


def options(batch_size: int | None) -> dict[str, Any]:
    return {} if batch_size is None else {"batch_size": batch_size}


def via_to_table(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    return reader.to_table(*args, **kwargs)


def via_read_all(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    return reader.read_all(*args, **kwargs).read_all()


def via_stream(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    return pa.RecordBatchReader.from_stream(reader.stream(*args, **kwargs)).read_all()


def via_read_range(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    return reader.read_range(*args, **kwargs).read_all()


def via_take(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    return reader.take(*args, **kwargs)


def via_views(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    """``to_table`` with ``string_view=True``: checks the strings come back as views, then casts
    them back to the types written (pyarrow's cast) for the comparison."""
    return written_types(reader, reader.to_table(*args, string_view=True, **kwargs))


def via_take_views(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> pa.Table:
    """``take`` with ``string_view=True``, as :func:`via_views`."""
    return written_types(reader, reader.take(*args, string_view=True, **kwargs))


def written_types(reader: looseleaf.FileReader, got: pa.Table) -> pa.Table:
    """``got``, read with ``string_view=True``, checked to hold views and cast back."""
    written = pa.schema([reader.schema.field(name) for name in got.column_names])
    assert got.schema == schema_with_views(written)
    return got.cast(written)


def via_plan(reader: looseleaf.FileReader, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return reader.plan(*args, **kwargs)


def selected(want: Expected, columns: list[str]) -> Expected:
    """``want`` of a projection."""
    return Expected(None if want.table is None else want.table.select(columns), want.error_allowed)


# --- the properties ------------------------------------------------------------------------


@settings(max_examples=80)
@given(
    table=tables(),
    zone_rows=ZONE_ROWS,
    page_size=PAGE_SIZES,
    batch_size=BATCH_SIZES,
    data=st.data(),
)
def test_every_read_path_filters_as_pyarrow(tmp_path_factory, table, zone_rows, page_size, batch_size, data):
    path = tmp_path_factory.mktemp("filters") / "t.leaf"
    write(table, path, zone_rows, page_size)
    reader = looseleaf.open(path)
    opts = options(batch_size)

    for _ in range(3):
        spec = data.draw(predicates(table), label="predicate")
        expr = expression(spec)
        context = (str(expr), spec)
        whole = expected(table, spec, expr)
        for via in (via_to_table, via_read_all, via_stream, via_views):
            check(whole, context, via, reader, filter=expr, **opts)

        # Projections: without the filter's columns, and with them (in a random order).
        used = referenced(spec)
        others = [c for c in table.column_names if c not in used]
        without = data.draw(st.permutations(others), label="without")[: data.draw(st.integers(1, 3))]
        with_them = data.draw(st.permutations(sorted(used) + without[:1]), label="with")
        for columns in (without, with_them):
            for via in (via_to_table, via_read_all, via_stream):
                check(selected(whole, columns), (context, columns), via, reader, columns, filter=expr, **opts)

        # A row range.
        start = data.draw(st.integers(0, table.num_rows), label="start")
        count = data.draw(st.integers(0, table.num_rows - start), label="count")
        ranged = expected(table.slice(start, count), spec, expr)
        where = (context, start, count)
        check(ranged, where, via_read_range, reader, start, count, filter=expr, **opts)
        check(ranged, where, via_to_table, reader, start=start, num_rows=count, filter=expr, **opts)
        check(
            selected(ranged, without),
            where,
            via_stream,
            reader,
            without,
            start=start,
            num_rows=count,
            filter=expr,
        )

        # Take: unsorted, with repeats; the rows that match, in the order of the indices.
        if table.num_rows:
            indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=80), label="indices")
            taken = expected(take_rows(table, indices), spec, expr)
            check(taken, (context, indices), via_take, reader, indices, filter=expr, **opts)
            check(taken, (context, indices), via_take_views, reader, indices, filter=expr, **opts)
            check(
                selected(taken, without), (context, indices), via_take, reader, indices, without, filter=expr
            )

        # The plan of a filtered read says what its filter skips.
        if whole.table is not None and not whole.error_allowed:
            assert "filter" in reader.plan(filter=expr)


@st.composite
def dnf(draw: st.DrawFn, table: pa.Table) -> tuple[list, tuple]:
    """A list-of-tuples filter on top-level columns, and its spec."""

    def predicate() -> tuple[tuple, tuple]:
        name = draw(st.sampled_from([p[0] for p in PATHS if len(p) == 1]))
        t = column_type((name,))
        present = _present(table, (name,))
        op = draw(st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
        if op in ("in", "not in"):
            values = [_same_type_literal(draw, t, present) for _ in range(draw(st.integers(1, 3)))]
            if draw(st.booleans()):
                values.append(None)
            spec = ("isin", (name,), values, False)
            return (name, op, values), spec if op == "in" else ("not", spec)
        value = None if draw(st.integers(0, 9)) == 0 else _same_type_literal(draw, t, present)
        native_op = {
            "=": "eq",
            "==": "eq",
            "!=": "not_eq",
            "<": "lt",
            "<=": "lt_eq",
            ">": "gt",
            ">=": "gt_eq",
        }
        return (name, op, value), ("cmp", (name,), native_op[op], value, False)

    conjunctions = [
        [predicate() for _ in range(draw(st.integers(1, 3)))] for _ in range(draw(st.integers(1, 3)))
    ]
    tuples = [[p for p, _ in c] for c in conjunctions]
    spec = ("or", [("and", [s for _, s in c]) for c in conjunctions])
    if len(tuples) == 1 and draw(st.booleans()):
        return tuples[0], spec
    return tuples, spec


@settings(max_examples=40)
@given(table=tables(max_rows=400), zone_rows=ZONE_ROWS, data=st.data())
def test_list_of_tuples_filters_as_pyarrow_parquet(tmp_path_factory, table, zone_rows, data):
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("dnf") / "t.leaf"
    write(table, path, zone_rows, None)
    reader = looseleaf.open(path)
    for _ in range(3):
        filters, spec = data.draw(dnf(table), label="filters")
        whole = expected(table, spec, pq.filters_to_expression(filters))
        check(whole, filters, via_to_table, reader, filter=filters)
        check(whole, filters, via_read_all, reader, filter=filters, batch_size=50)
        if table.num_rows:
            indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=40), label="indices")
            taken = expected(take_rows(table, indices), spec, pq.filters_to_expression(filters))
            check(taken, (filters, indices), via_take, reader, indices, filter=filters)


# --- zone skipping -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sorted_file(tmp_path_factory) -> tuple[str, pa.Table]:
    n = 5000
    rng = random.Random(7)
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "day": pa.array([_DAY0 + datetime.timedelta(days=i // 10) for i in range(n)], pa.date32()),
            "name": pa.array([f"n{i:05d}" for i in range(n)], pa.string()),
            "x": pa.array([rng.random() for _ in range(n)], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in range(n)], pa.bool_()),
        }
    )
    path = str(tmp_path_factory.mktemp("sorted") / "sorted.leaf")
    write(table, path, 100, 4096)
    return path, table


@pytest.mark.parametrize(
    "filter",
    [
        pc.field("k") < 150,
        (pc.field("k") >= 4000) & (pc.field("k") < 4100),
        pc.field("k").isin([10, 2500, 4999]),
        pc.field("day") == _DAY0 + datetime.timedelta(days=42),
        pc.field("name") >= "n04900",
        ~(pc.field("k") >= 100),
        [("k", ">", 4890)],
        [[("k", "<", 50)], [("name", "in", ["n03000", "n03001"])]],
    ],
    ids=str,
)
def test_selective_filters_skip_zones(sorted_file, filter):
    import pyarrow.parquet as pq

    path, table = sorted_file
    expr = filter if isinstance(filter, pc.Expression) else pq.filters_to_expression(filter)
    want = table.filter(expr)
    assert 0 < want.num_rows < table.num_rows / 10
    reader = looseleaf.open(path)
    stream = reader.stream(filter=filter)
    assert_same(pa.RecordBatchReader.from_stream(stream).read_all(), want, filter)
    stats = stream.io_stats()
    assert stats["zones_skipped"] > 0, stats
    assert stats["zones_read"] > 0, stats
    # a projection without the filter's columns skips the same zones
    stream = reader.stream(["x"], filter=filter)
    assert_same(pa.RecordBatchReader.from_stream(stream).read_all(), want.select(["x"]), filter)
    assert stream.io_stats()["zones_skipped"] > 0
    assert "filter" in reader.plan(filter=filter)
    indices = [4999, 0, 120, 4950, 3000, 0, 42]
    assert_same(reader.take(indices, filter=filter), take_rows(table, indices).filter(expr), filter)


def test_a_filter_that_matches_nothing_skips_every_zone(sorted_file):
    path, table = sorted_file
    stream = looseleaf.open(path).stream(filter=pc.field("k") > 10**9)
    result = pa.RecordBatchReader.from_stream(stream).read_all()
    assert result.num_rows == 0
    assert result.schema == table.schema
    stats = stream.io_stats()
    assert stats["zones_skipped"] > 0, stats
    assert stats["zones_read"] == 0, stats


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "filter",
    [
        pc.field("nope") == 1,
        pc.field("st", "nope") == 1,
        pc.field("nope").is_null(),
        pc.field("nope").isin([1]),
        (pc.field("k") > 1) & (pc.field("nope") == 1),
        [("nope", "=", 1)],
        pc.field("s") == 1,
        pc.field("s") < 2.5,
        pc.field("k") == "1",
        pc.field("s").isin([1, 2]),
        [("s", ">", 1)],
        [("d", "in", [1, 2])],
    ],
    ids=str,
)
def test_bad_filters_are_invalid_arguments(tmp_path, filter):
    table = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "s": ["a", "b", None],
            "d": pa.array([_DAY0, None, _DAY0], pa.date32()),
            "st": pa.array([{"a": 1, "s": "x"}, None, {"a": None, "s": None}], STRUCT),
        }
    )
    path = tmp_path / "t.leaf"
    write(table, path, 16, None)
    reader = looseleaf.open(path)
    for read, args in [
        (via_to_table, ()),
        (via_read_all, ()),
        (via_stream, ()),
        (via_read_range, (0, 2)),
        (via_take, ([2, 0],)),
        (via_to_table, (["k"],)),
        (via_plan, ()),
    ]:
        with pytest.raises(looseleaf.InvalidArgumentError):
            read(reader, *args, filter=filter)


def test_unsupported_expressions_are_refused_by_every_read(tmp_path):
    path = tmp_path / "t.leaf"
    looseleaf.write_table(pa.table({"s": ["a", "b"]}), path)
    reader = looseleaf.open(path)
    bad = pc.utf8_upper(pc.field("s")) == "A"
    message = "filter: function 'utf8_upper' is not supported"
    for read, args in [
        (via_to_table, ()),
        (via_read_all, ()),
        (via_stream, ()),
        (via_read_range, (0, 1)),
        (via_take, ([0],)),
        (via_plan, ()),
    ]:
        with pytest.raises(looseleaf.InvalidArgumentError, match=message):
            read(reader, *args, filter=bad)
