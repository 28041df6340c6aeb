"""Property tests of ``string_view=True``: strings and binaries at any depth come back as
``string_view``/``binary_view`` through every read path, with the values pyarrow wrote, whatever
encoding stored them (plain, dictionary, FSST) and wherever batches fall against pages."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import looseleaf
from strategies import (
    flat_tables,
    nested_tables,
    schema_with_views,
    split_batches,
    take_rows,
)

# FSST cannot be forced (a page it does not compress is refused): forbidding dictionaries leaves
# it to the writer where it pays. OnPair stores any page.
STRING_ENCODINGS = st.sampled_from(
    [None, "plain", "dictionary", "onpair", {"forbid": ["dictionary", "onpair"]}]
)


def as_views(table: pa.Table) -> pa.Table:
    """The truth: pyarrow's own cast of the table written to view types (column by column, and
    only where a type changes: pyarrow cannot cast some columns to themselves, such as a
    fixed-size list of nulls)."""
    schema = schema_with_views(table.schema)
    columns = [
        column if column.type == field.type else column.cast(field.type)
        for column, field in zip(table.columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def write(table: pa.Table, path, page_size: int, sizes: list[int], encodings=None) -> None:
    with looseleaf.FileWriter(path, table.schema, page_size=page_size, encodings=encodings) as writer:
        for batch in split_batches(table, sizes):
            writer.write_batch(batch)


def is_bytes(data_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or (pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type))
    )


@given(
    table=flat_tables(max_rows=300),
    page_size=st.sampled_from([64, 1000, 65536]),
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=3),
    data=st.data(),
)
def test_flat_strings_read_as_views_match_pyarrow(tmp_path_factory, table, page_size, sizes, data):
    encodings = {}
    for field in table.schema:
        chosen = data.draw(STRING_ENCODINGS, label=f"encoding of {field.name}")
        if is_bytes(field.type) and chosen is not None:
            encodings[field.name] = chosen
    path = tmp_path_factory.mktemp("views") / "t.leaf"
    write(table, path, page_size, sizes, encodings or None)
    expected = as_views(table)
    reader = looseleaf.open(path, string_view=True)
    assert reader.options["string_view"] is True

    batch_size = data.draw(st.integers(1, 400), label="batch_size")
    scanned = reader.read_all(batch_size=batch_size).read_all()
    assert scanned.schema == expected.schema
    assert scanned.equals(expected)

    start = data.draw(st.integers(0, table.num_rows), label="start")
    count = data.draw(st.integers(0, table.num_rows - start), label="count")
    assert reader.read_range(start, count, batch_size=37).read_all().equals(expected.slice(start, count))

    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=50), label="indices")
        assert reader.take(indices).equals(take_rows(expected, indices))

    # The option is per read too, and off by default.
    plain = looseleaf.open(path)
    assert plain.to_table().equals(table)
    assert plain.to_table(string_view=True).equals(expected)


@given(
    table=nested_tables(max_rows=150),
    page_size=st.sampled_from([64, 700, 65536]),
    sizes=st.lists(st.integers(1, 200), min_size=1, max_size=3),
    data=st.data(),
)
def test_nested_strings_read_as_views_match_pyarrow(tmp_path_factory, table, page_size, sizes, data):
    path = tmp_path_factory.mktemp("views") / "t.leaf"
    write(table, path, page_size, sizes)
    reader = looseleaf.open(path)
    batch_size = data.draw(st.integers(1, 300), label="batch_size")
    scanned = reader.read_all(batch_size=batch_size, string_view=True).read_all()
    assert_same_values(scanned, table)
    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=40), label="indices")
        assert_same_values(reader.take(indices, string_view=True), take_rows(table, indices))


def assert_same_values(got: pa.Table, written: pa.Table) -> None:
    """``got`` (read with views) holds ``written``'s values with view types.

    The truth is pyarrow's cast of ``written`` to views; pyarrow cannot cast every nested type
    (a map of lists of nulls gives invalid arrays), so where it fails, the values as Python
    objects (a view reads back as the same str or bytes) where they convert."""
    assert got.schema == schema_with_views(written.schema)
    got.validate(full=True)
    try:
        expected = as_views(written)
        expected.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        expected = None
    if expected is not None:
        assert got.equals(expected)
        return
    try:
        truth = written.to_pylist()
    except (OverflowError, ValueError):  # timestamps beyond Python's datetime
        assume(False)
    assert got.to_pylist() == truth


def test_filters_and_dictionary_columns_with_views(tmp_path):
    words = [f"word-{i % 37}-{'x' * (i % 20)}" for i in range(5000)]
    table = pa.table(
        {
            "id": pa.array(range(5000), pa.int64()),
            "word": pa.array([None if i % 11 == 0 else w for i, w in enumerate(words)]),
            "tag": pa.array([f"t{i % 5}" for i in range(5000)]),
            "blob": pa.array([bytes([i % 256]) * (i % 30) for i in range(5000)], pa.large_binary()),
        }
    )
    path = tmp_path / "t.leaf"
    write(table, path, 4096, [1000], {"word": "dictionary", "blob": "plain"})
    reader = looseleaf.open(path, string_view=True)
    expected = as_views(table)

    where = pc.field("word") >= "word-3"
    got = reader.to_table(filter=where)
    assert got.equals(as_views(table.filter(where)))

    # Dictionary columns keep their value type; the other strings are views.
    both = reader.to_table(dictionary_columns=["tag"])
    assert both.schema.field("tag").type.value_type == pa.string()
    assert both.schema.field("word").type == pa.string_view()
    assert both.column("tag").cast(pa.string()).equals(table.column("tag"))
    assert both.column("word").equals(expected.column("word"))


def test_string_view_must_be_a_boolean(tmp_path):
    path = tmp_path / "t.leaf"
    write(pa.table({"s": ["a"]}), path, 4096, [1])
    with pytest.raises(looseleaf.InvalidArgumentError, match="string_view must be true or false"):
        looseleaf.open(path, string_view=3)
