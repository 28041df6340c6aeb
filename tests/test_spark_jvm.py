"""The JVM connector (``format("looseleaf")`` in a configured session: jvm/ over
rust/looseleaf-jni): files written by the Python path read back equal through Spark's columnar
batches, pruning down to struct fields, ``COUNT(*)`` from metadata, many partitions from one
file, errors naming the file, no native memory left behind; and writes through the core's write
job, equal to their source and stored as the Python data source stores them.

The session comes from ``conftest.py``, which builds the connector; these tests skip when it
could not (no ``cargo`` or ``javac``), never when it failed to build.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import looseleaf
import looseleaf.spark as ls


@pytest.fixture(scope="module")
def jvm(spark):
    if not ls.jvm_enabled(spark):
        pytest.skip("the JVM connector was not built (see the session's stderr)")
    return spark


def _read(spark, path, **options):
    return spark.read.format(ls.JVM_FORMAT).options(**options).load(str(path))


def _live_native_bytes(spark) -> int:
    return int(spark._jvm.io.looseleaf.spark.LooseleafDataSource.liveNativeBytes())


EPOCH = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)

# Leaf types the JVM path passes to Spark unchanged, with a value maker each.
LEAVES = {
    "int8": (pa.int8(), lambda i: i % 100 - 50),
    "int16": (pa.int16(), lambda i: i * 7 % 30000 - 15000),
    "int32": (pa.int32(), lambda i: i * 1_000_003 % 2**31 - 2**30),
    "int64": (pa.int64(), lambda i: i * 10**12 - 5),
    "float32": (pa.float32(), lambda i: i / 4),
    "float64": (pa.float64(), lambda i: i / 3),
    "bool": (pa.bool_(), lambda i: i % 3 == 0),
    "string": (pa.string(), lambda i: f"s{i}" * (i % 4)),
    "large_string": (pa.large_string(), lambda i: f"L{i}"),
    "binary": (pa.binary(), lambda i: bytes([i % 256]) * (i % 5)),
    "date32": (pa.date32(), lambda i: datetime.date(2000, 1, 1) + datetime.timedelta(days=i)),
    "timestamp": (
        pa.timestamp("us", tz="UTC"),
        lambda i: EPOCH + datetime.timedelta(microseconds=999 * i),
    ),
    "decimal": (pa.decimal128(12, 2), lambda i: Decimal((-1) ** i * i * 37) / 100),
    "wide_decimal": (pa.decimal128(30, 3), lambda i: Decimal((-1) ** i * i * 10**22 + i) / 1000),
    # Read through the core's casts to the form Spark reads (looseleaf::spark_form).
    "uint8": (pa.uint8(), lambda i: i % 256),
    "uint16": (pa.uint16(), lambda i: 65535 - i),
    "uint32": (pa.uint32(), lambda i: 2**32 - 1 - i),
    "uint64": (pa.uint64(), lambda i: 2**64 - 1 - i),
    "float16": (pa.float16(), lambda i: __import__("numpy").float16(i / 8)),
    "timestamp_ns": (pa.timestamp("ns", tz="UTC"), lambda i: EPOCH + datetime.timedelta(microseconds=7 * i)),
    "timestamp_ms_naive": (
        pa.timestamp("ms"),
        lambda i: datetime.datetime(2001, 2, 3) + datetime.timedelta(seconds=i),
    ),
    "date64": (pa.date64(), lambda i: datetime.date(1960, 1, 1) + datetime.timedelta(days=3 * i)),
    "fixed_binary": (pa.binary(3), lambda i: bytes([i % 256, 1, 2])),
    "string_view": (pa.string_view(), lambda i: f"view {i}" * (i % 3)),
    "dictionary": (pa.dictionary(pa.int8(), pa.string()), lambda i: f"d{i % 5}"),
}


SHAPES = ["leaf", "struct", "list", "map", "list_of_struct", "large_list", "fixed_list"]


def _column(name: str, shape: str, rows: int, null_every: int, c: int) -> pa.Array:
    """A column of leaf type ``name`` in ``shape``, with nulls at every level."""

    def leaf(kind: str, offset: int) -> pa.Array:
        data_type, make = LEAVES[kind]
        return pa.array([None if (i + offset) % null_every == 0 else make(i) for i in range(rows)], data_type)

    mask = pa.array([(i + c) % (null_every + 1) == 0 for i in range(rows)], pa.bool_())
    if shape == "leaf":
        return leaf(name, c)
    if shape == "struct":
        return pa.StructArray.from_arrays([leaf(name, c), leaf("string", c + 1)], names=["x", "y"], mask=mask)
    if shape == "fixed_list":
        items = leaf(name, c)
        pairs = pa.concat_arrays([items, items])  # 2 items per row
        return pa.FixedSizeListArray.from_arrays(pairs.slice(0, 2 * rows), 2, mask=mask)
    if shape == "map":
        keys = pa.array([f"k{i}" for i in range(rows)], pa.string())
        offsets = pa.array(range(rows + 1), pa.int32())
        return pa.MapArray.from_arrays(offsets, keys, leaf(name, c), mask=mask)
    items = leaf(name, c)
    if shape == "list_of_struct":
        items = pa.StructArray.from_arrays([items], names=["v"])
    offsets, at = [0], 0
    for i in range(rows):
        at = min(at + i % 4, rows)
        offsets.append(at)
    if shape == "large_list":
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items, mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=mask)


@st.composite
def jvm_tables(draw):
    """Tables of supported leaves, structs, lists and maps, with nulls at every level."""
    rows = draw(st.integers(0, 300))
    null_every = draw(st.integers(2, 9))
    columns = {"id": pa.array(range(rows), pa.int64())}
    for c in range(draw(st.integers(1, 5))):
        name = draw(st.sampled_from(sorted(LEAVES)))
        shape = draw(st.sampled_from(SHAPES))
        columns[f"c{c}_{shape}_{name}"] = _column(name, shape, rows, null_every, c)
    return pa.table(columns)


def test_every_type_in_every_shape_reads_back_equal(jvm, tmp_path):
    rows = 97
    columns = {"id": pa.array(range(rows), pa.int64())}
    for c, (name, shape) in enumerate((n, s) for n in sorted(LEAVES) for s in SHAPES):
        columns[f"c{c}_{shape}_{name}"] = _column(name, shape, rows, 5, c)
    table = pa.table(columns)
    path = tmp_path / "every.leaf"
    looseleaf.write_table(table, str(path), page_size=1024)
    got = _read(jvm, path, batchSize=10).toArrow()
    assert got.column_names == table.column_names
    for name in table.column_names:
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


@given(
    table=jvm_tables(),
    batch_size=st.sampled_from([1, 7, 100, 8192]),
    page_size=st.sampled_from([256, 8 << 20]),
)
def test_files_written_by_python_read_back_equal(jvm, tmp_path_factory, table, batch_size, page_size):
    path = tmp_path_factory.mktemp("jvm") / "t.leaf"
    looseleaf.write_table(table, str(path), page_size=page_size)
    df = _read(jvm, path, batchSize=batch_size, maxPartitionBytes=1 << 12)
    assert _rows(df.toArrow()) == _rows(table)
    assert df.count() == table.num_rows
    assert _live_native_bytes(jvm) == 0


def test_pruning_reads_only_the_columns_and_struct_fields_used(jvm, tmp_path):
    n = 5000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [f"n{i}" if i % 7 else None for i in range(n)],
            "s": pa.StructArray.from_arrays(
                [pa.array(range(n), pa.int64()), pa.array([str(i) for i in range(n)])], names=["a", "b"]
            ),
            "wide": [f"{i * 7919:0100d}" for i in range(n)],
        }
    )
    path = tmp_path / "p.leaf"
    looseleaf.write_table(table, str(path))
    df = _read(jvm, path).select("name", "s.b")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "columns [name, s.b]" in plan, plan
    assert df.toArrow().to_pylist() == [{"name": r["name"], "b": r["s"]["b"]} for r in table.to_pylist()]

    # The plan's sizes come from the I/O plan of the projection: far below the whole file.
    def planned_bytes(df) -> int:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))

    assert planned_bytes(_read(jvm, path).select("id")) < planned_bytes(_read(jvm, path)) / 4

    # And in the reader's own I/O counters, which the scan node reports as SQL metrics.
    def bytes_read(df) -> int:
        df.collect()
        scan = df._jdf.queryExecution().executedPlan().collectLeaves().head()
        return int(scan.metrics().apply("looseleafBytesRead").value())

    narrow, everything = bytes_read(_read(jvm, path).select("id")), bytes_read(_read(jvm, path))
    assert 0 < narrow < everything / 4, (narrow, everything)


def test_count_star_is_answered_from_metadata(jvm, tmp_path):
    paths = []
    for i, n in enumerate([10, 0, 12345]):
        path = tmp_path / f"part-{i}.leaf"
        looseleaf.write_table(pa.table({"x": pa.array(range(n), pa.int32())}), str(path))
        paths.append(path)
    df = _read(jvm, tmp_path)
    counted = df.groupBy().count()
    plan = counted._jdf.queryExecution().executedPlan().toString()
    assert "aggregates from metadata" in plan, plan
    assert counted.collect()[0][0] == 12355
    assert df.count() == 12355
    # A filter is not pushed: the rows are read and counted by Spark.
    assert df.filter("x % 5 = 0").count() == 2 + 0 + 2469


def test_one_large_file_feeds_many_partitions_in_order(jvm, tmp_path):
    n = 200_000
    ids = pa.array(range(n), pa.int64())
    table = pa.table({"id": ids, "v": pa.array([i * 2654435761 % 2**40 for i in range(n)], pa.int64())})
    path = tmp_path / "big.leaf"
    looseleaf.write_table(table, str(path), page_size=64 << 10)
    df = _read(jvm, path, maxPartitionBytes=128 << 10)
    assert df.rdd.getNumPartitions() >= 4
    got = df.toArrow()
    assert got.column("id").to_pylist() == list(range(n))
    assert got.column("v").to_pylist() == table.column("v").to_pylist()


def test_errors_name_the_file_or_column(jvm, tmp_path):
    corrupt = tmp_path / "corrupt.leaf"
    corrupt.write_bytes(b"not a looseleaf file at all, but long enough to have a tail" * 3)
    with pytest.raises(Exception, match=r"corrupt\.leaf"):
        _read(jvm, corrupt).collect()
    times = tmp_path / "times.leaf"
    looseleaf.write_table(pa.table({"t": pa.array([1, 2], pa.time64("us"))}), str(times))
    with pytest.raises(Exception, match=r'times\.leaf.*column "t"|column "t".*times\.leaf'):
        _read(jvm, times).collect()
    inexact = tmp_path / "inexact.leaf"
    looseleaf.write_table(pa.table({"ns": pa.array([1000, 1001], pa.timestamp("ns"))}), str(inexact))
    with pytest.raises(
        Exception, match=r'inexact\.leaf.*column "ns": a timestamp that is not a whole microsecond'
    ):
        _read(jvm, inexact).collect()
    with pytest.raises(Exception, match="batchSize"):
        _read(jvm, times, batchSize=0).collect()
    # Read options are the core's, in any spelling; an unknown one is an error naming it.
    path = tmp_path / "options.leaf"
    looseleaf.write_table(pa.table({"x": pa.array(range(1000), pa.int64())}), str(path))
    tuned = _read(jvm, path, batchSize=7, ioDepth=2, decodeParallelism=1, verifyChecksums="false")
    assert tuned.count() == 1000
    assert sum(r["x"] for r in tuned.collect()) == sum(range(1000))
    with pytest.raises(Exception, match=r"unknown read option \"colums\".*maxPartitionBytes"):
        _read(jvm, path, colums="x").collect()
    with pytest.raises(Exception, match="ioDepth"):
        _read(jvm, path, ioDepth="-1").collect()
    # Sizes in Spark's spelling, as spark.sql.files.maxPartitionBytes takes them.
    assert _read(jvm, path, maxPartitionBytes="4k").count() == 1000
    with pytest.raises(Exception, match=r"maxPartitionBytes must be a size .*\"lots\""):
        _read(jvm, path, maxPartitionBytes="lots").collect()


def test_repeated_reads_leave_no_native_memory(jvm, tmp_path):
    n = 50_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"value {i}" for i in range(n)]})
    path = tmp_path / "m.leaf"
    looseleaf.write_table(table, str(path))
    for _ in range(5):
        assert _read(jvm, path, batchSize=1000).agg({"id": "sum"}).collect()[0][0] == n * (n - 1) // 2
        # A read stopped early (limit) releases its batches too.
        assert len(_read(jvm, path, batchSize=100).limit(3).collect()) == 3
    assert _live_native_bytes(jvm) == 0
    # Every handle the reads made was closed or freed: files, scans and batches.
    assert int(jvm._jvm.io.looseleaf.spark.LooseleafDataSource.liveNativeHandles()) == 0


def _java_class_of(error: BaseException) -> str:
    """The class of the Java exception behind a PySpark error (as its message names it)."""
    text = str(error)
    for name in (
        "LooseleafNotFoundException",
        "LooseleafPermissionException",
        "LooseleafCorruptFileException",
        "LooseleafInvalidArgumentException",
        "LooseleafUnsupportedException",
        "LooseleafIOException",
        "LooseleafInterruptedException",
    ):
        if f"io.looseleaf.spark.{name}" in text:
            return name
    return text[:2000]


def test_errors_keep_their_kind_across_jni(jvm, tmp_path):
    path = tmp_path / "kinds.leaf"
    looseleaf.write_table(pa.table({"x": pa.array(range(10_000), pa.int64())}), str(path))
    with pytest.raises(Exception, match=r"absent\.leaf") as missing:
        _read(jvm, tmp_path / "absent.leaf").collect()
    assert _java_class_of(missing.value) == "LooseleafNotFoundException"
    with pytest.raises(Exception, match="ioBufferBytes") as bad_option:
        _read(jvm, path, ioBufferBytes="lots").collect()
    assert _java_class_of(bad_option.value) == "LooseleafInvalidArgumentException"
    damaged = tmp_path / "damaged.leaf"
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF  # inside the footer
    damaged.write_bytes(bytes(data))
    with pytest.raises(Exception, match=r"damaged\.leaf") as corrupt:
        _read(jvm, damaged).collect()
    assert _java_class_of(corrupt.value) == "LooseleafCorruptFileException"


def test_a_file_truncated_during_a_read_fails_the_task_not_the_jvm(jvm, tmp_path):
    """Executors read by copies, never by mapping the file: a file truncated by another process
    mid-read is an error naming it, where a mapped page would end the JVM (here the driver's:
    local mode) with SIGBUS."""
    import os
    import threading
    import time

    import numpy as np

    n = 4_000_000
    path = tmp_path / "truncated.leaf"
    # Random values: 32 MB that no encoding makes small, read in 1 MiB of buffer at a time.
    values = np.random.default_rng(5).integers(-(2**62), 2**62, n)
    looseleaf.write_table(pa.table({"x": pa.array(values, pa.int64())}), str(path), page_size=256 * 1024)
    size = path.stat().st_size
    # Written by the Python worker that consumes the batches (another process) at its first.
    marker = str(tmp_path / "started")

    def slow(batches):
        import pathlib
        import time

        for batch in batches:
            pathlib.Path(marker).touch()
            time.sleep(0.05)
            yield batch.slice(0, 0)

    frame = _read(jvm, path, batchSize=8192, ioBufferBytes="1 MiB").coalesce(1)
    outcome: list[BaseException | None] = []

    def run():
        try:
            frame.mapInArrow(slow, frame.schema).count()
            outcome.append(None)
        except BaseException as e:  # the job's error, checked below
            outcome.append(e)

    job = threading.Thread(target=run)
    job.start()
    deadline = time.time() + 60
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.05)
    assert os.path.exists(marker), "the read did not start"
    with open(path, "r+b") as f:
        f.truncate(size // 3)
    job.join(120)
    assert not job.is_alive(), "the read hangs on a truncated file"
    error = outcome[0]
    assert error is not None, "a read of a file truncated under it succeeded"
    assert "truncated.leaf" in str(error), str(error)[:2000]
    # The JVM lives on.
    assert jvm.range(5).count() == 5


def test_a_cancelled_job_stops_its_native_read_at_once(jvm, s3):
    """A read blocked on a store that does not answer gives up when its task is killed, instead
    of waiting out the store's timeout and retries."""
    import threading
    import time

    from s3_server import S3Proxy

    proxy = S3Proxy(s3.port)
    stall = {"seconds": 0.0}
    stalled = threading.Event()
    served = proxy._serve

    def serve(handler):
        ranged = handler.headers.get("Range") or ""
        data = ranged.startswith("bytes=") and not ranged.startswith("bytes=-")
        if stall["seconds"] and data and int(ranged[len("bytes=") :].split("-")[0]) < 1 << 20:
            stalled.set()
            proxy._closing.wait(stall["seconds"])
        served(handler)

    proxy._serve = serve
    try:
        options = {f"storage.{k}": v for k, v in s3.storage_options(proxy.endpoint).items()}
        out = "s3a://jvm/stalled"
        jvm.range(0, 2_000_000).selectExpr("id", "id * 3 as y").coalesce(1).write.format("looseleaf").options(
            **options
        ).mode("overwrite").save(out)
        frame = _read(jvm, out, **options)
        assert frame.count() == 2_000_000  # planned and read once at full speed
        stall["seconds"] = 120.0
        outcome: list[BaseException | None] = []

        def run():
            try:
                frame.agg({"y": "sum"}).collect()
                outcome.append(None)
            except BaseException as e:
                outcome.append(e)

        job = threading.Thread(target=run)
        job.start()
        # The proxy records a request once answered: a stalled one shows only through `stalled`.
        assert stalled.wait(60), "the read never asked the stalled store for its data"
        time.sleep(1.0)  # the task is now blocked waiting for the stalled store
        cancelled = time.time()
        jvm.sparkContext.cancelAllJobs()
        job.join(30)
        elapsed = time.time() - cancelled
        assert not job.is_alive(), "the cancelled job still waits for its read"
        assert outcome[0] is not None
        assert elapsed < 10, f"the cancelled read took {elapsed:.1f} s to stop"
        stall["seconds"] = 0.0
        assert jvm.range(3).count() == 3
    finally:
        stall["seconds"] = 0.0
        proxy.close()


def test_directories_written_by_spark_show_their_committed_files(jvm, tmp_path):
    target = str(tmp_path / "committed")
    first = jvm.range(0, 1000).selectExpr("id", "cast(id as string) as s")
    first.write.format("looseleaf").mode("overwrite").save(target)
    first.write.format("looseleaf").mode("overwrite").save(target)  # replaces the first
    jvm.range(1000, 1500).selectExpr("id", "cast(id as string) as s").write.format("looseleaf").mode(
        "append"
    ).save(target)
    (tmp_path / "committed" / "part-99999-never-committed.leaf").write_bytes(b"left by a failed job")
    got = _read(jvm, target)
    assert sorted(r["id"] for r in got.collect()) == list(range(1500))
    assert got.groupBy().count().collect()[0][0] == 1500
    with pytest.raises(Exception, match="no looseleaf files"):
        _read(jvm, tmp_path / "nothing-here").collect()
    # An empty dataset keeps its schema (the commit's schema file).
    empty = str(tmp_path / "empty")
    jvm.range(0).selectExpr("id", "cast(id as string) as s").write.format("looseleaf").mode("overwrite").save(
        empty
    )
    back = _read(jvm, empty)
    assert back.columns == ["id", "s"]
    assert back.collect() == []
    assert back.count() == 0


@pytest.fixture(scope="module")
def s3():
    from s3_server import start_moto

    server = start_moto()
    server.create_bucket("jvm")
    yield server
    server.stop()


def test_object_store_datasets_with_storage_options(jvm, s3):
    from s3_server import SECRET_KEY

    options = {f"storage.{k}": v for k, v in s3.storage_options().items()}
    out = "s3a://jvm/trades"
    frame = jvm.range(0, 3000).selectExpr("id", "cast(id * 2 as string) as s", "named_struct('a', id) as st")
    frame.repartition(3).write.format("looseleaf").options(**options).mode("overwrite").save(out)
    back = _read(jvm, out, **options)
    assert sorted((r["id"], r["s"], r["st"]["a"]) for r in back.collect()) == [
        (i, str(i * 2), i) for i in range(3000)
    ]
    narrow = back.select("st.a")
    plan = narrow._jdf.queryExecution().toString()
    assert SECRET_KEY not in plan
    assert sum(r["a"] for r in narrow.collect()) == sum(range(3000))
    with pytest.raises(Exception, match="s3a://jvm/missing"):
        _read(jvm, "s3a://jvm/missing", **options).collect()


def test_filters_skip_pages_of_sorted_data(jvm, tmp_path):
    n = 100_000
    table = pa.table(
        {
            "day": pa.array([datetime.date(1992, 1, 1) + datetime.timedelta(days=i // 40) for i in range(n)]),
            "price": pa.array([Decimal(i % 997) / 100 for i in range(n)], pa.decimal128(15, 2)),
            "k": pa.array([i if i % 11 else None for i in range(n)], pa.int64()),
        }
    )
    path = tmp_path / "sorted.leaf"
    looseleaf.write_table(table, str(path), page_size=4096)
    frame = _read(jvm, path)
    query = frame.filter("day >= date'1993-01-01' and day < date'1993-02-01' and price < 5 and k is not null")
    got = query.collect()
    expected = [
        r
        for r in table.to_pylist()
        if datetime.date(1993, 1, 1) <= r["day"] < datetime.date(1993, 2, 1)
        and r["price"] < 5
        and r["k"] is not None
    ]
    assert sorted(r["k"] for r in got) == sorted(r["k"] for r in expected)
    executed = query._jdf.queryExecution().executedPlan()
    description = executed.toString()
    # The predicates pushed, in the core's filter language (dates as days since 1970).
    for pushed in ("rule out files and zones", "day >= 8401", "day < 8432", "price < 5.00", "k IS NOT NULL"):
        assert pushed in description, description
    metrics = executed.collectLeaves().head().metrics()
    scanned = metrics.apply("numOutputRows").value()
    assert len(expected) <= scanned < n / 20
    # The scan's own metrics (the SQL tab's), summed over its tasks.
    assert 0 < metrics.apply("looseleafBytesRead").value() < path.stat().st_size
    assert metrics.apply("looseleafRequests").value() > 0
    assert metrics.apply("looseleafZonesSkipped").value() > 0
    assert metrics.apply("looseleafRowsSkipped").value() >= 0
    assert metrics.apply("looseleafDecodeNanos").value() > 0
    # Planned as many small partitions, those no page of which can match are not planned.
    small = {"maxPartitionBytes": 4096}
    everything = _read(jvm, path, **small).rdd.getNumPartitions()
    narrowed = _read(jvm, path, **small).filter(
        "day >= date'1993-01-01' and day < date'1993-02-01' and price < 5 and k is not null"
    )
    assert everything > 20
    assert narrowed.rdd.getNumPartitions() < everything / 5
    assert sorted(r["k"] for r in narrowed.collect()) == sorted(r["k"] for r in expected)
    assert _read(jvm, path, **small).filter("day < date'1900-01-01'").rdd.getNumPartitions() == 0
    # Through an OR, or a filter that rules out everything: the same rows.
    assert frame.filter("k = 5 or k = 7").count() == 2
    assert frame.filter("day < date'1900-01-01'").count() == 0
    # Strings of the binary collation rule zones out too; floats never (NaN is ordered apart).
    words = pa.table({"w": [f"w{i:06d}" for i in range(n)], "f": [float(i) for i in range(n)]})
    looseleaf.write_table(words, str(tmp_path / "words.leaf"), page_size=4096)
    wanted = _read(jvm, tmp_path / "words.leaf", **small).filter("w >= 'w050000' and w < 'w050100'")
    assert wanted.rdd.getNumPartitions() < everything / 5
    assert wanted.count() == 100
    floats = _read(jvm, tmp_path / "words.leaf", **small).filter("f < 100")
    assert floats.count() == 100
    assert "f < 100" not in floats._jdf.queryExecution().executedPlan().toString().split("BatchScan")[1]


def test_min_and_max_come_from_statistics_when_they_can(jvm, tmp_path):
    from pyspark.sql import functions as F

    parts = [
        {"i": [5, None, -7], "d": [datetime.date(2001, 1, 2), None, None], "p": ["1.25", "-3.50", None]},
        {"i": [None, None], "d": [None, None], "p": [None, None]},
        {"i": [40, 2], "d": [datetime.date(1999, 5, 6), datetime.date(2030, 1, 1)], "p": ["9.99", "0.01"]},
    ]
    for n, part in enumerate(parts):
        table = pa.table(
            {
                "i": pa.array(part["i"], pa.int32()),
                "d": pa.array(part["d"], pa.date32()),
                "p": pa.array([None if v is None else Decimal(v) for v in part["p"]], pa.decimal128(9, 2)),
                "f": pa.array([1.5] * len(part["i"]), pa.float64()),
                "s": pa.array(["x"] * len(part["i"])),
            }
        )
        looseleaf.write_table(table, str(tmp_path / f"part-{n}.leaf"))
    frame = _read(jvm, tmp_path)
    aggregated = frame.agg(
        F.min("i"), F.max("i"), F.min("d"), F.max("d"), F.min("p"), F.max("p"), F.count(F.lit(1))
    )
    plan = aggregated._jdf.queryExecution().executedPlan().toString()
    assert "aggregates from metadata" in plan, plan
    assert tuple(aggregated.collect()[0]) == (
        -7,
        40,
        datetime.date(1999, 5, 6),
        datetime.date(2030, 1, 1),
        Decimal("-3.50"),
        Decimal("9.99"),
        7,
    )
    # Floats and strings are not answered from statistics, but still answered.
    other = frame.agg(F.min("f"), F.max("s"))
    assert "aggregates from metadata" not in other._jdf.queryExecution().executedPlan().toString()
    assert tuple(other.collect()[0]) == (1.5, "x")


# --- writes ------------------------------------------------------------------------------------


def _written(directory) -> tuple[pa.Schema, pa.Table | None]:
    """The schema (its commit's schema file) and the rows of a dataset directory, read by the
    Python API, independently of Spark."""
    from looseleaf.spark._commits import read_log
    from looseleaf.spark._storage import Storage

    storage = Storage()
    log = read_log(str(directory), storage)
    schema = looseleaf.open(log.schema_file(storage)).schema
    tables = [looseleaf.open(f).to_table() for f in log.files(storage)]
    return schema, pa.concat_tables(tables) if tables else None


@settings(max_examples=8)
@given(table=jvm_tables(), batch_size=st.sampled_from([1, 50, 8192]))
def test_jvm_writes_read_back_equal_with_the_python_writers_schema(jvm, tmp_path_factory, table, batch_size):
    base = tmp_path_factory.mktemp("jvm-write")
    looseleaf.write_table(table, str(base / "source.leaf"))
    df = _read(jvm, base / "source.leaf").repartition(3)
    df.write.format(ls.JVM_FORMAT).option("batchSize", batch_size).mode("overwrite").save(str(base / "jvm"))
    df.write.format(ls.PYTHON_FORMAT).mode("overwrite").save(str(base / "python"))
    jvm_schema, jvm_rows = _written(base / "jvm")
    python_schema, _ = _written(base / "python")
    # Files from either writer mix in one dataset: both store Spark's Arrow form, UTC timestamps.
    assert jvm_schema == python_schema, (jvm_schema, python_schema)
    if table.num_rows:
        assert _rows(jvm_rows) == _rows(table)
    else:
        assert jvm_rows is None
    assert _rows(_read(jvm, base / "jvm").toArrow()) == _rows(table)


def test_jvm_write_options_and_refusals(jvm, tmp_path):
    frame = jvm.range(0, 20000, 1, 2).selectExpr("id", "repeat(cast(id % 7 as string), 20) as s")
    out = str(tmp_path / "small-pages")
    options = {"pageSize": "16KiB", "compression": "zstd"}
    frame.write.format(ls.JVM_FORMAT).options(**options).mode("overwrite").save(out)
    _, rows = _written(out)
    assert sorted(rows.column("id").to_pylist()) == list(range(20000))
    from looseleaf.spark._commits import read_log
    from looseleaf.spark._storage import Storage

    first = read_log(out, Storage()).files(Storage())[0]
    pages = [p for c in looseleaf.open(first).metadata["columns"] for p in c["pages"]]
    assert len(pages) > 4
    assert {p["compression"] for p in pages} >= {"zstd"}

    with pytest.raises(Exception, match=r"option compression.*brotli"):
        frame.write.format(ls.JVM_FORMAT).option("compression", "brotli").mode("overwrite").save(out)
    with pytest.raises(Exception, match="option pageSize"):
        frame.write.format(ls.JVM_FORMAT).option("pageSize", "big").mode("overwrite").save(out)
    interval = jvm.range(3).selectExpr("id", "make_ym_interval(1, 2) as ym")
    with pytest.raises(Exception, match=r"column 'ym'.*cannot be stored"):
        interval.write.format(ls.JVM_FORMAT).mode("overwrite").save(str(tmp_path / "interval"))
    assert sorted(r["id"] for r in _read(jvm, out).collect()) == list(range(20000)), "refused writes left it"
    # A user schema reads a projection, checked against the dataset's.
    assert _read(jvm, out).schema.simpleString() == "struct<id:bigint,s:string>"
    projected = jvm.read.format(ls.JVM_FORMAT).schema("s string").load(out)
    assert projected.count() == 20000
    assert projected.columns == ["s"]
    with pytest.raises(Exception, match="column id of type string, the dataset has it as bigint"):
        jvm.read.format(ls.JVM_FORMAT).schema("id string").load(out).collect()


def test_partition_filters_prune_files_at_planning(jvm, tmp_path):
    rows = [(i, [1, None, -3][i % 3], ["a b", "x/y", None][i % 3 - (i % 2)], float(i)) for i in range(60)]
    df = jvm.createDataFrame(rows, "id long, k1 int, k2 string, v double").repartition(2)
    out = str(tmp_path / "ds")
    df.write.format(ls.JVM_FORMAT).partitionBy("k1", "k2").mode("overwrite").save(out)
    files = looseleaf.dataset(out).files
    matching = [f for f in files if "/k1=-3/" in f]
    query = _read(jvm, out).filter("k1 = -3").select("id", "k2")
    plan = query._jdf.queryExecution().executedPlan().toString()
    # Only the files of k1=-3 are planned (the core folds the filter with each file's values).
    assert f", {len(matching)} file(s) read" in plan, plan
    assert "k1 = -3" in plan, plan
    assert 0 < len(matching) < len(files)
    assert sorted(r["id"] for r in query.collect()) == [i for i in range(60) if i % 3 == 2]
    # Partition columns only: no column of the files is read, only their row counts.
    assert _read(jvm, out).select("k1").filter("k1 is null").count() == 20
    assert _read(jvm, out).filter("k2 is null or k1 = 1").count() == df.filter("k2 is null or k1 = 1").count()


# --- filters evaluated and aggregates computed by the core ---------------------------------------


def _lineitem_like(rows: int, seed: int) -> pa.Table:
    """TPC-H lineitem's kinds of columns, with nulls everywhere: grouping strings, decimals
    (``small`` near its precision, so that partial sums leave it), dates, integers, floats."""
    import random

    rng = random.Random(seed)

    def maybe(make, p=0.08):
        return None if rng.random() < p else make()

    def column(make, data_type=None, p=0.08):
        return pa.array([maybe(make, p) for _ in range(rows)], data_type)

    def cents(low, high, scale=100):
        return lambda: Decimal(rng.randint(low, high)) / scale

    money = pa.decimal128(15, 2)
    return pa.table(
        {
            "flag": column(lambda: rng.choice("ANR")),
            "status": column(lambda: rng.choice("FO"), p=0),
            "qty": column(cents(100, 5000), money),
            "price": column(cents(-(10**9), 10**9), money),
            "disc": column(cents(0, 10), money),
            "tax": column(cents(0, 8), money, p=0),
            "small": column(cents(9000, 9999, 10), pa.decimal128(4, 1)),
            "day": column(lambda: datetime.date(1992, 1, 1) + datetime.timedelta(days=rng.randint(0, 2500))),
            "k": column(lambda: rng.randint(-(2**40), 2**40), pa.int64()),
            "i": column(lambda: rng.randint(-100, 100), pa.int32()),
            "f": column(lambda: rng.choice([float("nan"), -0.0, rng.random()])),
            "ok": column(lambda: rng.random() < 0.5),
        }
    )


@pytest.fixture(scope="module")
def lineitem_like(jvm, tmp_path_factory):
    """The same rows as two looseleaf files and as Parquet files read by Spark's own reader (the
    independent truth), registered as the views ``leaf`` (small partitions: aggregates pushed
    partially), ``leaf_whole`` (one partition holds every file's columns: aggregates pushed
    completely) and ``truth``."""
    import pyarrow.parquet as pq

    directory = tmp_path_factory.mktemp("lineitem_like")
    (directory / "leaf").mkdir()
    (directory / "truth").mkdir()
    for n in range(2):
        table = _lineitem_like(6000, seed=n)
        looseleaf.write_table(table, str(directory / "leaf" / f"part-{n}.leaf"), page_size=4096)
        pq.write_table(table, str(directory / "truth" / f"part-{n}.parquet"))
    # Small partitions: several ranges of each file, whose partial results Spark merges.
    _read(jvm, directory / "leaf", maxPartitionBytes=16384).createOrReplaceTempView("leaf")
    _read(jvm, directory / "leaf").createOrReplaceTempView("leaf_whole")
    jvm.read.parquet(str(directory / "truth")).createOrReplaceTempView("truth")
    return directory


def _same_rows(got, want) -> bool:
    """Equal rows in any order (compared by ``repr``, so that NaN equals NaN)."""
    return sorted(map(repr, got.collect())) == sorted(map(repr, want.collect()))


EXACT_FILTERS = [
    "day >= date'1994-01-01' and day < date'1995-01-01'",
    "disc between 0.05 and 0.07 and qty < 24",
    "flag = 'R' or (status <> 'F' and k > 0)",
    "not (i in (1, 2, 3)) and ok",
    "i in (5, null) or flag is null",
    "not (price < 0) or day is null",
    "small >= 999.5",
]


@pytest.mark.parametrize("where", EXACT_FILTERS)
def test_filters_the_core_evaluates_exactly_are_left_out_of_spark(jvm, lineitem_like, where):
    query = f"select flag, status, price, day, k, i, f from {{}} where {where}"
    got = jvm.sql(query.format("leaf"))
    plan = got._jdf.queryExecution().executedPlan().toString()
    assert "rows filtered by looseleaf" in plan, plan
    assert "Filter " not in plan, plan
    assert _same_rows(got, jvm.sql(query.format("truth")))


def test_filters_spark_must_evaluate_stay_in_spark(jvm, lineitem_like):
    # Floats (NaN is ordered apart in Spark) and functions are not translated: Spark filters.
    for where in ("f < 0.5", "k > 0 and f < 0.5", "abs(i) < 3"):
        query = f"select k, i, f from {{}} where {where}"
        got = jvm.sql(query.format("leaf"))
        assert "Filter " in got._jdf.queryExecution().executedPlan().toString()
        assert _same_rows(got, jvm.sql(query.format("truth")))


AGGREGATE_QUERIES = [
    # TPC-H Q1's shape: grouped sums of exact arithmetic, averages, a count.
    """select flag, status, sum(qty), sum(price), sum(price * (1 - disc)),
       sum(price * (1 - disc) * (1 + tax)), avg(qty), avg(price), avg(disc), count(*)
       from {} where day <= date'1998-09-02' group by flag, status""",
    # Q6's shape.
    """select sum(price * disc) from {} where day >= date'1994-01-01' and day < date'1995-01-01'
       and disc between 0.05 and 0.07 and qty < 24""",
    "select count(*) from {} where day >= date'1994-01-01' and k > 0",
    "select count(*), count(k), sum(k), min(k), max(k), min(day), max(price), sum(i) from {} where flag='R'",
    "select flag, sum(small), count(small), max(small) from {} group by flag",
    "select status, flag, i, sum(k), min(price) from {} where i between -3 and 3 group by status, flag, i",
    "select sum(price * price) from {} where status = 'F'",
    "select avg(price), avg(k), sum(qty * (1 + tax)), count(day) from {} where flag = 'N' or i < 0",
    "select sum(cast(i as bigint) * k) from {}",
    "select count(*), sum(price) from {} where day < date'1900-01-01'",
    "select flag, count(*) from {} where day < date'1900-01-01' group by flag",
]


@pytest.mark.parametrize("view", ["leaf", "leaf_whole"])
@pytest.mark.parametrize("query", AGGREGATE_QUERIES)
def test_aggregates_computed_by_the_core_equal_sparks(jvm, lineitem_like, query, view):
    got = jvm.sql(query.format(view))
    plan = got._jdf.queryExecution().executedPlan().toString()
    if view == "leaf" or "group by" in query:
        # A grouped aggregation stays partial (a sort after it would run it twice if complete).
        assert "partial aggregates by looseleaf" in plan, plan
    else:
        # Complete: one task computes the final results; Spark aggregates nothing itself.
        assert "complete aggregates by looseleaf" in plan, plan
        assert "Aggregate" not in plan, plan
        assert "Exchange" not in plan, plan
        assert got.rdd.getNumPartitions() == 1
    want = jvm.sql(query.format("truth"))
    assert got.schema == want.schema
    assert _same_rows(got, want)


def test_aggregates_the_core_does_not_compute_are_left_to_spark(jvm, lineitem_like):
    for query in (
        "select sum(f) from {}",  # floats
        "select count(distinct k) from {}",
        "select flag, sum(k) from {} where f > 0.5 group by flag",  # a filter Spark evaluates
        "select sum(price / 2) from {}",  # division
        "select max(flag) from {}",  # strings
    ):
        got = jvm.sql(query.format("leaf"))
        assert "partial aggregates by looseleaf" not in got._jdf.queryExecution().executedPlan().toString()
        assert _same_rows(got, jvm.sql(query.format("truth")))


OVERFLOW = r"(?i)overflow|NUMERIC_VALUE_OUT_OF_RANGE|DECIMAL_PRECISION"


def _pushed(frame, how: str = "partial") -> bool:
    return f"{how} aggregates by looseleaf" in frame._jdf.queryExecution().executedPlan().toString()


def test_aggregate_arithmetic_overflows_as_sparks_does(jvm, tmp_path):
    import pyarrow.parquet as pq

    big = Decimal(10**37) * 5
    table = pa.table(
        {
            "x": pa.array([big, Decimal(1), big], pa.decimal128(38, 0)),
            "n": pa.array([2**63 - 1, 1, 0], pa.int64()),
        }
    )
    looseleaf.write_table(table, str(tmp_path / "big.leaf"))
    pq.write_table(table, str(tmp_path / "big.parquet"))
    # ANSI (Spark 4's default): the product overflows decimal(38,0) in both, an error.
    for source in (_read(jvm, tmp_path / "big.leaf"), jvm.read.parquet(str(tmp_path / "big.parquet"))):
        with pytest.raises(Exception, match=OVERFLOW):
            source.selectExpr("sum(x * x)").collect()
    # A sum of values in range whose total leaves decimal(38,0): Spark's overflow (merging the
    # core's partial sums), or the core's, checking its final sum once as Spark does.
    partial = {"maxPartitionBytes": 1}
    for options, how in (({}, "complete"), (partial, "partial")):
        for column in ("sum(x)", "sum(n)"):
            got = _read(jvm, tmp_path / "big.leaf", **options).selectExpr(column)
            assert _pushed(got, how)
            with pytest.raises(Exception, match=OVERFLOW):
                got.collect()
    # Without ANSI Spark does not hand arithmetic over; plain sums still are, and agree: the
    # overflowing sum is null, the integers' sum wraps.
    jvm.conf.set("spark.sql.ansi.enabled", "false")
    try:
        columns = ("sum(x)", "count(x)", "sum(n)")
        truth = jvm.read.parquet(str(tmp_path / "big.parquet")).selectExpr(*columns).collect()
        assert truth == [(None, 3, -(2**63))]
        for options, how in (({}, "complete"), (partial, "partial")):
            plain = _read(jvm, tmp_path / "big.leaf", **options).selectExpr(*columns)
            assert _pushed(plain, how)
            assert plain.collect() == truth
            assert not _pushed(_read(jvm, tmp_path / "big.leaf", **options).selectExpr("sum(x * x)"), how)
    finally:
        jvm.conf.unset("spark.sql.ansi.enabled")
