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
