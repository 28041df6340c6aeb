"""Random flat Arrow tables for property tests: every flat type the format stores, with nulls
at random densities (none, some, half, all)."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
from hypothesis import strategies as st

TIMEZONES = [None, "UTC", "Europe/Paris"]


def _ints(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def _strings(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcdefghij éß漢字😀"
    return ["".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 5, 12, 13, 40]))) for _ in range(n)]


def _bytes(rng: random.Random, n: int) -> list[bytes]:
    return [bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 7, 12, 13, 33]))) for _ in range(n)]


def flat_types() -> list[pa.DataType]:
    """Every flat type, with its parameters varied."""
    types = [
        pa.null(),
        pa.bool_(),
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.uint8(),
        pa.uint16(),
        pa.uint32(),
        pa.uint64(),
        pa.float16(),
        pa.float32(),
        pa.float64(),
        pa.date32(),
        pa.date64(),
        pa.time32("s"),
        pa.time32("ms"),
        pa.time64("us"),
        pa.time64("ns"),
        pa.duration("s"),
        pa.duration("ns"),
        pa.month_day_nano_interval(),
        pa.decimal32(7, 2),
        pa.decimal64(15, -2),
        pa.decimal128(38, 10),
        pa.decimal256(60, 5),
        pa.string(),
        pa.large_string(),
        pa.string_view(),
        pa.binary(),
        pa.large_binary(),
        pa.binary_view(),
        pa.binary(5),
    ]
    types += [pa.timestamp(unit, tz=tz) for unit in ("s", "ms", "us", "ns") for tz in TIMEZONES]
    return types


def random_array(rng: random.Random, data_type: pa.DataType, n: int, null_fraction: float) -> pa.Array:
    """An array of ``n`` random values of ``data_type`` with about ``null_fraction`` nulls."""
    mask = [rng.random() < null_fraction for _ in range(n)]
    t = data_type
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        values = [rng.random() < 0.5 for _ in range(n)]
    elif pa.types.is_integer(t):
        bits = t.bit_width
        lo, hi = (
            (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if pa.types.is_signed_integer(t) else (0, 2**bits - 1)
        )
        values = _ints(rng, n, lo, hi)
    elif pa.types.is_float16(t):
        floats = [rng.uniform(-1000, 1000) for _ in range(n)]
        return pa.array(floats, pa.float32(), mask=pa.array(mask, pa.bool_())).cast(pa.float16())
    elif pa.types.is_floating(t):
        values = [rng.uniform(-1e12, 1e12) for _ in range(n)]
    elif pa.types.is_decimal(t):
        values = [
            Decimal(rng.randint(-(10 ** min(t.precision, 30)) + 1, 10 ** min(t.precision, 30) - 1)).scaleb(
                -t.scale
            )
            for _ in range(n)
        ]
    elif pa.types.is_interval(t):
        values = [
            (rng.randint(-100, 100), rng.randint(-100, 100), rng.randint(-(10**12), 10**12)) for _ in range(n)
        ]
    elif t in (pa.date32(), pa.time32("s")):
        values = _ints(rng, n, 0, 86399)
        return pa.array(values, pa.int32(), mask=pa.array(mask, pa.bool_())).cast(t)
    elif t == pa.time32("ms"):
        return pa.array(_ints(rng, n, 0, 86_399_999), pa.int32(), mask=pa.array(mask, pa.bool_())).cast(t)
    elif t == pa.time64("us"):
        return pa.array(_ints(rng, n, 0, 86_399_999_999), pa.int64(), mask=pa.array(mask, pa.bool_())).cast(t)
    elif t == pa.time64("ns"):
        return pa.array(
            _ints(rng, n, 0, 86_399_999_999_999), pa.int64(), mask=pa.array(mask, pa.bool_())
        ).cast(t)
    elif t == pa.date64():
        days = _ints(rng, n, -10000, 30000)
        return pa.array([d * 86_400_000 for d in days], pa.int64(), mask=pa.array(mask, pa.bool_())).cast(t)
    elif pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.array(_ints(rng, n, -(2**62), 2**62), pa.int64(), mask=pa.array(mask, pa.bool_())).cast(t)
    elif pa.types.is_fixed_size_binary(t):
        values = [bytes(rng.getrandbits(8) for _ in range(t.byte_width)) for _ in range(n)]
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        values = _strings(rng, n)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        values = _bytes(rng, n)
    else:
        raise AssertionError(f"no generator for {t}")
    return pa.array([None if m else v for v, m in zip(values, mask, strict=True)], type=t)


@st.composite
def flat_tables(draw: st.DrawFn, max_rows: int = 400, max_columns: int = 6) -> pa.Table:
    """A random table of flat columns."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    num_rows = draw(st.integers(0, max_rows))
    types = flat_types()
    chosen = draw(st.lists(st.sampled_from(types), min_size=1, max_size=max_columns))
    columns, fields = [], []
    for i, t in enumerate(chosen):
        nullable = pa.types.is_null(t) or draw(st.booleans())
        null_fraction = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])) if nullable else 0.0
        columns.append(random_array(rng, t, num_rows, null_fraction))
        fields.append(pa.field(f"c{i}", t, nullable=nullable))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def split_batches(table: pa.Table, sizes: list[int]) -> list[pa.RecordBatch]:
    """The table cut into batches of the given sizes (cycled), to vary the writer's input."""
    batches, start, i = [], 0, 0
    while start < table.num_rows:
        size = max(1, sizes[i % len(sizes)])
        batches.extend(table.slice(start, size).combine_chunks().to_batches())
        start += size
        i += 1
    return batches


NESTED_LEAVES = [
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.large_binary(),
    pa.string_view(),
    pa.timestamp("us", tz="UTC"),
    pa.decimal128(20, 4),
    pa.binary(3),
    pa.null(),
]


def random_nested_type(rng: random.Random, depth: int) -> pa.DataType:
    """A random type of at most ``depth`` levels of nesting over flat leaves."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(NESTED_LEAVES)
    kind = rng.choice(["struct", "list", "large_list", "fixed_size_list", "map"])
    if kind == "struct":
        count = rng.choice([0, 1, 2, 3])
        return pa.struct([pa.field(f"f{i}", random_nested_type(rng, depth - 1)) for i in range(count)])
    if kind == "list":
        return pa.list_(random_nested_type(rng, depth - 1))
    if kind == "large_list":
        return pa.large_list(random_nested_type(rng, depth - 1))
    if kind == "fixed_size_list":
        return pa.list_(random_nested_type(rng, depth - 1), rng.choice([1, 2, 3]))
    return pa.map_(pa.string(), random_nested_type(rng, depth - 1))


def _mask(rng: random.Random, n: int, null_fraction: float) -> pa.Array | None:
    if null_fraction == 0:
        return None
    return pa.array([rng.random() < null_fraction for _ in range(n)], pa.bool_())


def random_nested_array(rng: random.Random, t: pa.DataType, n: int, null_fraction: float) -> pa.Array:
    """``n`` random values of ``t``, with about ``null_fraction`` nulls at this level and random
    null densities below it."""
    child_nulls = rng.choice([0.0, 0.2, 0.5])
    mask = _mask(rng, n, null_fraction)
    if pa.types.is_struct(t):
        children = [random_nested_array(rng, f.type, n, child_nulls) for f in t]
        if not children:
            nulls = mask.to_pylist() if mask is not None else [False] * n
            return pa.array([None if m else {} for m in nulls], t)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t):
        values = random_nested_array(rng, t.value_type, n * t.list_size, child_nulls)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        lengths = [rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(n)]
        offsets = [0]
        for length in lengths:
            offsets.append(offsets[-1] + length)
        total = offsets[-1]
        offset_type = pa.int64() if pa.types.is_large_list(t) else pa.int32()
        offsets_array = pa.array(offsets, offset_type)
        if pa.types.is_map(t):
            keys = pa.array([f"k{rng.randint(0, 9)}" for _ in range(total)], pa.string())
            items = random_nested_array(rng, t.item_type, total, child_nulls)
            return pa.MapArray.from_arrays(offsets_array, keys, items, type=t, mask=mask)
        values = random_nested_array(rng, t.value_type, total, child_nulls)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(offsets_array, values, type=t, mask=mask)
    return random_array(rng, t, n, null_fraction)


@st.composite
def nested_tables(draw: st.DrawFn, max_rows: int = 200, max_columns: int = 4, max_depth: int = 4) -> pa.Table:
    """A random table of nested columns (depth up to ``max_depth``) with nulls at every level."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    num_rows = draw(st.integers(0, max_rows))
    columns, fields = [], []
    for i in range(draw(st.integers(1, max_columns))):
        t = random_nested_type(rng, draw(st.integers(1, max_depth)))
        nullable = pa.types.is_null(t) or draw(st.booleans())
        null_fraction = draw(st.sampled_from([0.0, 0.2, 1.0])) if nullable else 0.0
        columns.append(random_nested_array(rng, t, num_rows, null_fraction))
        fields.append(pa.field(f"c{i}", t, nullable=nullable))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def take_rows(table: pa.Table, indices: list[int]) -> pa.Table:
    """The rows at ``indices``, by slicing (pyarrow's ``take`` has no kernel for view types): the
    independent truth a ``take`` is compared with."""
    return pa.concat_tables([table.slice(0, 0)] + [table.slice(i, 1) for i in indices])


def with_views(data_type: pa.DataType) -> pa.DataType:
    """``data_type`` with its strings and binaries, at any depth, as ``string_view`` and
    ``binary_view``: what a read with ``string_view=True`` returns (dictionaries unchanged)."""
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return pa.string_view()
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return pa.binary_view()
    if pa.types.is_map(data_type):
        key, item = data_type.key_field, data_type.item_field
        return pa.map_(key.with_type(with_views(key.type)), item.with_type(with_views(item.type)))
    if pa.types.is_fixed_size_list(data_type):
        return pa.list_(_field_with_views(data_type.value_field), data_type.list_size)
    if pa.types.is_large_list(data_type):
        return pa.large_list(_field_with_views(data_type.value_field))
    if pa.types.is_list(data_type):
        return pa.list_(_field_with_views(data_type.value_field))
    if pa.types.is_struct(data_type):
        return pa.struct([_field_with_views(f) for f in data_type])
    return data_type


def _field_with_views(field: pa.Field) -> pa.Field:
    return field.with_type(with_views(field.type))


def schema_with_views(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a read with ``string_view=True`` returns it."""
    return pa.schema([_field_with_views(f) for f in schema], metadata=schema.metadata)
