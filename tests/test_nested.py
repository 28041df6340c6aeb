"""Property tests for nested data (structs, lists, large lists, fixed-size lists, maps, nested
to depth 4 with nulls and empty lists at every level): every read path against pyarrow."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

import looseleaf
from strategies import nested_tables, split_batches, take_rows

PAGE_SIZES = st.sampled_from([1, 64, 700, 4096, 65536])


def narrowed(array: pa.Array, child: int) -> pa.Array:
    """A struct array keeping only its ``child``-th field: what ``parent.child`` reads."""
    field = array.type.field(child)
    return pa.StructArray.from_arrays([array.field(child)], fields=[field], mask=array.is_null())


@given(
    table=nested_tables(),
    page_size=PAGE_SIZES,
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=3),
    data=st.data(),
)
def test_nested_round_trip(tmp_path_factory, table, page_size, sizes, data):
    path = tmp_path_factory.mktemp("nested") / "t.leaf"
    with looseleaf.FileWriter(path, table.schema, page_size=page_size) as writer:
        for batch in split_batches(table, sizes):
            writer.write_batch(batch)
    reader = looseleaf.open(
        path,
        io_depth=data.draw(st.sampled_from([1, 8])),
        io_buffer_bytes=data.draw(st.sampled_from([1, 1 << 30])),
    )
    assert reader.schema == table.schema

    batch_size = data.draw(st.integers(1, 500), label="batch_size")
    assert reader.read_all(batch_size=batch_size).read_all().equals(table)

    start = data.draw(st.integers(0, table.num_rows), label="start")
    count = data.draw(st.integers(0, table.num_rows - start), label="count")
    assert (
        reader.read_range(start, count, batch_size=data.draw(st.integers(1, 100)))
        .read_all()
        .equals(table.slice(start, count))
    )

    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=40), label="indices")
        assert reader.take(indices).equals(take_rows(table, indices))

    # A nested path into a top-level struct reads that child only.
    structs = [f.name for f in table.schema if pa.types.is_struct(f.type) and f.type.num_fields > 0]
    if structs:
        name = data.draw(st.sampled_from(structs), label="struct")
        column = table.column(name).combine_chunks()
        child = data.draw(st.integers(0, column.type.num_fields - 1), label="child")
        path_name = f"{name}.{column.type.field(child).name}"
        got = reader.to_table(columns=[path_name])
        expected = narrowed(column, child)
        assert got.column(0).combine_chunks().equals(expected)
        plan = reader.plan(columns=[path_name])
        assert all(
            c == name or c.startswith(f"{name}.{column.type.field(child).name}") for c in plan["columns"]
        )


def test_embeddings_are_one_column(tmp_path):
    """A fixed-size list of floats is one column: plain, one buffer of 768-float rows (a row is
    one read of its bytes); by default its items are split with ALP-RD when that saves a tenth
    (a row then reads the one or two blocks of 1,024 values holding it)."""
    import numpy as np

    n, dim = 5000, 768
    values = pa.array(np.random.default_rng(7).standard_normal(n * dim, dtype=np.float32))
    table = pa.table(
        {"id": pa.array(range(n), pa.int64()), "embedding": pa.FixedSizeListArray.from_arrays(values, dim)}
    )
    for encodings, expected, row_bytes in [
        ({"embedding": "plain"}, f"plain({32 * dim})", range(4 * dim, 4 * dim + 1)),
        # Two blocks of 28-bit values, and a few exceptions.
        (None, f"fixed_size_list({dim}, alp_rd(", range(1, 2 * 128 * 28 + 600)),
    ]:
        path = tmp_path / "emb.leaf"
        looseleaf.write_table(table, path, encodings=encodings)
        reader = looseleaf.open(path)
        columns = {c["field"]: c for c in reader.metadata["columns"]}
        assert set(columns) == {"id", "embedding"}
        assert all(p["encoding"].startswith(expected) for p in columns["embedding"]["pages"]), columns
        assert reader.to_table().equals(table)
        assert reader.take([4999, 7]).equals(table.take([4999, 7]))
        assert reader.plan(indices=[7])["columns"]["embedding"]["bytes"] in row_bytes


def test_projection_of_struct_children_and_list_items(tmp_path):
    meta = pa.array(
        [{"score": 1.5, "name": "a", "tags": ["x"]}, None, {"score": None, "name": "c", "tags": []}]
    )
    events = pa.array([[{"kind": "k", "at": 1}], None, [{"kind": None, "at": 3}, None]])
    table = pa.table({"id": [1, 2, 3], "meta": meta, "events": events})
    path = tmp_path / "p.leaf"
    looseleaf.write_table(table, path)
    reader = looseleaf.open(path)
    got = reader.to_table(columns=["meta.score", "id", "meta.tags"])
    assert got.column_names == ["meta", "id"]
    assert got.column("meta").type == pa.struct([("score", pa.float64()), ("tags", pa.list_(pa.string()))])
    assert got.column("meta").to_pylist() == [
        {"score": 1.5, "tags": ["x"]},
        None,
        {"score": None, "tags": []},
    ]
    kinds = reader.to_table(columns=["events.kind"]).column("events")
    assert kinds.to_pylist() == [[{"kind": "k"}], None, [{"kind": None}, None]]
    plan = reader.plan(columns=["meta.score"])
    assert set(plan["columns"]) == {"meta", "meta.score"}
    for bad in ("meta.nope", "id.x", "events.nope"):
        try:
            reader.to_table(columns=[bad])
        except looseleaf.InvalidArgumentError:
            pass
        else:
            raise AssertionError(f"{bad} should be rejected")


def test_full_scan_of_lists_needs_no_indirect_reads(tmp_path):
    n = 50_000
    lists = pa.array([list(range(i % 7)) for i in range(n)], pa.list_(pa.int64()))
    nested = pa.array([[[i], [i, i]] if i % 3 else None for i in range(n)], pa.list_(pa.list_(pa.int32())))
    table = pa.table({"l": lists, "ll": nested})
    path = tmp_path / "lists.leaf"
    looseleaf.write_table(table, path, page_size=64 * 1024)
    reader = looseleaf.open(path)
    assert reader.plan()["indirect_requests"] == 0
    stream = reader.stream()
    assert pa.RecordBatchReader.from_stream(stream).read_all().equals(table)
    assert stream.io_stats()["indirect_requests"] == 0
    # A few rows from the middle of large pages: offsets first, items after.
    few = reader.plan(indices=[12_345, 40_000])
    assert few["indirect_requests"] > 0
    assert reader.take([40_000, 12_345]).equals(table.take([40_000, 12_345]))
