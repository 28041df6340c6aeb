"""The PySpark integration: the ``looseleaf`` data source, the ``mapInArrow`` helpers, the type
mapping and the partition planning.

One SparkSession (``local[2]``) serves every test. The tests skip only when Java is missing
(PySpark itself is a test dependency): CI and the test script install Java.
"""

from __future__ import annotations

import datetime
import os
import random
import struct
import subprocess
import sys
import time
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given
from pyspark.sql import functions as F
from pyspark.sql import types as T

import looseleaf
import looseleaf.spark as ls
from looseleaf.spark._dataset import FileInfo, PartitionOptions, list_files, plan_partitions, schema_file
from looseleaf.spark._filters import ColumnPredicate, FilterPlan, to_predicate
from strategies import nested_tables, random_nested_array, random_nested_type


def _read(spark, path, **options):
    return spark.read.format(ls.python_format(spark)).options(**options).load(str(path))


def _sorted(table: pa.Table, key: str = "id") -> pa.Table:
    return table.sort_by(key)


def _visible_files(directory) -> list[str]:
    return sorted(os.path.basename(p) for p in list_files([str(directory)]))


# --- type mapping and casts (no Spark session) ------------------------------------------------


SPARK_OF_ARROW = [
    (pa.null(), T.NullType()),
    (pa.bool_(), T.BooleanType()),
    (pa.int8(), T.ByteType()),
    (pa.int16(), T.ShortType()),
    (pa.int32(), T.IntegerType()),
    (pa.int64(), T.LongType()),
    (pa.uint8(), T.ShortType()),
    (pa.uint16(), T.IntegerType()),
    (pa.uint32(), T.LongType()),
    (pa.uint64(), T.DecimalType(20, 0)),
    (pa.float16(), T.FloatType()),
    (pa.float32(), T.FloatType()),
    (pa.float64(), T.DoubleType()),
    (pa.decimal32(7, 2), T.DecimalType(7, 2)),
    (pa.decimal128(38, 10), T.DecimalType(38, 10)),
    (pa.decimal256(20, 3), T.DecimalType(20, 3)),
    (pa.string(), T.StringType()),
    (pa.large_string(), T.StringType()),
    (pa.string_view(), T.StringType()),
    (pa.binary(), T.BinaryType()),
    (pa.large_binary(), T.BinaryType()),
    (pa.binary_view(), T.BinaryType()),
    (pa.binary(5), T.BinaryType()),
    (pa.date32(), T.DateType()),
    (pa.date64(), T.DateType()),
    (pa.timestamp("s", tz="Europe/Paris"), T.TimestampType()),
    (pa.timestamp("ns", tz="UTC"), T.TimestampType()),
    (pa.timestamp("ms"), T.TimestampNTZType()),
    (pa.duration("ns"), T.DayTimeIntervalType(0, 3)),
    (pa.list_(pa.int8(), 3), T.ArrayType(T.ByteType())),
    (pa.large_list(pa.string()), T.ArrayType(T.StringType())),
    (pa.map_(pa.string(), pa.uint32()), T.MapType(T.StringType(), T.LongType())),
    (
        pa.struct([("a", pa.int32()), ("b", pa.list_(pa.struct([("c", pa.float64())])))]),
        T.StructType(
            [
                T.StructField("a", T.IntegerType()),
                T.StructField("b", T.ArrayType(T.StructType([T.StructField("c", T.DoubleType())]))),
            ]
        ),
    ),
    (pa.dictionary(pa.int32(), pa.string()), T.StringType()),
]
if hasattr(T, "TimeType"):
    SPARK_OF_ARROW += [(pa.time32("s"), T.TimeType(6)), (pa.time64("ns"), T.TimeType(6))]


@pytest.mark.parametrize(("arrow_type", "spark_type"), SPARK_OF_ARROW, ids=str)
def test_arrow_to_spark_types(arrow_type, spark_type):
    from pyspark.sql.pandas.types import to_arrow_type

    assert ls.arrow_to_spark_type(arrow_type) == spark_type
    # The way back is PySpark's own conversion: exactly what its workers expect.
    field = T.StructField("x", spark_type)
    assert ls.spark_to_arrow_schema(T.StructType([field])).field(0).type == to_arrow_type(
        spark_type, timezone="UTC"
    )


@pytest.mark.parametrize(
    ("arrow_type", "message"),
    [
        (pa.month_day_nano_interval(), "Interval(MonthDayNano)"),
        (pa.decimal256(60, 5), "at most 38 digits"),
        (pa.struct([("inner", pa.list_(pa.month_day_nano_interval()))]), '"c.inner.item"'),
    ],
)
def test_unmappable_types_name_the_column(arrow_type, message):
    with pytest.raises(looseleaf.UnsupportedError, match='column "c') as error:
        ls.arrow_to_spark_schema(pa.schema([("c", arrow_type)]))
    assert message in str(error.value)


def test_unwritable_spark_types_name_the_column():
    schema = T.StructType([T.StructField("v", T.ArrayType(T.YearMonthIntervalType()))])
    with pytest.raises(looseleaf.UnsupportedError, match=r"'v\.element'"):
        ls.spark_to_arrow_schema(schema)


def test_every_flat_type_of_the_format_maps_or_is_refused():
    from strategies import flat_types

    refused = []
    for t in flat_types():
        try:
            ls.arrow_to_spark_type(t)
        except looseleaf.UnsupportedError:
            refused.append(str(t))
    assert refused == ["month_day_nano_interval", "decimal256(60, 5)"]


@given(nested_tables(max_rows=60))
def test_cast_keeps_every_value_of_nested_data(table):
    """Casting to Spark's Arrow form changes types (large → small, fixed-size → variable lists,
    views → plain, field names), never values, including in slices."""
    target = ls.spark_to_arrow_schema(ls.arrow_to_spark_schema(table.schema))
    for batch in [*table.to_batches(), *table.slice(table.num_rows // 3).to_batches()]:
        cast = ls.cast_batch(batch, target)
        assert cast.schema.equals(target)
        cast.validate(full=True)
        assert _comparable(cast) == _comparable(batch)


def _comparable(batch: pa.RecordBatch) -> list:
    return [_values(column) for column in batch.columns]


def _values(array: pa.Array) -> list:
    """Python values of an array, walked through its children (PyArrow's own ``to_pylist``
    and casts trip over some nested null-type children) with timestamps as integers (random
    timestamps lie beyond Python's datetime)."""
    t, n = array.type, len(array)
    valid = array.is_valid().to_pylist()
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        children = [_values(array.field(i)) for i in range(t.num_fields)]  # sliced like the parent
        rows = [dict(zip(names, values, strict=True)) for values in zip(*children, strict=True)] or [{}] * n
        return [row if ok else None for row, ok in zip(rows, valid, strict=True)]
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        offsets = [(array.offset + i) * size for i in range(n + 1)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = array.offsets.to_pylist()
    elif pa.types.is_timestamp(t):
        return array.cast(pa.int64()).to_pylist()
    else:
        return array.to_pylist()
    items = _values(array.values)
    return [items[offsets[i] : offsets[i + 1]] if valid[i] else None for i in range(n)]


def test_cast_checks_lossy_values():
    target = pa.schema([pa.field("ts", pa.timestamp("us", tz="UTC"))])
    whole = pa.record_batch([pa.array([1_000, None], pa.timestamp("ns", tz="Asia/Tokyo"))], names=["ts"])
    assert ls.cast_batch(whole, target).column(0).to_pylist()[0].microsecond == 1
    lossy = pa.record_batch([pa.array([1_001], pa.timestamp("ns", tz="UTC"))], names=["ts"])
    with pytest.raises(looseleaf.UnsupportedError, match=r'f\.leaf: column "ts".*not a whole microsecond'):
        ls.cast_batch(lossy, target, source="f.leaf")
    not_null = pa.schema([pa.field("x", pa.struct([pa.field("y", pa.int32(), nullable=False)]))])
    batch = pa.record_batch([pa.array([{"y": 1}, {"y": None}], pa.struct([("y", pa.int32())]))], names=["x"])
    with pytest.raises(looseleaf.SchemaMismatchError, match=r'"x\.y" is declared non-null'):
        ls.cast_batch(batch, not_null)


def test_looseleaf_imports_without_pyspark():
    code = (
        "import sys; sys.modules['pyspark'] = None\n"  # makes `import pyspark` fail
        "import looseleaf\n"
        "try:\n"
        "    import looseleaf.spark\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "looseleaf.spark needs PySpark 4.0 or later" in result.stdout


# --- partition planning and filters (no Spark session) -------------------------------------------


def _check_cover(partitions, files):
    seen = {f.path: [0] * f.num_rows for f in files}
    for partition in partitions:
        for r in partition:
            for row in range(r.start, r.start + r.count):
                seen[r.path][row] += 1
    assert all(count == 1 for counts in seen.values() for count in counts)


def test_one_big_file_is_cut_into_even_ranges():
    big = FileInfo("big.leaf", 1_000_003, 1_000 * 2**20)  # 1000 MiB
    partitions = plan_partitions([big], PartitionOptions(target_bytes=128 * 2**20))
    assert len(partitions) == 8  # ceil(1000 / 128), not 7 full ones and a sliver
    counts = [r.count for p in partitions for r in p]
    assert max(counts) - min(counts) <= 1
    _check_cover(partitions, [big])


def test_small_files_are_packed_together():
    files = [FileInfo(f"f{i}.leaf", 1_000, 2**20) for i in range(100)]  # 1 MiB each
    partitions = plan_partitions(files, PartitionOptions(target_bytes=64 * 2**20, open_cost_bytes=3 * 2**20))
    assert len(partitions) == 7  # 16 files of (1 MiB + 3 MiB open cost) a partition
    assert all(len(p) <= 16 for p in partitions)
    _check_cover(partitions, files)
    # min_partitions lowers the partition size for small datasets, down to the open cost.
    few = [FileInfo("a.leaf", 10_000, 40 * 2**20)]
    assert len(plan_partitions(few, PartitionOptions(min_partitions=4, open_cost_bytes=2**20))) == 4
    assert len(plan_partitions(few, PartitionOptions(min_partitions=4, open_cost_bytes=30 * 2**20))) == 2
    assert plan_partitions([FileInfo("empty.leaf", 0, 0)], PartitionOptions()) == []


def test_filters_become_predicates_but_are_all_returned():
    if not ls.SUPPORTS_FILTER_PUSHDOWN:
        pytest.skip("this PySpark has no filter pushdown (4.1+)")
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, Not, StringStartsWith

    filters = [
        GreaterThan(("id",), 3),
        EqualTo(("meta", "score"), 1.5),
        In(("id",), (1, 2)),
        IsNull(("x",)),
        StringStartsWith(("s",), "a"),
        Not(EqualTo(("id",), 1)),
    ]
    plan = FilterPlan()
    assert plan.push(filters) == filters  # nothing claimed: Spark evaluates every filter
    assert [p.path for p in plan.predicates] == ["id", "meta.score", "id", "x"]
    assert to_predicate(filters[1]) == ColumnPredicate(("meta", "score"), "==", 1.5)


def test_filters_prune_ranges_by_zone_maps_and_filter_reads(tmp_path):
    if not ls.SUPPORTS_FILTER_PUSHDOWN:
        pytest.skip("this PySpark has no filter pushdown (4.1+)")
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThan

    from looseleaf.spark._datasource import LooseleafFilteringDataSource

    n = 40_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array([i % 7 * 0.5 for i in range(n)])})
    looseleaf.write_table(table, tmp_path / "part-0.leaf", zone_map_rows=1000)
    source = LooseleafFilteringDataSource({"path": str(tmp_path), "targetPartitionBytes": "16KB"})
    reader = source.reader(source.schema())
    # A float predicate is returned to Spark and not applied (Spark orders NaN differently).
    filters = [GreaterThanOrEqual(("id",), 30_500), LessThan(("id",), 31_500), LessThan(("x",), 1.0)]
    assert reader.pushFilters(filters) == filters
    partitions = reader.partitions()
    everything = ls.plan_read(str(tmp_path), targetPartitionBytes="16KB").partitions
    ranges = [r for p in partitions for r in p.ranges]
    assert 0 < len(ranges) < sum(len(p) for p in everything)
    assert all(r.start < 31_500 and r.start + r.count > 30_500 for r in ranges)
    read = pa.Table.from_batches([b for p in partitions for b in reader.read(p)])
    assert read.column("id").to_pylist() == list(range(30_500, 31_500))


def test_options_are_checked(tmp_path):
    with pytest.raises(looseleaf.InvalidArgumentError, match=r"unknown looseleaf option.*colums"):
        ls.plan_read(str(tmp_path), colums="a")
    with pytest.raises(looseleaf.InvalidArgumentError, match="targetPartitionBytes"):
        ls.plan_read(str(tmp_path), targetPartitionBytes="lots")
    with pytest.raises(looseleaf.InvalidArgumentError, match="memory"):
        ls.plan_read("memory://data")
    with pytest.raises(looseleaf.InvalidArgumentError, match="ftp"):
        ls.plan_read("ftp://host/data")
    with pytest.raises(looseleaf.NotFoundError, match="no looseleaf files"):
        ls.plan_read(str(tmp_path))


# --- the data source -------------------------------------------------------------------------------


def _flat_table(n: int = 500) -> pa.Table:
    rng = random.Random(1)
    maybe = lambda values, every: [None if i % every == 3 else v for i, v in enumerate(values)]  # noqa: E731
    base = datetime.datetime(2024, 3, 1, 12, tzinfo=datetime.UTC)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "b": pa.array(maybe([i % 3 == 0 for i in range(n)], 5), pa.bool_()),
            "i8": pa.array(maybe([rng.randint(-128, 127) for _ in range(n)], 7), pa.int8()),
            "i16": pa.array([rng.randint(-(2**15), 2**15 - 1) for _ in range(n)], pa.int16()),
            "i32": pa.array(maybe([rng.randint(-(2**31), 2**31 - 1) for _ in range(n)], 4), pa.int32()),
            "f32": pa.array(maybe([rng.uniform(-1, 1) for _ in range(n)], 6), pa.float32()),
            "f64": pa.array([rng.uniform(-1e9, 1e9) for _ in range(n)], pa.float64()),
            "dec": pa.array(
                maybe([Decimal(rng.randint(-(10**17), 10**17)).scaleb(-4) for _ in range(n)], 9),
                pa.decimal128(22, 4),
            ),
            "s": pa.array(maybe([f"é-{i}-" + "x" * (i % 13) for i in range(n)], 8), pa.string()),
            "bin": pa.array(maybe([bytes([i % 256]) * (i % 5) for i in range(n)], 10), pa.binary()),
            "d": pa.array(
                maybe([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in range(n)], 11),
                pa.date32(),
            ),
            "ts": pa.array(
                maybe([base + datetime.timedelta(seconds=i, microseconds=i) for i in range(n)], 12),
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array(
                [datetime.datetime(1999, 12, 31) + datetime.timedelta(minutes=i) for i in range(n)],
                pa.timestamp("us"),
            ),
            "nothing": pa.nulls(n),
        }
    )


def _nested_table(n: int = 300) -> pa.Table:
    rng = random.Random(7)
    columns = {"id": pa.array(range(n), pa.int64())}
    point = pa.struct([("x", pa.float64()), ("tags", pa.list_(pa.string()))])
    columns["point"] = pa.array(
        [
            None
            if i % 9 == 0
            else {"x": i / 2, "tags": None if i % 4 == 0 else [f"t{j}" for j in range(i % 3)]}
            for i in range(n)
        ],
        point,
    )
    columns["scores"] = pa.array(
        [
            None if i % 7 == 0 else {f"k{j}": (None if j == 1 else [j, i]) for j in range(i % 3)}
            for i in range(n)
        ],
        pa.map_(pa.string(), pa.list_(pa.int64())),
    )
    columns["grid"] = pa.array(
        [[[i, None], [], None] if i % 5 else None for i in range(n)], pa.list_(pa.list_(pa.int32()))
    )
    columns["events"] = pa.array(
        [
            [{"at": datetime.date(2020, 1, 1 + i % 28), "what": None if i % 2 else b"\x00\x01"}] * (i % 3)
            for i in range(n)
        ],
        pa.list_(pa.struct([("at", pa.date32()), ("what", pa.binary())])),
    )
    for i in range(3):  # random nested columns with nulls at every level
        t = random_nested_type(rng, 3)
        columns[f"r{i}"] = random_nested_array(rng, t, n, 0.2)
    return pa.table(columns)


def _rows(table: pa.Table) -> list:
    """The table's values sorted by id, column by column (see :func:`_values`)."""
    table = _sorted(table).combine_chunks()
    return [_values(column.combine_chunks()) for column in table.columns]


def _assert_same_rows(actual: pa.Table, expected: pa.Table):
    assert actual.column_names == expected.column_names
    assert _rows(actual) == _rows(expected)


@pytest.mark.parametrize("make", [_flat_table, _nested_table], ids=["flat", "nested"])
def test_spark_write_then_read_round_trip(spark, tmp_path, make):
    source = make()
    # The schema spelled out: Spark would otherwise take timestamps without zone for TIMESTAMP.
    df = spark.createDataFrame(source, schema=ls.arrow_to_spark_schema(source.schema)).repartition(3)
    expected = df.toArrow()
    out = tmp_path / "ds"
    df.write.format(ls.python_format(spark)).mode("overwrite").save(str(out))

    files = _visible_files(out)
    assert len(files) == 3
    assert all(f.startswith("part-") for f in files)
    assert sorted(os.listdir(out)) == sorted([*files, "_commits", "_schemas"])  # no litter
    back = _read(spark, out)
    assert back.schema == ls.arrow_to_spark_schema(looseleaf.open(schema_file([str(out)])).schema)
    actual = back.toArrow()
    assert actual.schema.types == expected.schema.types
    _assert_same_rows(actual, expected)
    # And the source data itself, not only what Spark made of it.
    assert _rows(actual) == _rows(source)


def test_files_written_by_looseleaf_read_in_spark(spark, tmp_path):
    """Types Spark does not write: unsigned, half floats, views, fixed-size lists and binaries,
    nanoseconds (whole microseconds), date64, durations, times, large types, dictionaries."""
    n = 50
    table = pa.table(
        {
            "id": pa.array(range(n), pa.uint32()),
            "u64": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
            "u8": pa.array([i % 256 for i in range(n)], pa.uint8()),
            "half": pa.array([i / 4 for i in range(n)], pa.float32()).cast(pa.float16()),
            "view": pa.array([f"v{i}" for i in range(n)], pa.string_view()),
            "large": pa.array([None if i % 3 else b"x" * i for i in range(n)], pa.large_binary()),
            "fixed": pa.array([bytes([i, i]) for i in range(n)], pa.binary(2)),
            "vec": pa.array([[float(i), None, -1.0] for i in range(n)], pa.list_(pa.float32(), 3)),
            "ns": pa.array([i * 1_000 for i in range(n)], pa.timestamp("ns", tz="America/New_York")),
            "d64": pa.array([i * 86_400_000 for i in range(n)], pa.date64()),
            "dur": pa.array([i * 1_000 for i in range(n)], pa.duration("ns")),
            "dec32": pa.array([Decimal(i).scaleb(-2) for i in range(n)], pa.decimal32(5, 2)),
            "ll": pa.array([[i] * (i % 4) for i in range(n)], pa.large_list(pa.int16())),
            "dict": pa.array([None if i % 7 == 0 else f"d{i % 3}" for i in range(n)]).dictionary_encode(),
        }
    )
    if hasattr(T, "TimeType"):
        table = table.append_column("t", pa.array([i * 1_000 for i in range(n)], pa.time32("ms")))
    (tmp_path / "ds").mkdir()
    looseleaf.write_table(table, tmp_path / "ds" / "one.leaf")
    df = _read(spark, tmp_path / "ds")
    assert dict(df.dtypes)["u64"] == "decimal(20,0)"
    assert dict(df.dtypes)["id"] == "bigint"
    rows = {r["id"]: r for r in df.collect()}
    source = {r["id"]: r for r in table.to_pylist()}
    assert rows.keys() == source.keys()
    for i, row in rows.items():
        want = source[i]
        for same in ["u64", "u8", "half", "view", "large", "fixed", "vec", "ll", "dec32", "d64", "dict"]:
            assert row[same] == want[same], same
        assert row["ns"].replace(tzinfo=datetime.UTC) == want["ns"].to_pydatetime()  # Spark returns UTC here
        assert row["dur"] == datetime.timedelta(microseconds=i)
        if "t" in row:
            assert row["t"] == want["t"]

    # A nanosecond that does not fit Spark's microseconds fails the read, naming file and column.
    looseleaf.write_table(pa.table({"ns": pa.array([1], pa.timestamp("ns"))}), tmp_path / "lossy.leaf")
    with pytest.raises(Exception, match=r'lossy\.leaf: column "ns".*not a whole microsecond'):
        _read(spark, tmp_path / "lossy.leaf").collect()


def test_one_large_file_is_read_by_several_tasks(spark, tmp_path):
    n = 300_000
    rng = random.Random(3)
    table = pa.table(
        {"id": pa.array(range(n), pa.int64()), "v": pa.array([rng.getrandbits(62) for _ in range(n)])}
    )
    path = str(tmp_path / "big.leaf")
    looseleaf.write_table(table, path, page_size=64 * 1024)
    stored = ls.plan_read(path).files[0].projected_bytes  # the ids compress to almost nothing
    options = {"targetPartitionBytes": str(stored // 7 + 1), "openCostBytes": "1"}
    plan = ls.plan_read(path, **options)
    assert [len(p) for p in plan.partitions] == [1] * 7
    df = _read(spark, path, **options)
    assert df.rdd.getNumPartitions() == 7
    counts = df.groupBy(F.spark_partition_id().alias("p")).count().collect()
    assert len(counts) == 7
    assert all(abs(r["count"] - n / 7) <= 1 for r in counts)
    got = df.toArrow()
    assert sorted(got.column("id").to_pylist()) == list(range(n))  # every row once
    assert _sorted(got).equals(table)


def test_many_small_files_share_tasks(spark, tmp_path):
    for i in range(12):
        looseleaf.write_table(
            pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), tmp_path / f"f{i:02d}.leaf"
        )
    df = _read(spark, tmp_path, minPartitions="1")
    assert df.rdd.getNumPartitions() == 1  # twelve tiny files: one task
    assert sorted(r["id"] for r in df.collect()) == list(range(120))
    assert _read(spark, tmp_path).rdd.getNumPartitions() == 2  # the session's parallelism


def _corrupt_column_metadata(path, field: str) -> None:
    """Breaks the CRC of one column's metadata block: any read that touches the column (its
    pages or its metadata) fails, while the file still opens and other columns read fine."""
    column = next(c["column"] for c in looseleaf.open(path).metadata["columns"] if c["field"] == field)
    with open(path, "r+b") as f:
        f.seek(-40, os.SEEK_END)
        table_offset = struct.unpack("<Q", f.read(40)[16:24])[0]
        f.seek(table_offset + 24 * column + 16)
        crc = f.read(4)
        f.seek(table_offset + 24 * column + 16)
        f.write(bytes(b ^ 0xFF for b in crc))


def test_columns_option_reads_only_those_columns(spark, tmp_path):
    n = 1_000
    # Random scores: the projected columns must stay larger than a few partitions of 4 KiB
    # whatever the encodings (scores like i / 10 now take a few hundred bytes).
    rng = random.Random(7)
    scores = [rng.random() for _ in range(n)]
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "payload": pa.array([f"p{i}" * 20 for i in range(n)]),
            "meta": pa.array([{"score": scores[i], "name": f"n{i}", "extra": [i]} for i in range(n)]),
        }
    )
    path = tmp_path / "t.leaf"
    looseleaf.write_table(table, path)

    plan = ls.plan_read(str(path), columns="meta.score, id", targetPartitionBytes="4k", openCostBytes="1")
    assert plan.columns == ["meta.score", "id"]
    assert [f.name for f in plan.schema.fields] == ["meta", "id"]  # looseleaf's projection order
    assert len(plan.partitions) > 1
    reader = looseleaf.open(path)
    for ranges in plan.partitions:
        for r in ranges:
            io = reader.plan(plan.columns, start=r.start, num_rows=r.count)
            # (the struct's own validity is read only if it has nulls)
            assert {"id", "meta.score"} <= set(io["columns"]) <= {"id", "meta", "meta.score"}

    _corrupt_column_metadata(path, "payload")
    df = _read(spark, path, columns="meta.score,id")
    assert df.columns == ["meta", "id"]
    assert df.schema["meta"].dataType == T.StructType([T.StructField("score", T.DoubleType())])
    rows = sorted(df.collect(), key=lambda r: r["id"])
    assert [(r["id"], r["meta"]["score"]) for r in rows] == [(i, scores[i]) for i in range(n)]
    # The same read without the option touches "payload" and fails: the check above can fail.
    with pytest.raises(Exception, match=r"(?s)t\.leaf.*(?i:checksum|corrupt)"):
        _read(spark, path).collect()


def test_user_schema_projects_and_is_checked(spark, tmp_path):
    looseleaf.write_table(pa.table({"a": [1, 2], "b": ["x", "y"], "c": [1.5, 2.5]}), tmp_path / "t.leaf")
    df = spark.read.format(ls.python_format(spark)).schema("c double, a bigint").load(str(tmp_path))
    assert sorted(df.collect()) == [(1.5, 1), (2.5, 2)]
    wrong = spark.read.format(ls.python_format(spark)).schema("a string").load(str(tmp_path))
    with pytest.raises(Exception, match=r"t\.leaf: the columns read have types \(a: bigint\)"):
        wrong.collect()


def test_hidden_uncommitted_and_staging_files_are_ignored(spark, tmp_path):
    spark.range(5).write.format(ls.python_format(spark)).mode("overwrite").save(str(tmp_path))
    # A data file no commit names (a job that died before committing) is not read either.
    looseleaf.write_table(pa.table({"id": pa.array([77], pa.int64())}), tmp_path / "part-99999-x.leaf")
    junk = pa.table({"id": pa.array([99], pa.int64())})
    (tmp_path / "_temporary" / "job").mkdir(parents=True)
    for name in ["_temporary/job/part-0.leaf", ".hidden.leaf", "_other.leaf"]:
        looseleaf.write_table(junk, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not data")
    assert sorted(r["id"] for r in _read(spark, tmp_path).collect()) == list(range(5))
    # A glob reads what it matches, hidden names excepted.
    glob = str(tmp_path / "*.leaf")
    assert sorted(r["id"] for r in _read(spark, glob).collect()) == list(range(5))


@pytest.fixture(params=["python", "jvm"])
def write_format(request, spark):
    """The data source writing: the Python one, or the JVM connector's (the same commit
    protocol, the core's ``WriteJob``); reads stay with the Python source."""
    if request.param == "python":
        return ls.python_format(spark)
    if not ls.jvm_enabled(spark):
        pytest.skip("the JVM connector was not built (see the session's stderr)")
    return ls.JVM_FORMAT


def test_append_adds_files_and_overwrite_replaces_them(spark, tmp_path, write_format):
    out = str(tmp_path / "ds")
    spark.range(0, 10, 1, 2).write.format(write_format).mode("overwrite").save(out)
    first = _visible_files(out)
    spark.range(10, 15, 1, 1).write.format(write_format).mode("append").save(out)
    second = _visible_files(out)
    assert len(first) == 2
    assert len(second) == 3
    assert set(first) < set(second)
    assert sorted(r["id"] for r in _read(spark, out).collect()) == list(range(15))

    with pytest.raises(Exception, match="cannot append rows of schema"):
        spark.range(3).selectExpr("cast(id as string) as id").write.format(write_format).mode("append").save(
            out
        )
    with pytest.raises(Exception, match=r"Append.*Overwrite"):
        spark.range(3).write.format(write_format).save(out)  # default mode: error if exists

    spark.range(100, 103, 1, 1).write.format(write_format).mode("overwrite").save(out)
    assert len(_visible_files(out)) == 1
    assert sorted(r["id"] for r in _read(spark, out).collect()) == [100, 101, 102]


def test_a_failed_write_leaves_nothing_readable(spark, tmp_path, write_format):
    out = tmp_path / "ds"
    spark.range(0, 4).write.format(write_format).mode("overwrite").save(str(out))
    before = sorted(os.listdir(out))

    @F.udf("long")
    def fail_in_one_partition(x):
        if x == 15:
            time.sleep(0.5)  # let the other task stage its file first
            raise ValueError("this task fails")
        return x

    failing = spark.range(0, 20, 1, 2).select(fail_in_one_partition("id").alias("id"))
    for mode in ["overwrite", "append"]:
        with pytest.raises(Exception, match="this task fails"):
            failing.write.format(write_format).mode(mode).save(str(out))
        # No new file, no staging left, old data kept. The other task may still be finishing
        # when the job fails: it deletes its own file once it sees the job aborted.
        deadline = time.monotonic() + 30
        while sorted(os.listdir(out)) != before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sorted(os.listdir(out)) == before
        assert sorted(r["id"] for r in _read(spark, out).collect()) == [0, 1, 2, 3]

    fresh = tmp_path / "fresh"
    with pytest.raises(Exception, match="this task fails"):
        failing.write.format(write_format).mode("overwrite").save(str(fresh))
    assert not fresh.exists() or list_files([str(fresh)]) == []


def test_a_corrupt_file_fails_the_read_naming_it(spark, tmp_path):
    written = tmp_path / "written"
    spark.range(10).write.format(ls.python_format(spark)).mode("overwrite").save(str(written))
    good = os.path.join(written, _visible_files(written)[0])
    # A directory without a commit log, as files copied in by other means make one: every
    # file in it is read.
    tmp_path = tmp_path / "copied"
    tmp_path.mkdir()
    looseleaf.write_table(looseleaf.open(good).to_table(), tmp_path / "good.leaf")
    truncated = tmp_path / "part-truncated.leaf"
    with open(good, "rb") as f:
        data = f.read()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception, match=r"part-truncated\.leaf") as error:
        _read(spark, tmp_path).collect()
    assert "corrupt" in str(error.value).lower()
    truncated.unlink()
    (tmp_path / "garbage.leaf").write_bytes(b"this is not a looseleaf file" * 10)
    with pytest.raises(Exception, match=r"garbage\.leaf.*not a looseleaf file"):
        _read(spark, tmp_path).count()


def test_empty_dataset_keeps_its_schema(spark, tmp_path):
    spark.range(0).selectExpr("id", "cast(id as string) s").write.format(ls.python_format(spark)).mode(
        "overwrite"
    ).save(str(tmp_path))
    assert _visible_files(tmp_path) == []
    df = _read(spark, tmp_path)
    assert df.dtypes == [("id", "bigint"), ("s", "string")]
    assert df.count() == 0


def test_filter_pushdown_keeps_results_exact(spark, tmp_path):
    if not ls.SUPPORTS_FILTER_PUSHDOWN:
        pytest.skip("this PySpark has no filter pushdown (4.1+)")
    spark.range(0, 100, 1, 2).selectExpr("id", "named_struct('x', id % 10) as s").write.format(
        ls.python_format(spark)
    ).mode("overwrite").save(str(tmp_path))
    conf = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(conf, "true")
    try:
        assert issubclass(ls.register(spark), ls.LooseleafFilteringDataSource)
        result = _read(spark, tmp_path).filter("id >= 90 and s.x < 5 and id in (90, 93, 95, 97)")
        assert sorted(r["id"] for r in result.collect()) == [90, 93]
    finally:
        spark.conf.set(conf, "false")
        assert not issubclass(ls.register(spark), ls.LooseleafFilteringDataSource)
    assert _read(spark, tmp_path).filter("id < 3").count() == 3


def test_map_in_arrow_helpers_round_trip(spark, tmp_path):
    source = _nested_table(200)
    df = spark.createDataFrame(source, schema=ls.arrow_to_spark_schema(source.schema)).repartition(3)
    out = str(tmp_path / "files")
    written = df.mapInArrow(ls.write_partitions(out, df.schema), ls.WRITE_RESULT_SCHEMA).collect()
    assert len(written) == 3
    assert sum(r["num_rows"] for r in written) == 200
    assert sorted(os.path.basename(r["path"]) for r in written) == _visible_files(out)

    schema = ls.schema_of(out)
    ranges = spark.createDataFrame(ls.list_ranges(out, targetPartitionBytes="2k"), ls.RANGE_SCHEMA)
    assert ranges.count() > 3  # files split into several ranges
    back = ranges.repartition(2).mapInArrow(ls.read_ranges(schema), schema)
    _assert_same_rows(back.toArrow(), df.toArrow())

    # A projection with a nested path, on hand-made ranges.
    narrow = ls.schema_of(out, columns="point.x,id")
    rows = spark.createDataFrame(
        [(r["path"], 0, r["num_rows"]) for r in written], "path string, start long, count long"
    )
    got = rows.mapInArrow(ls.read_ranges(narrow, columns="point.x,id"), narrow).toArrow()
    assert got.column_names == ["point", "id"]  # looseleaf's projection order
    expected = [
        {"point": None if r["point"] is None else {"x": r["point"]["x"]}, "id": r["id"]}
        for r in source.select(["point", "id"]).to_pylist()
    ]
    assert _sorted(got).to_pylist() == sorted(expected, key=lambda r: r["id"])

    # A partitioned dataset: partition columns come from the directories above each file.
    table = pa.table(
        {
            "id": pa.array(range(90), pa.int64()),
            "k": [["a/b", None, "x y"][i % 3] for i in range(90)],
            "n": pa.array([i % 2 for i in range(90)], pa.int32()),
        }
    )
    parted = str(tmp_path / "parted")
    looseleaf.write_dataset(table, parted, partitioning=["k", "n"])
    schema = ls.schema_of(parted)
    ranges = spark.createDataFrame(ls.list_ranges(parted), ls.RANGE_SCHEMA)
    back = ranges.mapInArrow(ls.read_ranges(schema), schema).toArrow()
    assert back.column_names == ["id", "k", "n"]
    assert sorted(back.to_pylist(), key=lambda r: r["id"]) == table.to_pylist()


# --- object stores (moto's S3 server on 127.0.0.1) --------------------------------------------


@pytest.fixture(scope="module")
def s3():
    from s3_server import start_moto

    server = start_moto()
    server.create_bucket("spark")
    yield server
    server.stop()


def _storage_options(s3) -> dict[str, str]:
    return {f"storage.{k}": v for k, v in s3.storage_options().items()}


def test_s3_write_then_read(spark, s3):
    from s3_server import SECRET_KEY

    source = _flat_table()
    df = spark.createDataFrame(source, schema=ls.arrow_to_spark_schema(source.schema)).repartition(3)
    out = "s3a://spark/flat"
    options = _storage_options(s3)
    df.write.format(ls.python_format(spark)).options(**options).mode("overwrite").save(out)
    back = _read(spark, out, **options)
    _assert_same_rows(back.toArrow(), df.toArrow())
    # The files, from plain Python: three data files, committed.
    files = list_files([out], storage=ls.ReadOptions.parse({**options, "path": out}).storage)
    assert len(files) == 3
    assert all(f.startswith("s3a://spark/flat/part-") for f in files)
    # Projection, append, and the secret nowhere in the plan.
    narrow = _read(spark, out, columns="id", **options)
    plan = narrow._jdf.queryExecution().toString()
    assert SECRET_KEY not in plan
    assert narrow.count() == source.num_rows
    df.limit(5).write.format(ls.python_format(spark)).options(**options).mode("append").save(out)
    assert _read(spark, out, **options).count() == source.num_rows + 5


def test_s3_failed_job_leaves_nothing_readable(spark, s3):
    out = "s3://spark/failing"
    options = _storage_options(s3)
    spark.range(0, 4).write.format(ls.python_format(spark)).options(**options).mode("overwrite").save(out)
    storage = ls.ReadOptions.parse({**options, "path": out}).storage
    before = storage.list(out, recursive=True)

    @F.udf("long")
    def fail_in_one_partition(x):
        if x == 15:
            time.sleep(0.5)
            raise ValueError("this task fails")
        return x

    failing = spark.range(0, 20, 1, 2).select(fail_in_one_partition("id").alias("id"))
    with pytest.raises(Exception, match="this task fails"):
        failing.write.format(ls.python_format(spark)).options(**options).mode("overwrite").save(out)

    def left() -> list:
        return [entry for entry in storage.list(out, recursive=True) if entry not in before]

    # The other task may still be finishing: it deletes its own file once it sees the marker.
    deadline = time.monotonic() + 30
    while len(left()) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    remaining = left()
    assert len(remaining) == 1, remaining
    assert remaining[0][0].startswith(f"{out}/_commits/"), remaining
    assert remaining[0][0].endswith(".aborted"), remaining
    assert sorted(r["id"] for r in _read(spark, out, **options).collect()) == [0, 1, 2, 3]


def test_s3_map_in_arrow_helpers(spark, s3):
    options = _storage_options(s3)
    out = "s3://spark/mapped"
    spark.range(0, 1000, 1, 4).write.format(ls.python_format(spark)).options(**options).mode(
        "overwrite"
    ).save(out)
    schema = ls.schema_of(out, **options)
    ranges = spark.createDataFrame(ls.list_ranges(out, **options), ls.RANGE_SCHEMA)
    back = ranges.repartition(2).mapInArrow(
        ls.read_ranges(schema, storage_options=s3.storage_options()), schema
    )
    assert sorted(r["id"] for r in back.collect()) == list(range(1000))
    written = spark.range(50).mapInArrow(
        ls.write_partitions("s3://spark/parts", storage_options=s3.storage_options()), ls.WRITE_RESULT_SCHEMA
    )
    paths = [r["path"] for r in written.collect()]
    assert paths
    assert all(p.startswith("s3://spark/parts/part-") for p in paths)
    total = sum(looseleaf.open(p, storage_options=s3.storage_options()).num_rows for p in paths)
    assert total == 50


# --- partition directories (key=value/) ------------------------------------------------------

PARTITION_KEYS = ["a b", "x/y", None, "q=1%"]


def _partitioned_frame(spark):
    """Nulls in both partition columns, strings with spaces, ``/``, ``=`` and ``%``."""
    rows = [(i, [1, None, -3][i % 3], PARTITION_KEYS[i % 4], float(i)) for i in range(60)]
    return spark.createDataFrame(rows, "id long, k1 int, k2 string, v double").repartition(3)


def _write_partitioned(df, write_format, out, mode="overwrite"):
    writer = df.write.format(write_format).mode(mode)
    if write_format == ls.JVM_FORMAT:
        writer.partitionBy("k1", "k2").save(out)  # the connector takes Spark's partitionBy
    else:
        writer.option("partitionBy", "k1,k2").save(out)  # Spark refuses it for Python sources


def _leaf_directories(out) -> set[str]:
    return {
        os.path.relpath(root, out)
        for root, _, files in os.walk(out)
        if any(f.endswith(".leaf") for f in files) and "_schemas" not in root
    }


def _read_formats(spark) -> list[str]:
    return [ls.python_format(spark), *([ls.JVM_FORMAT] if ls.jvm_enabled(spark) else [])]


def test_partitioned_writes_read_back_equal_everywhere(spark, tmp_path, write_format):
    df = _partitioned_frame(spark)
    out = str(tmp_path / "ds")
    _write_partitioned(df, write_format, out)
    directories = _leaf_directories(out)
    # The core's escaping (HivePartitioning::directory), nulls as Hive's default partition.
    assert {"k1=1/k2=a%20b", "k1=__HIVE_DEFAULT_PARTITION__/k2=x%2Fy", "k1=-3/k2=q%3D1%25"} <= directories
    assert "k1=1/k2=__HIVE_DEFAULT_PARTITION__" in directories
    expected = df.select("id", "v", "k1", "k2").toArrow().sort_by("id")
    core = looseleaf.dataset(out).to_table().sort_by("id")
    assert core.schema.names == ["id", "v", "k1", "k2"]
    assert core.schema.field("k1").type == pa.int32()
    assert core.schema.field("k2").type == pa.string()
    assert core.to_pylist() == expected.to_pylist()
    for read_format in _read_formats(spark):
        back = spark.read.format(read_format).load(out)
        assert back.dtypes == [("id", "bigint"), ("v", "double"), ("k1", "int"), ("k2", "string")]
        assert back.orderBy("id").toArrow().to_pylist() == core.to_pylist(), read_format
        slashes = back.select("id").filter("k2 = 'x/y'").collect()
        assert sorted(r["id"] for r in slashes) == list(range(1, 60, 4))
        assert back.filter("k1 is null").count() == 20

    # An append keeps the partitioning; an overwrite replaces every partition directory's files.
    _write_partitioned(df.filter("id < 10"), write_format, out, mode="append")
    assert looseleaf.dataset(out).num_rows == 70
    _write_partitioned(df.filter("id < 6"), write_format, out)
    assert sorted(looseleaf.dataset(out).to_table()["id"].to_pylist()) == list(range(6))
    leaf_files = [
        f for root, _, files in os.walk(out) if "_schemas" not in root for f in files if f.endswith(".leaf")
    ]
    assert len(leaf_files) == len(looseleaf.dataset(out).files), "the overwritten files are deleted"
    with pytest.raises(Exception, match="partitioned by"):
        df.write.format(write_format).mode("append").save(out)


def test_python_source_is_refused_spark_partition_by(spark, tmp_path):
    """Spark refuses ``partitionBy`` for Python data sources (their table has no partitioning):
    the Python source takes the ``partitionBy`` option instead."""
    with pytest.raises(Exception, match="partitioning"):
        _partitioned_frame(spark).write.format(ls.python_format(spark)).partitionBy("k1").mode(
            "overwrite"
        ).save(str(tmp_path / "ds"))


def test_partition_filters_prune_files_in_the_python_source(spark, tmp_path):
    if not ls.SUPPORTS_FILTER_PUSHDOWN:
        pytest.skip("this PySpark has no filter pushdown (4.1+)")
    from pyspark.sql.datasource import EqualTo, GreaterThan

    out = str(tmp_path / "ds")
    _write_partitioned(_partitioned_frame(spark), ls.python_format(spark), out)
    options = ls.ReadOptions.parse({"path": out})
    from looseleaf.spark._datasource import LooseleafFilteringReader, dataset_schema

    reader = LooseleafFilteringReader(options, dataset_schema(options))
    reader.pushFilters([EqualTo(("k1",), -3), GreaterThan(("id",), 10)])
    planned = {r.path for p in reader.partitions() for r in p.ranges}
    assert planned
    assert all("/k1=-3/" in path for path in planned)
    assert reader.pruned_files
    assert not any("/k1=-3/" in path for path in reader.pruned_files)
    # Every file outside k1=-3 is pruned by its partition values (some of k1=-3 by zone maps too).
    others = [f for f in looseleaf.dataset(out).files if "/k1=-3/" not in f]
    assert len(reader.pruned_files) == len(others)

    conf = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(conf, "true")
    try:
        ls.register(spark)
        result = _read(spark, out).filter("k1 = -3 and id > 10 and k2 is not null")
        expected = [i for i in range(11, 60) if i % 3 == 2 and i % 4 != 2]
        assert sorted(r["id"] for r in result.collect()) == expected
    finally:
        spark.conf.set(conf, "false")
        ls.register(spark)
