"""Datasets of many files: ``looseleaf.dataset`` and ``looseleaf.write_dataset``, against
pyarrow's reading of the same data (``pyarrow.dataset`` over Hive-partitioned Parquet, and the
tables written), on every read path, with nulls everywhere."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest
from hypothesis import given
from hypothesis import strategies as st

import looseleaf
from strategies import flat_tables, random_array, random_nested_array


def _partition_columns(rng: random.Random, n: int) -> dict[str, pa.Array]:
    """A small-cardinality int32 column and a string column with awkward values, both with nulls."""
    # The first value is never null: a column of nulls only is discovered as strings.
    ints = [None if i and rng.random() < 0.15 else rng.choice([-2, 0, 7, 2024]) for i in range(n)]
    values = ["a", "b c", "x/y", "é=%"]
    strings = [None if i and rng.random() < 0.15 else rng.choice(values) for i in range(n)]
    return {"pk": pa.array(ints, pa.int32()), "ps": pa.array(strings, pa.string())}


def _with_partitions(table: pa.Table, seed: int) -> pa.Table:
    rng = random.Random(seed)
    table = table.append_column("row_id", pa.array(range(table.num_rows), pa.int64()))
    for name, column in _partition_columns(rng, table.num_rows).items():
        table = table.append_column(name, column)
    return table


def _plain(table: pa.Table) -> pa.Table:
    """``table`` with view types as their plain forms (pyarrow 26 cannot sort or take views)."""
    plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
    return table.cast(pa.schema([f.with_type(plain.get(f.type, f.type)) for f in table.schema]))


def _sorted(table: pa.Table) -> pa.Table:
    return _plain(table).sort_by("row_id")


def _expected(table: pa.Table, partitioning: list[str]) -> pa.Table:
    """``table`` as a partitioned dataset reads back: partition columns last."""
    others = [n for n in table.column_names if n not in partitioning]
    return table.select(others + partitioning)


@given(table=flat_tables(max_rows=300), data=st.data())
def test_partitioned_round_trip_on_every_read_path(tmp_path_factory, table, data):
    seed = data.draw(st.integers(0, 2**32 - 1))
    table = _with_partitions(table, seed)
    partitioning = data.draw(st.sampled_from([[], ["pk"], ["ps"], ["pk", "ps"]]))
    max_rows = data.draw(st.sampled_from([None, 1, 7, 100]))
    root = tmp_path_factory.mktemp("ds")
    batches = table.to_batches(max_chunksize=data.draw(st.integers(1, 64)))
    looseleaf.write_dataset(
        pa.Table.from_batches(batches, table.schema) if batches else table,
        root,
        partitioning=partitioning,
        max_rows_per_file=max_rows,
        existing_data="append",
    )
    expected = _expected(table, partitioning)
    if table.num_rows == 0 and partitioning:
        # No directory names the partition columns' types: the commit keeps the files' schema.
        ds = looseleaf.dataset(root)
        assert ds.num_rows == 0
        assert ds.schema == pa.schema([f for f in expected.schema if f.name not in partitioning])
        return
    ds = looseleaf.dataset(root)
    assert ds.schema == expected.schema
    assert ds.num_rows == table.num_rows == ds.count_rows()
    got = ds.to_table()
    assert _sorted(got).equals(_sorted(expected))
    assert pa.Table.from_batches(list(ds.read_all(batch_size=17)), ds.schema).equals(got)
    if max_rows is not None:
        assert all(looseleaf.open(f).num_rows <= max_rows for f in ds.files)

    # Projections: partition columns anywhere in the order asked for.
    names = data.draw(st.permutations(expected.column_names))[: data.draw(st.integers(1, 3))]
    assert ds.to_table(columns=names).equals(got.select(names))
    if table.num_rows == 0:
        return

    # take by dataset row numbers equals pyarrow's take on the whole table.
    indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=40))
    positions = pa.array(indices, pa.int64())
    assert _plain(ds.take(indices, columns=names)).equals(_plain(got).select(names).take(positions))

    # Filters on partition and file columns: as table.filter keeps the rows.
    value = data.draw(st.sampled_from([-2, 0, 7, 2024, 5]))
    text = data.draw(st.sampled_from(["a", "b c", "x/y", "é=%", "zz"]))
    filters = [
        pc.field("pk") == value,
        pc.field("pk").is_null() | (pc.field("ps") == text),
        ~(pc.field("ps").isin(["a", text])) & (pc.field("row_id") < table.num_rows // 2),
        pc.field("pk") > 0,
    ]
    for expression in filters:
        truth = _plain(got).filter(expression)
        assert _plain(ds.to_table(filter=expression)).equals(truth), expression
        assert ds.count_rows(filter=expression) == truth.num_rows, expression
        kept = ds.take(indices, filter=expression)
        assert _plain(kept).equals(_plain(got).take(positions).filter(expression)), expression

    # Row ranges numbered across files, as a slice of the whole (filtered: its rows filtered).
    start = data.draw(st.integers(0, table.num_rows))
    length = data.draw(st.integers(0, table.num_rows - start))
    assert _plain(ds.to_table(start=start, num_rows=length)).equals(_plain(got).slice(start, length))
    assert _plain(pa.Table.from_batches(ds.read_range(start, length), ds.schema)).equals(
        _plain(got).slice(start, length)
    )
    assert ds.count_rows(start=start, num_rows=length) == length
    expression = filters[data.draw(st.integers(0, len(filters) - 1))]
    ranged = _plain(ds.to_table(start=start, num_rows=length, filter=expression))
    assert ranged.equals(_plain(got).slice(start, length).filter(expression)), expression


def test_every_read_option_of_a_file_read_applies_to_a_dataset_read(tmp_path):
    """One description of a read: a dataset takes every keyword a file read takes (``trace``
    included), with the same errors for bad values."""
    table = pa.table({"id": pa.array(range(5_000), pa.int64()), "k": pa.array([i % 3 for i in range(5_000)])})
    looseleaf.write_dataset(table, tmp_path / "ds", partitioning=["k"], max_rows_per_file=700)
    ds = looseleaf.dataset(tmp_path / "ds")
    file = looseleaf.open(ds.files[0])
    for reader in (file, ds):
        trace = looseleaf.Trace()
        got = reader.to_table(columns=["id"], trace=trace, batch_size=100, io_depth=2, verify_checksums=True)
        assert got.num_rows == reader.num_rows
        requests = {read["request"] for read in trace.reads}
        assert len(requests) >= (len(ds.files) if reader is ds else 1)
        handed_out = [s for s in trace.spans if s["lane"] == "consumer"]
        assert sum(s["rows"] for s in handed_out) == reader.num_rows, handed_out[:3]
        stream = reader.stream(columns=["id"], trace=looseleaf.Trace(), io_buffer_bytes="1 MiB")
        assert pa.RecordBatchReader.from_stream(stream).read_all().num_rows == reader.num_rows
        assert stream.io_stats()["files_read"] == (len(ds.files) if reader is ds else 1)
        with pytest.raises(looseleaf.InvalidArgumentError, match="batch_size"):
            reader.to_table(batch_size=0)
        with pytest.raises(looseleaf.InvalidArgumentError, match="unknown read option"):
            reader.to_table(batchsize=5)
        with pytest.raises(looseleaf.InvalidArgumentError, match=r"trace must be a looseleaf\.Trace"):
            reader.take([0], trace="yes")
        assert reader.count_rows(start=10, num_rows=20) == 20


def test_equals_pyarrow_dataset_of_the_same_hive_layout(tmp_path):
    rng = random.Random(5)
    n = 5_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": random_array(rng, pa.float64(), n, 0.2),
            "s": random_array(rng, pa.string(), n, 0.2),
            **_partition_columns(rng, n),
        }
    )
    pads.write_dataset(
        table,
        tmp_path / "pq",
        format="parquet",
        partitioning=["pk", "ps"],
        partitioning_flavor="hive",
    )
    looseleaf.write_dataset(table, tmp_path / "leaf", partitioning=["pk", "ps"])
    truth = pads.dataset(tmp_path / "pq", format="parquet", partitioning="hive").to_table()
    got = looseleaf.dataset(tmp_path / "leaf").to_table()
    # pyarrow reads an empty directory value as null: both read the same types and values.
    assert got.schema == truth.schema
    assert got.sort_by("id").equals(truth.sort_by("id"))
    # The directory names are the same as pyarrow's (Hive's escaping), null included; the
    # commit log's directories are hidden from pyarrow (names starting with "_").
    ours = {
        os.path.relpath(d, tmp_path / "leaf")
        for d, _, files in os.walk(tmp_path / "leaf")
        if files and not os.path.relpath(d, tmp_path / "leaf").startswith("_")
    }
    theirs = {os.path.relpath(d, tmp_path / "pq") for d, _, files in os.walk(tmp_path / "pq") if files}
    assert ours == theirs


def test_partition_filters_skip_files_and_report_it(tmp_path):
    table = pa.table({"x": pa.array(range(1000)), "k": pa.array([i % 10 for i in range(1000)], pa.int32())})
    looseleaf.write_dataset(table, tmp_path, partitioning=["k"])
    ds = looseleaf.dataset(tmp_path)
    assert len(ds.files) == 10
    plan = ds.plan(filter=pc.field("k") == 3)
    assert (plan["files_read"], plan["files_pruned"]) == (1, 9)
    stream = ds.stream(["x"], filter=(pc.field("k") == 3) & (pc.field("x") > 500))
    got = pa.RecordBatchReader.from_stream(stream).read_all()
    assert got.column("x").to_pylist() == [x for x in range(501, 1000) if x % 10 == 3]
    assert stream.io_stats()["files_read"] == 1
    # A filter on partition columns only reads no file column for a count.
    assert ds.count_rows(filter=pc.field("k").isin([1, 2])) == 200


def test_nested_columns_and_globs_and_lists_of_files(tmp_path):
    rng = random.Random(11)
    tables = []
    for part in range(3):
        n = 40 + part
        t = pa.table(
            {
                "id": pa.array(range(part * 100, part * 100 + n), pa.int64()),
                "tags": random_nested_array(rng, pa.list_(pa.string()), n, 0.3),
                "meta": random_nested_array(rng, pa.struct([("a", pa.int32()), ("b", pa.string())]), n, 0.3),
            }
        )
        (tmp_path / f"day={part}").mkdir()
        looseleaf.write_table(t, tmp_path / f"day={part}" / "f.leaf")
        tables.append(t.append_column("day", pa.array([part] * n, pa.int32())))
    whole = pa.concat_tables(tables)
    ds = looseleaf.dataset(str(tmp_path / "day=*" / "*.leaf"))
    assert ds.to_table().equals(whole)
    assert ds.to_table(columns=["meta.a", "day"]).column("day").equals(whole.column("day"))
    listed = looseleaf.dataset([tmp_path / "day=2" / "f.leaf", tmp_path / "day=0" / "f.leaf"])
    assert listed.to_table().equals(pa.concat_tables([tables[2], tables[0]]).drop_columns(["day"]))
    assert looseleaf.dataset(tmp_path, partitioning=None).schema == tables[0].schema.remove(3)
    typed = looseleaf.dataset(tmp_path, partitioning=pa.schema([("day", pa.int64())]))
    assert typed.schema.field("day").type == pa.int64()


def test_schema_mismatch_names_the_file(tmp_path):
    looseleaf.write_table(pa.table({"a": [1, 2]}), tmp_path / "a.leaf")
    looseleaf.write_table(pa.table({"a": ["x"]}), tmp_path / "b.leaf")
    expected = r"b\.leaf.*column \"a\" is Int64 there, (Large)?Utf8"
    with pytest.raises(looseleaf.SchemaMismatchError, match=expected):
        looseleaf.dataset(tmp_path)


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(looseleaf.InvalidArgumentError, match="no looseleaf files"):
        looseleaf.dataset(tmp_path)
    looseleaf.write_table(pa.table({"a": [1]}), tmp_path / "x.leaf")
    ds = looseleaf.dataset(tmp_path)
    with pytest.raises(looseleaf.InvalidArgumentError, match="out of range"):
        ds.take([1])
    (tmp_path / "k=1").mkdir()
    looseleaf.write_table(pa.table({"a": [1]}), tmp_path / "k=1" / "y.leaf")
    with pytest.raises(looseleaf.InvalidArgumentError, match="partition directories differ"):
        looseleaf.dataset(tmp_path)
    with pytest.raises(looseleaf.InvalidArgumentError, match="already"):
        looseleaf.write_dataset(pa.table({"a": [1]}), tmp_path / "k=1")
    with pytest.raises(looseleaf.InvalidArgumentError, match="partition by"):
        looseleaf.write_dataset(pa.table({"a": [1]}), tmp_path / "new", partitioning=["nope"])
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "z.leaf").write_bytes(b"not a looseleaf file")
    with pytest.raises(looseleaf.CorruptFileError, match=r"z\.leaf"):
        looseleaf.dataset(tmp_path / "junk")


def test_overwrite_replaces_and_append_adds(tmp_path):
    first = pa.table({"a": [1, 2, 3], "k": ["x", "y", "x"]})
    looseleaf.write_dataset(first, tmp_path, partitioning=["k"])
    looseleaf.write_dataset(first, tmp_path, partitioning=["k"], existing_data="append")
    assert looseleaf.dataset(tmp_path).count_rows() == 6
    second = pa.table({"a": [9], "k": ["z"]})
    looseleaf.write_dataset(second, tmp_path, partitioning=["k"], existing_data="overwrite")
    assert looseleaf.dataset(tmp_path).to_table().equals(second)


def test_object_store_dataset(tmp_path):
    moto_mod = pytest.importorskip("s3_server")
    server = moto_mod.start_moto()
    try:
        server.create_bucket("looseleaf-datasets")
        options = server.storage_options()
        keys = pa.array([i % 3 for i in range(3000)], pa.int64())
        table = pa.table({"a": pa.array(range(3000)), "k": keys})
        root = "s3://looseleaf-datasets/t/"
        written = looseleaf.write_dataset(
            table, root, partitioning=["k"], max_rows_per_file=400, storage_options=options
        )
        assert all(w.startswith("s3://looseleaf-datasets/t/k=") for w in written)
        ds = looseleaf.dataset(root, storage_options=options)
        got = ds.to_table()
        assert got.sort_by("a").equals(table.cast(pa.schema([("a", pa.int64()), ("k", pa.int32())])))
        assert ds.take([2999, 0]).column("a").to_pylist() == [2999, 0]
    finally:
        server.stop()


def test_escaped_partition_values_keep_their_keys_on_object_stores(tmp_path):
    """Directory names hold escapes (``k=a%2Fb``): on an object store they are the key's
    characters, as on a local disk and as pyarrow writes them, never decoded into another key."""
    moto_mod = pytest.importorskip("s3_server")
    server = moto_mod.start_moto()
    try:
        server.create_bucket("escapes")
        options = server.storage_options()
        values = ["a/b", "100%", "x y", "a=b", "plain", None]
        table = pa.table({"a": pa.array(range(60), pa.int64()), "k": [values[i % 6] for i in range(60)]})
        looseleaf.write_dataset(table, "s3://escapes/ds", partitioning=["k"], storage_options=options)
        looseleaf.write_dataset(table, tmp_path / "local", partitioning=["k"])
        listed = server.client().list_objects_v2(Bucket="escapes", Prefix="ds/")["Contents"]
        remote = {o["Key"].split("/")[1] for o in listed if not o["Key"].startswith("ds/_")}
        local = {p.name for p in (tmp_path / "local").iterdir() if not p.name.startswith("_")}
        assert remote == local
        assert {"k=a%2Fb", "k=100%25", "k=x%20y", "k=a%3Db"} <= remote
        for ds in (
            looseleaf.dataset("s3://escapes/ds", storage_options=options),
            looseleaf.dataset("s3://escapes/ds/k=*/*.leaf", storage_options=options),
        ):
            assert ds.to_table().sort_by("a").equals(table)
    finally:
        server.stop()
