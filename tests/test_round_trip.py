"""Property tests: random flat tables written with random page and batch sizes read back
identically (pyarrow is the source of truth) through every read path."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import looseleaf
from strategies import flat_tables, flat_types, random_array, split_batches, take_rows

PAGE_SIZES = st.sampled_from([1, 64, 1000, 4096, 65536, 8 * 1024 * 1024])
BATCH_SIZES = st.lists(st.integers(1, 500), min_size=1, max_size=4)


def write(table: pa.Table, path, page_size: int, input_sizes: list[int]) -> None:
    with looseleaf.FileWriter(path, table.schema, page_size=page_size) as writer:
        for batch in split_batches(table, input_sizes):
            writer.write_batch(batch)
    assert writer.closed


@given(table=flat_tables(), page_size=PAGE_SIZES, input_sizes=BATCH_SIZES, data=st.data())
def test_every_read_path_matches_pyarrow(tmp_path_factory, table, page_size, input_sizes, data):
    path = tmp_path_factory.mktemp("rt") / "t.leaf"
    write(table, path, page_size, input_sizes)
    reader = looseleaf.open(path)
    assert reader.num_rows == table.num_rows
    assert reader.schema == table.schema

    # Full scan in batches of one size, unrelated to the page size.
    batch_size = data.draw(st.integers(1, 700), label="batch_size")
    stream = reader.read_all(batch_size=batch_size)
    batches = list(stream)
    assert all(b.num_rows == batch_size for b in batches[:-1])
    assert pa.Table.from_batches(batches, schema=table.schema).equals(table)
    assert reader.to_table().equals(table)

    # Projection: a random subset in a random order.
    names = table.column_names
    columns = data.draw(st.permutations(names), label="order")[: data.draw(st.integers(1, len(names)))]
    assert reader.read_all(columns=columns).read_all().equals(table.select(columns))

    # A row range.
    start = data.draw(st.integers(0, table.num_rows), label="start")
    count = data.draw(st.integers(0, table.num_rows - start), label="count")
    ranged = reader.read_range(start, count, batch_size=data.draw(st.integers(1, 300))).read_all()
    assert ranged.equals(table.slice(start, count))

    # Take: unsorted, with repeats, in the order asked.
    if table.num_rows:
        indices = data.draw(st.lists(st.integers(0, table.num_rows - 1), max_size=60), label="indices")
        taken = reader.take(indices, columns=columns)
        expected = take_rows(table.select(columns), indices)
        assert taken.equals(expected)


@given(data=st.data())
def test_io_settings_do_not_change_results(tmp_path_factory, data):
    """Tiny budgets (every read bypasses), depth one, and large budgets read the same rows."""
    table = data.draw(flat_tables(max_rows=300, max_columns=4))
    path = tmp_path_factory.mktemp("io") / "t.leaf"
    write(table, path, page_size=256, input_sizes=[97])
    reader = looseleaf.open(path, io_depth=1, io_buffer_bytes=1)
    assert reader.read_all(batch_size=37).read_all().equals(table)
    assert reader.read_all(io_depth=64, io_buffer_bytes=1 << 30).read_all().equals(table)


@pytest.mark.parametrize("data_type", flat_types(), ids=str)
def test_each_type_with_many_pages(tmp_path, data_type):
    rng = random.Random(7)
    array = random_array(rng, data_type, 2000, 0.2)
    table = pa.table({"x": array})
    path = tmp_path / "t.leaf"
    looseleaf.write_table(table, path, page_size=64)
    reader = looseleaf.open(path)
    if not pa.types.is_null(data_type):
        assert reader.metadata["columns"][0]["num_pages"] > 1
    assert reader.to_table().equals(table)
    indices = [1999, 0, 1000, 1000, 3, 1501]
    assert reader.take(indices).equals(take_rows(table, indices))
    assert reader.read_range(333, 999, batch_size=100).read_all().equals(table.slice(333, 999))


def test_empty_table_and_empty_reads(tmp_path):
    table = pa.table({"a": pa.array([], pa.int32()), "s": pa.array([], pa.string())})
    path = tmp_path / "empty.leaf"
    looseleaf.write_table(table, path)
    reader = looseleaf.open(path)
    assert reader.num_rows == 0
    assert reader.to_table().equals(table)
    assert reader.take([]).equals(table)
    assert reader.read_range(0, 0).read_all().num_rows == 0


def test_large_batches_are_cut_into_pages(tmp_path):
    n = 300_000
    table = pa.table({"i": pa.array(range(n), pa.int64()), "s": pa.array([str(i) for i in range(n)])})
    path = tmp_path / "big.leaf"
    looseleaf.write_table(table, path, page_size=100_000)
    reader = looseleaf.open(path)
    pages = reader.metadata["columns"][0]["pages"]
    assert len(pages) >= 20
    assert all(p["bytes"] <= 100_000 for p in pages)
    assert reader.to_table().equals(table)


@given(seed=st.integers(0, 2**32 - 1), page_size=st.sampled_from([4096, 65536, 1 << 20]), data=st.data())
def test_embeddings_split_with_alp_rd_read_back_bit_exact(tmp_path_factory, seed, page_size, data):
    """Normal float32s (embeddings, as fixed-size lists with null rows, and a column with null
    values and NaNs) are stored with ALP-RD by default and read back bit for bit on every path."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, dimension = data.draw(st.integers(1, 3000)), data.draw(st.sampled_from([1, 8, 96]))
    items = rng.standard_normal(n * dimension, dtype=np.float32)
    items[rng.random(items.size) < 0.001] = np.float32("nan")
    null_rows = pa.array(rng.random(n) < 0.1)
    embeddings = pa.FixedSizeListArray.from_arrays(pa.array(items), dimension, mask=null_rows)
    scalar = pa.array(rng.standard_normal(n, dtype=np.float32), mask=rng.random(n) < 0.2)
    table = pa.table({"embedding": embeddings, "x": scalar})
    path = tmp_path_factory.mktemp("alp_rd") / "floats.leaf"
    looseleaf.write_table(table, path, page_size=page_size)
    reader = looseleaf.open(path)
    encodings = {c["field"]: {p["encoding"] for p in c["pages"]} for c in reader.metadata["columns"]}
    if page_size >= 65536 and n * dimension >= 60_000:
        # (Small pages stay plain: their last block's padding eats the tenth saved.)
        assert any("alp_rd" in e for e in encodings["embedding"]), encodings

    def same_bits(got: pa.Table, expected: pa.Table) -> bool:
        # Bit for bit, NaNs included (which `equals` never finds equal).
        def bits(t: pa.Table) -> list[pa.Array]:
            embedding = t.column("embedding").combine_chunks()
            return [
                embedding.is_null(),
                embedding.flatten().view(pa.int32()),
                t.column("x").combine_chunks().view(pa.int32()),
            ]

        return all(a.equals(b) for a, b in zip(bits(got), bits(expected), strict=True))

    assert same_bits(reader.to_table(), table)
    start = data.draw(st.integers(0, n))
    length = data.draw(st.integers(0, n - start))
    assert same_bits(reader.read_range(start, length).read_all(), table.slice(start, length))
    indices = data.draw(st.lists(st.integers(0, n - 1), max_size=50))
    assert same_bits(reader.take(indices), table.take(pa.array(indices, pa.int64())))


def test_alp_rd_can_be_forced_on_floats_only(tmp_path):
    values = pa.array([1.5, -2.0, 0.75, 3.0e38] + [1.5] * 1020, pa.float32())
    path = tmp_path / "forced.leaf"
    looseleaf.write_table(pa.table({"x": values}), path, encodings={"x": "alp_rd"})
    reader = looseleaf.open(path)
    assert reader.metadata["columns"][0]["pages"][0]["encoding"].startswith("alp_rd(")
    assert reader.to_table().column("x").combine_chunks().equals(values)
    assert reader.take([3, 0, 2]).column("x").to_pylist() == values.take([3, 0, 2]).to_pylist()
    ints = pa.table({"i": pa.array(range(100))})
    with pytest.raises(looseleaf.InvalidArgumentError, match="alp_rd"):
        looseleaf.write_table(ints, tmp_path / "ints.leaf", encodings={"i": "alp_rd"})


def text_of_words(rng, n: int, vocabulary_size: int = 2000) -> list[str]:
    """`n` values of 0 to 11 Zipf-distributed words, 2% of them ending in random characters."""
    letters = [rng.integers(0, 26, rng.integers(1, 12)) for _ in range(vocabulary_size)]
    vocabulary = ["".join(chr(97 + int(c)) for c in word) for word in letters]
    ranks = rng.zipf(1.3, n * 12) % vocabulary_size
    values, at = [], 0
    for length in rng.integers(0, 12, n):
        words = " ".join(vocabulary[r] for r in ranks[at : at + length])
        if rng.random() < 0.02:
            words += "".join(chr(int(c)) for c in rng.integers(0x20, 0x2FF, 5))
        values.append(words)
        at += length
    return values


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), page_size=st.sampled_from([64, 4096, 65536]), data=st.data())
def test_text_forced_to_onpair_reads_back(tmp_path_factory, seed, page_size, data):
    """Text with nulls, empty values and non-ASCII characters, as strings and binaries with
    OnPair forced, reads back equal on every path."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(1, 3000))
    values = text_of_words(rng, n)
    binaries = pa.array([v.encode() for v in values], pa.large_binary())
    table = pa.table({"s": pa.array(values, mask=rng.random(n) < 0.1), "b": binaries})
    path = tmp_path_factory.mktemp("onpair") / "t.leaf"
    looseleaf.write_table(table, path, page_size=page_size, encodings={"*": "onpair"})
    reader = looseleaf.open(path)
    stored = ("onpair(", "nullable(onpair(", "all_null")
    for column in reader.metadata["columns"]:
        assert all(p["encoding"].startswith(stored) for p in column["pages"])
    assert reader.to_table().equals(table)
    start = data.draw(st.integers(0, n))
    length = data.draw(st.integers(0, n - start))
    assert reader.read_range(start, length, batch_size=97).read_all().equals(table.slice(start, length))
    indices = data.draw(st.lists(st.integers(0, n - 1), max_size=50))
    assert reader.take(indices).equals(table.take(pa.array(indices, pa.int64())))


def test_text_of_words_is_stored_with_onpair_smaller_than_fsst(tmp_path):
    import numpy as np

    values = text_of_words(np.random.default_rng(3), 60_000)
    table = pa.table({"s": values})
    looseleaf.write_table(table, tmp_path / "auto.leaf")
    looseleaf.write_table(table, tmp_path / "fsst.leaf", encodings={"*": {"forbid": ["onpair"]}})
    auto, fsst = looseleaf.open(tmp_path / "auto.leaf"), looseleaf.open(tmp_path / "fsst.leaf")
    assert auto.metadata["columns"][0]["pages"][0]["encoding"].startswith("onpair(")
    assert fsst.metadata["columns"][0]["pages"][0]["encoding"].startswith("fsst(")
    assert os.path.getsize(tmp_path / "auto.leaf") < 0.8 * os.path.getsize(tmp_path / "fsst.leaf")
    assert auto.to_table().equals(table)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_large_pages_read_alike_mapped_or_copied(tmp_path_factory, seed, data):
    """Reads of 256 KiB and more from a local file map its pages by default: every read path
    returns the same rows with ``memory_map`` on and off, nulls included."""
    rng = random.Random(seed)
    n = data.draw(st.integers(40_000, 120_000), label="rows")
    types = data.draw(st.lists(st.sampled_from(flat_types()), min_size=1, max_size=4), label="types")
    table = pa.table(
        {f"c{i}": random_array(rng, t, n, rng.choice([0.0, 0.1, 0.9])) for i, t in enumerate(types)}
        | {"s": random_array(rng, pa.string(), n, 0.2)}
    )
    path = tmp_path_factory.mktemp("mapped") / "t.leaf"
    looseleaf.write_table(table, path, page_size=data.draw(st.sampled_from([1 << 20, 8 << 20])))
    mapped, copied = (looseleaf.open(path, storage_options={"memory_map": m}) for m in (True, False))
    # The strings' pages are read in requests large enough to be mapped.
    assert max(r["bytes"] for r in mapped.plan()["request_list"]) >= 256 << 10
    order = data.draw(st.permutations(table.column_names), label="order")
    columns = order[: data.draw(st.integers(1, len(order)))]
    indices = data.draw(st.lists(st.integers(0, n - 1), max_size=200), label="indices")
    start = data.draw(st.integers(0, n), label="start")
    for reader in (mapped, copied):
        assert reader.to_table().equals(table)
        assert reader.read_all(columns=columns, batch_size=4096).read_all().equals(table.select(columns))
        assert reader.read_range(start, n - start).read_all().equals(table.slice(start))
        assert reader.take(indices, columns=columns).equals(take_rows(table.select(columns), indices))


def test_memory_map_must_be_a_flag(tmp_path):
    path = tmp_path / "t.leaf"
    looseleaf.write_table(pa.table({"x": [1, 2]}), path)
    with pytest.raises(ValueError, match="memory_map must be true or false"):
        looseleaf.open(path, storage_options={"memory_map": "sometimes"})
    copied = looseleaf.open(path, storage_options={"memory_map": "FALSE"})
    assert copied.to_table().column("x").to_pylist() == [1, 2]
