"""A looseleaf file or dataset as a ``pyarrow.dataset.Dataset`` (``arrow_dataset()``), and through
it DuckDB and Polars: results equal pyarrow's (and DuckDB's and Polars' own over the in-memory
table) for any filter, those the engine cannot evaluate included; the I/O counters show that
projections and filters were pushed into the read."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest
from polars.testing import assert_frame_equal

import looseleaf


def _table(rows: int, seed: int) -> pa.Table:
    """Columns of several kinds, each with nulls."""
    rng = np.random.default_rng(seed)

    def nulls(values: pa.Array, density: float) -> pa.Array:
        mask = pa.array(rng.random(rows) < density)
        return pc.if_else(mask, pa.nulls(rows, values.type), values)

    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "i": nulls(pa.array(rng.integers(-50, 50, rows), pa.int32()), 0.1),
            "f": nulls(pa.array(rng.normal(size=rows)), 0.2),
            "s": nulls(pa.array([f"name {int(x)}" for x in rng.integers(0, 300, rows)]), 0.15),
            "b": nulls(pa.array(rng.random(rows) < 0.5), 0.3),
            "k": pa.array(np.arange(rows) % 4, pa.int32()),
        }
    )


TABLE = _table(30_000, 3)

#: Filters the engine evaluates, those it does not (string functions, arithmetic), and mixes.
PUSHED = [
    pc.field("id") < 12_000,
    pc.field("i") >= 10,
    pc.field("f") > 0.5,
    pc.field("s") == "name 7",
    pc.field("i").isin([1, 2, 3, -7]),
    pc.field("b"),
    pc.field("s").is_null(),
    pc.field("f").is_valid(),
]
NOT_PUSHED = [
    pc.starts_with(pc.field("s"), "name 1"),
    pc.field("i") * 2 > pc.field("k"),
    pc.field("f") > pc.field("i"),
    pc.abs(pc.field("f")) < 0.3,
]


def random_filter(rng: random.Random, pool: list | None = None):
    """A random combination (``&``, ``|``, ``~``) of filters of ``pool`` (pyarrow expressions
    by default; any with those operators: Polars' too)."""
    pool = pool or PUSHED + NOT_PUSHED
    expression = rng.choice(pool)
    for _ in range(rng.randrange(3)):
        other = rng.choice(pool)
        if rng.random() < 0.2:
            other = ~other
        expression = expression & other if rng.random() < 0.7 else expression | other
    return expression


@pytest.fixture(scope="module", params=["file", "dataset"])
def readable(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp("arrow_dataset")
    if request.param == "file":
        path = directory / "table.leaf"
        looseleaf.write_table(TABLE, path, page_size=32 * 1024)
        return looseleaf.open(path)
    looseleaf.write_dataset(TABLE, directory / "ds", max_rows_per_file=11_000, page_size=32 * 1024)
    return looseleaf.dataset(directory / "ds")


def _truth(columns, filter) -> pa.Table:
    return pds.dataset(TABLE).to_table(columns=columns, filter=filter)


def test_is_a_pyarrow_dataset_with_its_schema(readable):
    a = readable.arrow_dataset()
    assert isinstance(a, pds.Dataset)
    assert a.schema == TABLE.schema
    assert a.source is readable


def test_random_filters_and_projections_give_pyarrow_s_answer(readable):
    """Any filter: pushed whole, in part (its conjuncts the engine takes), or not at all."""
    rng = random.Random(11)
    a = readable.arrow_dataset(batch_size=4_096)
    names = TABLE.column_names
    for case in range(40):
        filter = random_filter(rng)
        columns = rng.sample(names, rng.randrange(1, len(names) + 1)) if case % 4 else None
        what = f"case {case}: {columns} where {filter}"
        truth = _truth(columns, filter)
        assert a.to_table(columns=columns, filter=filter).equals(truth), what
        batches = list(a.to_batches(columns=columns, filter=filter, batch_size=1_000))
        assert all(b.num_rows <= 1_000 for b in batches), what
        assert pa.Table.from_batches(batches, schema=truth.schema).equals(truth), what
        assert a.count_rows(filter=filter) == truth.num_rows, what
        assert a.head(25, columns=columns, filter=filter).equals(truth.slice(0, 25)), what
        reader = a.scanner(columns=columns, filter=filter).to_reader()
        assert reader.schema == truth.schema, what
        assert reader.read_all().equals(truth), what


def test_head_take_and_count_without_a_filter(readable):
    a = readable.arrow_dataset()
    assert a.head(0).num_rows == 0
    assert a.head(7, columns=["s", "id"]).equals(TABLE.select(["s", "id"]).slice(0, 7))
    # Only the rows asked for are read.
    assert a.last_io_stats["bytes_read"] < 0.2 * a.to_table().nbytes
    indices = [29_999, 0, 17, 17, 12_345]
    assert a.take(indices, columns=["f", "s"]).equals(TABLE.select(["f", "s"]).take(indices))
    filtered = a.take(indices, filter=pc.field("id") > 100)
    assert filtered.equals(TABLE.take(indices).filter(pc.field("id") > 100))
    assert a.count_rows() == TABLE.num_rows


def test_what_it_does_not_have_is_an_error_not_a_crash(readable):
    a = readable.arrow_dataset()
    for call in (
        lambda: a.join(a, "id"),
        lambda: a.sort_by("id"),
        lambda: a.get_fragments(),
        lambda: a.partition_expression,
        lambda: a.replace_schema(TABLE.schema),
        lambda: a.filter(pc.field("id") > 1),
    ):
        with pytest.raises(NotImplementedError, match="ArrowDataset"):
            call()
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(a)
    with pytest.raises(looseleaf.InvalidArgumentError, match="unknown option"):
        a.scanner(columns=["id"], nonsense=1)
    # pyarrow's scan options with no meaning here are accepted.
    got = a.to_table(columns=["id"], use_threads=False, batch_readahead=4, fragment_readahead=2)
    assert got.equals(TABLE.select(["id"]))


def test_importing_looseleaf_does_not_import_pyarrow_dataset():
    """pyarrow.dataset imports pandas: only arrow_dataset() pays for it."""
    code = "import sys, looseleaf; print('pyarrow.dataset' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out


# --- DuckDB and Polars --------------------------------------------------------------------------


def _lineitem(rows: int, seed: int) -> pa.Table:
    """Columns of TPC-H's lineitem that Q1 and Q6 use, sorted by ship date as a table written
    in date order would be."""
    rng = np.random.default_rng(seed)
    days = np.sort(rng.integers(8_000, 10_600, rows))
    return pa.table(
        {
            "l_orderkey": pa.array(np.arange(rows) // 4, pa.int64()),
            "l_quantity": pa.array(rng.integers(1, 51, rows).astype(np.float64)),
            "l_extendedprice": pa.array(np.round(rng.uniform(900, 100_000, rows), 2)),
            "l_discount": pa.array(np.round(rng.integers(0, 11, rows) / 100, 2)),
            "l_tax": pa.array(np.round(rng.integers(0, 9, rows) / 100, 2)),
            "l_returnflag": pa.array(rng.choice(["A", "N", "R"], rows)),
            "l_linestatus": pa.array(rng.choice(["F", "O"], rows)),
            "l_shipdate": pa.array(days.astype("datetime64[D]")),
            "l_comment": pa.array([f"comment {i % 977}" for i in range(rows)]),
        }
    )


LINEITEM = _lineitem(200_000, 5)

Q1 = """
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_discount) AS avg_disc, count(*) AS count_order
FROM {t} WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAY
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
"""
Q6 = """
SELECT sum(l_extendedprice * l_discount) AS revenue FROM {t}
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
"""
OTHERS = [
    "SELECT count(*) FROM {t} WHERE l_comment LIKE 'comment 1%' AND l_orderkey < 20000",
    "SELECT l_returnflag, max(l_extendedprice) FROM {t} WHERE l_tax IN (0.01, 0.02) GROUP BY 1 ORDER BY 1",
    "SELECT l_orderkey, l_comment FROM {t} WHERE l_orderkey BETWEEN 1000 AND 1010 ORDER BY 1, 2",
    "SELECT count(*) FROM {t} WHERE l_discount > 0.04 OR l_quantity = 1",
]


def _rows_close(got: list[tuple], truth: list[tuple]) -> bool:
    """Equal rows, floats to 1e-9 (sums in another order)."""
    if len(got) != len(truth):
        return False
    for row, expected in zip(got, truth, strict=True):
        for value, want in zip(row, expected, strict=True):
            if isinstance(want, float) and isinstance(value, float):
                if value != pytest.approx(want, rel=1e-9):
                    return False
            elif value != want:
                return False
    return True


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lineitem")
    looseleaf.write_table(LINEITEM, directory / "lineitem.leaf", page_size=64 * 1024)
    looseleaf.write_dataset(LINEITEM, directory / "ds", max_rows_per_file=60_000, page_size=64 * 1024)
    return {
        "file": looseleaf.open(directory / "lineitem.leaf"),
        "dataset": looseleaf.dataset(directory / "ds"),
    }


@pytest.mark.parametrize("kind", ["file", "dataset"])
def test_duckdb_queries_equal_duckdb_over_the_table(lineitem, kind):
    a = lineitem[kind].arrow_dataset()  # noqa: F841 (DuckDB finds it by its name)
    truth_table = LINEITEM  # noqa: F841
    for query in [Q1, Q6, *OTHERS]:
        got = duckdb.sql(query.format(t="a")).fetchall()
        truth = duckdb.sql(query.format(t="truth_table")).fetchall()
        assert _rows_close(got, truth), (query, got, truth)
        assert got, query


def test_duckdb_pushes_projections_and_filters(lineitem):
    reader = lineitem["file"]
    a = reader.arrow_dataset()
    file_bytes = Path(reader.path).stat().st_size
    duckdb.sql("SELECT sum(l_tax) FROM a").fetchall()
    one_column = reader.plan(columns=["l_tax"])["bytes"]
    assert a.last_io_stats["bytes_read"] <= one_column * 1.1 + 64 * 1024, (a.last_io_stats, one_column)
    assert a.last_io_stats["bytes_read"] < 0.2 * file_bytes
    # A narrow range of the sorted ship date: its zones only.
    duckdb.sql(
        "SELECT count(*) FROM a WHERE l_shipdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-10'"
    ).fetchall()
    assert a.last_io_stats["zones_skipped"] > 0
    assert a.last_io_stats["bytes_read"] < 0.05 * file_bytes, a.last_io_stats


@pytest.mark.parametrize("kind", ["file", "dataset"])
def test_polars_scans_equal_polars_over_the_table(lineitem, kind):
    a = lineitem[kind].arrow_dataset()
    frame = pl.from_arrow(LINEITEM)
    queries = [
        lambda f: f.filter(pl.col("l_quantity") < 24).select(pl.col("l_extendedprice").sum()),
        lambda f: (
            f.filter((pl.col("l_discount") >= 0.05) & (pl.col("l_discount") <= 0.07))
            .group_by("l_returnflag")
            .agg(pl.len(), pl.col("l_tax").mean())
            .sort("l_returnflag")
        ),
        lambda f: f.filter(pl.col("l_comment").str.starts_with("comment 9")).select("l_orderkey").head(50),
        lambda f: f.select("l_orderkey", "l_linestatus").head(10),
    ]
    for number, query in enumerate(queries):
        got = query(pl.scan_pyarrow_dataset(a)).collect()
        truth = query(frame.lazy()).collect()
        assert_frame_equal(got, truth, check_exact=False), number


def test_polars_pushes_projections_and_filters(lineitem):
    reader = lineitem["file"]
    a = reader.arrow_dataset()
    file_bytes = Path(reader.path).stat().st_size
    pl.scan_pyarrow_dataset(a).filter(pl.col("l_orderkey") < 500).select("l_tax").collect()
    assert a.last_io_stats["zones_skipped"] > 0
    assert a.last_io_stats["bytes_read"] < 0.05 * file_bytes, a.last_io_stats
