"""Reading and writing ``s3://`` through a real S3 server (moto, on 127.0.0.1), on every read
path, with the request counts the reader promises, and every failure a clear error."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import looseleaf
from s3_server import SECRET_KEY, ProxySettings, proxy, start_moto
from strategies import flat_tables, nested_tables, take_rows

BUCKET = "looseleaf-tests"
_names = itertools.count()


@pytest.fixture(scope="module")
def moto():
    server = start_moto()
    server.create_bucket(BUCKET)
    yield server
    server.stop()


@pytest.fixture
def options(moto):
    return moto.storage_options()


def url(name: str | None = None) -> str:
    return f"s3://{BUCKET}/{name or f't{next(_names)}'}.leaf"


@given(table=flat_tables(max_rows=300), data=st.data())
def test_flat_round_trips_on_every_read_path(moto, table, data):
    options = moto.storage_options()
    path = url()
    looseleaf.write_table(
        table, path, storage_options=options, page_size=data.draw(st.sampled_from([512, 1 << 20]))
    )
    reader = looseleaf.open(
        path, storage_options=options, io_depth=data.draw(st.sampled_from([1, "auto", 16]))
    )
    assert reader.schema == table.schema
    assert reader.to_table().equals(table)
    assert reader.read_all(batch_size=data.draw(st.integers(1, 100))).read_all().equals(table)
    start = data.draw(st.integers(0, table.num_rows))
    count = data.draw(st.integers(0, table.num_rows - start))
    assert reader.read_range(start, count).read_all().equals(table.slice(start, count))
    if table.num_columns:
        column = data.draw(st.sampled_from(table.column_names))
        assert reader.to_table(columns=[column]).column(0).equals(table.column(column))
    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=30))
        assert reader.take(indices).equals(take_rows(table, indices))
        assert reader.plan(indices=indices)["requests"] >= 0


@given(table=nested_tables(max_rows=100), data=st.data())
def test_nested_round_trips(moto, table, data):
    options = moto.storage_options()
    path = url()
    looseleaf.write_table(
        table, path, storage_options=options, page_size=data.draw(st.sampled_from([256, 1 << 20]))
    )
    reader = looseleaf.open(path, storage_options=options)
    assert reader.to_table().equals(table)
    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=20))
        assert reader.take(indices).equals(take_rows(table, indices))
        start = data.draw(st.integers(0, table.num_rows - 1))
        assert reader.read_range(start, 1).read_all().equals(table.slice(start, 1))


def test_dictionaries_and_plans(options):
    n = 20_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "mode": pa.array([["AIR", "RAIL", "SHIP", "TRUCK"][i % 4] for i in range(n)]),
            "note": pa.array([None if i % 7 == 0 else f"note {i}" for i in range(n)]),
        }
    )
    path = url()
    looseleaf.write_table(table, path, storage_options=options)
    reader = looseleaf.open(path, storage_options=options)
    got = reader.to_table(dictionary_columns=["mode"])
    assert pa.types.is_dictionary(got.schema.field("mode").type)
    assert got.column("mode").cast(pa.string()).equals(table.column("mode"))
    plan = reader.plan(columns=["note"], start=100, num_rows=50)
    assert plan["bytes"] > 0
    assert set(plan["columns"]) == {"note"}


def test_writes_appear_only_when_finished(moto, options):
    table = pa.table({"x": pa.array(range(1000), pa.int32())})
    path = url()
    writer = looseleaf.FileWriter(path, table.schema, storage_options=options)
    writer.write_table(table)
    with pytest.raises(looseleaf.NotFoundError):
        looseleaf.open(path, storage_options=options)
    writer.close()
    assert looseleaf.open(path, storage_options=options).to_table().equals(table)

    # An exception inside the block aborts the upload: nothing appears.
    aborted = url()

    def write_then_fail() -> None:
        with looseleaf.FileWriter(aborted, table.schema, storage_options=options) as w:
            w.write_table(table)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_then_fail()
    with pytest.raises(looseleaf.NotFoundError, match=aborted):
        looseleaf.open(aborted, storage_options=options)


def test_round_trips_in_requests(moto):
    """Opening is one request; a read of some columns of a wide file one more for their
    metadata; a take's direct reads all go out at once (no read waits for another)."""
    columns = {f"c{i:04}": pa.array([i * 10 + r for r in range(50)], pa.int32()) for i in range(2000)}
    wide = pa.table(columns)
    path = url("wide")
    looseleaf.write_table(wide, path, storage_options=moto.storage_options())
    with proxy(moto) as p:
        options = moto.storage_options(p.endpoint)
        reader = looseleaf.open(path, storage_options=options)
        assert p.stats.count() == 1, p.stats.requests  # the tail, footer and column table at once
        assert p.stats.count("HEAD") == 0
        p.stats.clear()
        got = reader.to_table(columns=["c0007", "c1999", "c0500"])
        assert got.equals(wide.select(["c0007", "c1999", "c0500"]))
        # Metadata of the three columns: their blocks lie apart, but are read in one round.
        metadata, data = reader.plan(columns=["c0007", "c1999", "c0500"]), p.stats.count()
        assert data <= 3 + metadata["reads"], p.stats.requests


def test_take_reads_every_row_in_one_round(moto):
    """With a first-byte latency of 50 ms, a take of rows spread over many pages costs about
    one round trip of data, not one per row."""
    n = 200_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"row {i}" for i in range(n)])})
    path = url()
    looseleaf.write_table(table, path, storage_options=moto.storage_options(), page_size=64 * 1024)
    indices = list(range(7, n, n // 40))
    with proxy(moto) as p:
        options = moto.storage_options(p.endpoint)
        reader = looseleaf.open(path, storage_options=options, io_depth=64)
        reader.take([0])  # column metadata loaded
        p.settings.first_byte = 0.05
        earlier = p.stats.count()
        p.stats.clear()
        got = reader.take(indices)
        assert got.equals(take_rows(table, indices))
        # Direct reads (ids, string offsets) plus the indirect string bytes: at most two rounds,
        # each of parallel requests. A read per row, one after the other, would be ~40 x 50 ms.
        plan = reader.plan(indices=indices)
        planned = plan["reads"] + plan["indirect_requests"]
        # The latency model learnt a store answering at once, so the 50 ms requests look like
        # stragglers: hedges (a second request for the same range) may add, at most one in 20
        # of the reader's requests, those of its open and first take included.
        assert p.stats.count() <= planned + (earlier + p.stats.count()) // 20, p.stats.requests


def test_throttling_is_retried_and_lowers_the_depth(moto, options):
    table = pa.table({"x": pa.array(range(400_000), pa.int64())})
    path = url()
    looseleaf.write_table(table, path, storage_options=options, page_size=64 * 1024)
    answered = itertools.count()
    # Every third data request is throttled once.
    settings = ProxySettings(
        fault=lambda method, _path: 503 if method == "GET" and next(answered) % 3 == 2 else None
    )
    with proxy(moto, settings) as p:
        reader = looseleaf.open(path, storage_options=moto.storage_options(p.endpoint))
        stream = reader.stream()
        assert pa.RecordBatchReader.from_stream(stream).read_all().equals(table)
        stats = stream.io_stats()
        assert stats["throttled"] > 0, stats
        assert stats["retries"] >= stats["throttled"], stats


def test_failures_are_clear_errors_without_secrets(moto, options):
    table = pa.table({"x": pa.array(range(100), pa.int64())})
    path = url()
    looseleaf.write_table(table, path, storage_options=options)
    missing = url("missing")
    with pytest.raises(looseleaf.NotFoundError, match=missing) as raised:
        looseleaf.open(missing, storage_options=options)
    assert SECRET_KEY not in str(raised.value)
    with pytest.raises(looseleaf.NotFoundError):
        looseleaf.open("s3://no-such-bucket/x.leaf", storage_options=options)
    with pytest.raises(looseleaf.InvalidArgumentError, match="aws_endpont") as raised:
        looseleaf.open(path, storage_options={**options, "aws_endpont": "http://x"})
    assert SECRET_KEY not in str(raised.value)
    # Connection refused: bounded retries, then an I/O error naming the URL.
    with pytest.raises(looseleaf.LooseleafIOError, match=path) as raised:
        looseleaf.open(path, storage_options={**options, "aws_endpoint": "http://127.0.0.1:9"})
    assert SECRET_KEY not in str(raised.value)
    # A store that keeps throttling: an error after the bounded retries, not a hang.
    with (
        proxy(moto, ProxySettings(fault=lambda *_: 503)) as p,
        pytest.raises(looseleaf.LooseleafIOError, match="503"),
    ):
        looseleaf.open(path, storage_options=moto.storage_options(p.endpoint))
    # Credentials in the URL are refused; the secret is not echoed.
    with pytest.raises(looseleaf.InvalidArgumentError, match="credentials") as raised:
        looseleaf.open(f"s3://key:{SECRET_KEY}@{BUCKET}/x.leaf", storage_options=options)
    assert SECRET_KEY not in repr(looseleaf.open(path, storage_options=options))


def test_objects_shorter_than_their_metadata_are_corrupt(moto, options):
    table = pa.table({"x": pa.array(range(10_000), pa.int64())})
    good = url()
    looseleaf.write_table(table, good, storage_options=options)
    data = looseleaf.open(good, storage_options=options)
    assert data.num_rows == 10_000
    client = moto.client()
    content = client.get_object(Bucket=BUCKET, Key=good.split("/")[-1])["Body"].read()
    truncated = url()
    client.put_object(Bucket=BUCKET, Key=truncated.split("/")[-1], Body=content[:100] + content[-4000:])
    with pytest.raises(looseleaf.CorruptFileError, match=truncated):
        looseleaf.open(truncated, storage_options=options).to_table()


def test_memory_and_s3_agree(options):
    table = pa.table({"v": pc.multiply(pa.array(range(5000)), 3)})
    looseleaf.write_table(table, "memory://agree.leaf")
    path = url()
    looseleaf.write_table(table, path, storage_options=options)
    assert (
        looseleaf.open(path, storage_options=options)
        .to_table()
        .equals(looseleaf.open("memory://agree.leaf").to_table())
    )


def test_cli_reads_and_writes_object_store_urls(tmp_path, moto, options):
    source = tmp_path / "in.parquet"
    import pyarrow.parquet as pq

    table = pa.table({"a": pa.array(range(500), pa.int64()), "b": pa.array([str(i) for i in range(500)])})
    pq.write_table(table, source)
    path = url()
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    done = subprocess.run(
        [sys.executable, "-m", "looseleaf", "convert", str(source), path, *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert looseleaf.open(path, storage_options=options).to_table().equals(table)
    done = subprocess.run(
        [sys.executable, "-m", "looseleaf", "inspect", path, *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "500" in done.stdout
    assert SECRET_KEY not in done.stdout + done.stderr
    back = tmp_path / "back.leaf"
    done = subprocess.run(
        [sys.executable, "-m", "looseleaf", "convert", path, str(back), *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert looseleaf.open(back).to_table().equals(table)
