"""looseleaf from a Spark Connect client: a ``SparkConnectServer`` started with the connector's
jar (``spark-submit --jars``; ``spark_cluster.connect_server``) and a thin client,
``SparkSession.builder.remote("sc://...")``, in this process. The connector reads and writes
(``format("looseleaf")``, local and ``s3a://`` paths), the Python data source registers from
the client (as ``looseleaf-python`` next to the connector) and runs in the server's Python
workers, and the ``mapInArrow`` helpers work. What does not: anything that needs the client to
hold a ``SparkContext`` — ``register`` cannot default ``minPartitions`` to the session's
parallelism — and a client cannot bring the connector itself: ``spark.jars`` is the server's
(a second server, without the jar, shows both).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from decimal import Decimal

import pyarrow as pa
import pytest

import looseleaf
import spark_cluster as harness
from conftest import _java_problem

ROWS = 6000


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Two Connect servers: one started with the connector's jar, one without (which starts
    while the jar is found or built)."""
    problem = _java_problem()
    if problem is not None:
        pytest.skip(problem)
    with contextlib.ExitStack() as stack:
        without = stack.enter_context(
            harness.connect_server(tmp_path_factory.mktemp("connect-bare"), wait=False)
        )
        jar, problem = harness.connector_jar(tmp_path_factory)
        if jar is None:
            pytest.skip(f"the JVM connector cannot be built here: {problem}")
        with_jar = stack.enter_context(harness.connect_server(tmp_path_factory.mktemp("connect"), jars=[jar]))
        without.wait_until_ready()
        yield with_jar, without, jar


@pytest.fixture(scope="module")
def jar(servers):
    return servers[2]


@contextlib.contextmanager
def _remote(url: str, builder=None):
    """A Connect session of ``url``. ``builder.remote(url).create()`` (not ``getOrCreate``, which
    refuses while this process holds conftest's local session, and returns one session per
    process) marks the process as a Connect client (``SPARK_CONNECT_MODE_ENABLED``, which makes
    ``pyspark.sql.functions`` build Connect columns); the mark is taken back after, for the
    local session's tests."""
    from pyspark.sql import SparkSession

    saved = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    session = None
    try:
        session = (builder or SparkSession.builder).remote(url).create()
        yield session
    finally:
        if session is not None:
            session.stop()
        if saved is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = saved


@pytest.fixture(scope="module")
def remote(servers):
    with _remote(servers[0].url) as session:
        yield session


@pytest.fixture(scope="module")
def s3():
    from s3_server import start_moto

    server = start_moto()
    server.create_bucket("connect")
    yield server
    server.stop()


def _frame(spark):
    return spark.range(0, ROWS, 1, 3).selectExpr(
        "id",
        "cast(id % 5 as int) as k",
        "concat('value ', id) as s",
        "cast(id * 37 % 10000 / 100 as decimal(10,2)) as amount",
    )


def _expected() -> list[dict]:
    return [
        {"id": i, "k": i % 5, "s": f"value {i}", "amount": Decimal(i * 37 % 10000) / 100} for i in range(ROWS)
    ]


def _rows(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.collect())


def test_the_connector_reads_and_writes_through_connect(remote, jar, s3, tmp_path):
    import looseleaf.spark as ls

    assert str(jar) in remote.conf.get("spark.jars")
    assert ls.jvm_enabled(remote)
    expected = _expected()
    storage = {f"storage.{k}": v for k, v in s3.storage_options().items()}
    local = str(tmp_path / "local")
    targets = [(local, {}), ("s3a://connect/trades", storage)]
    for path, options in targets:
        _frame(remote).write.format("looseleaf").options(**options).partitionBy("k").mode("overwrite").save(
            path
        )
    for path, options in targets:
        back = remote.read.format("looseleaf").options(**options).load(path)
        assert back.columns == ["id", "s", "amount", "k"]
        assert back.count() == ROWS
        narrow = back.filter("k = 2 and id < 1000 and amount > 50").select("id", "s")
        assert _rows(narrow) == [
            (r["id"], r["s"]) for r in expected if r["k"] == 2 and r["id"] < 1000 and r["amount"] > 50
        ]
        totals = back.groupBy("k").agg({"amount": "sum", "*": "count"})
        assert _rows(totals) == [
            (k, sum(r["amount"] for r in expected if r["k"] == k), ROWS // 5) for k in range(5)
        ]
    # An append, through the same session; the client sees the server's files.
    _frame(remote).filter("id < 10").write.format("looseleaf").partitionBy("k").mode("append").save(local)
    assert remote.read.format("looseleaf").load(local).count() == ROWS + 10
    assert looseleaf.dataset(local).num_rows == ROWS + 10


def _partitions(frame) -> int:
    from pyspark.sql import functions as F

    return frame.select(F.spark_partition_id().alias("p")).distinct().count()


def test_the_python_data_source_registers_from_the_client(remote, tmp_path):
    import looseleaf.spark as ls

    # With the connector on the server, the Python source is looseleaf-python.
    source = ls.register(remote)
    assert source.name() == ls.python_format(remote) == "looseleaf-python"
    # No SparkContext under Connect: minPartitions cannot default to the session's parallelism.
    assert "minPartitions" not in source.default_options
    python_written, jvm_written = str(tmp_path / "python"), str(tmp_path / "jvm")
    frame = _frame(remote)
    frame.write.format("looseleaf-python").option("partitionBy", "k").mode("overwrite").save(python_written)
    frame.write.format("looseleaf").partitionBy("k").mode("overwrite").save(jvm_written)
    expected = sorted((r["id"], r["s"], r["amount"], r["k"]) for r in _expected())
    # Each source reads what either wrote.
    for path in (python_written, jvm_written):
        for fmt in ("looseleaf-python", "looseleaf"):
            assert _rows(remote.read.format(fmt).load(path).select("id", "s", "amount", "k")) == expected, (
                fmt,
                path,
            )
    filtered = remote.read.format("looseleaf-python").load(python_written).filter("k = 4 and id >= 5900")
    assert _rows(filtered.select("id")) == [(i,) for i in range(5900, ROWS) if i % 5 == 4]
    # Small data reads as one partition unless minPartitions is given.
    flat = str(tmp_path / "flat")
    frame.write.format("looseleaf-python").mode("overwrite").save(flat)
    assert _partitions(remote.read.format("looseleaf-python").load(flat)) == 1
    ls.register(remote, minPartitions=3)
    assert _partitions(remote.read.format("looseleaf-python").load(flat)) == 3


def test_map_in_arrow_helpers_work_under_connect(remote, tmp_path):
    import looseleaf.spark as ls

    flat = str(tmp_path / "flat")
    _frame(remote).write.format("looseleaf").mode("overwrite").save(flat)
    # schema_of and list_ranges run in the client (which sees the same files); read_ranges and
    # write_partitions in the server's Python workers.
    schema = ls.schema_of(flat, columns="id,s")
    ranges = remote.createDataFrame(ls.list_ranges(flat, minPartitions=4), ls.RANGE_SCHEMA)
    rows = ranges.repartition(4).mapInArrow(ls.read_ranges(schema), schema)
    assert _rows(rows) == [(i, f"value {i}") for i in range(ROWS)]
    written = _frame(remote).mapInArrow(
        ls.write_partitions(str(tmp_path / "parts"), _frame(remote).schema), ls.WRITE_RESULT_SCHEMA
    )
    files = written.collect()
    assert len(files) == 3
    assert sum(f["num_rows"] for f in files) == ROWS
    tables = [looseleaf.open(f["path"]).to_table() for f in files]
    assert sorted(pa.concat_tables(tables).column("id").to_pylist()) == list(range(ROWS))


def test_a_server_without_the_connector(servers, jar, tmp_path):
    """The connector is the server's: where it was not started with the jar, ``looseleaf`` is
    the Python source, and a client's ``configure`` cannot add the jar (``spark.jars`` is a
    static setting; Spark warns that it cannot change it)."""
    from pyspark.sql import SparkSession

    import looseleaf.spark as ls

    bare = servers[1]
    with _remote(bare.url) as spark:
        assert not ls.jvm_enabled(spark)
        assert ls.register(spark).name() == ls.python_format(spark) == "looseleaf"
        path = str(tmp_path / "python")
        _frame(spark).write.format("looseleaf").mode("overwrite").save(path)
        assert _rows(spark.read.format("looseleaf").load(path).select("id")) == [(i,) for i in range(ROWS)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _remote(bare.url, ls.configure(SparkSession.builder, jar)) as configured:
            assert not ls.jvm_enabled(configured)
    assert any("spark.jars" in str(w.message) for w in caught), [str(w.message) for w in caught]
