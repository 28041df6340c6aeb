"""looseleaf.scan_polars: a Polars IO source with projections, filters, row limits and batch sizes
pushed into looseleaf. Truth is Polars itself over the same table in memory."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from polars.testing import assert_frame_equal

import looseleaf
from looseleaf.polars_scan import to_arrow_filter
from test_arrow_dataset import LINEITEM, TABLE, random_filter

#: Predicates translated into pyarrow (and then, mostly, into looseleaf), with nulls in play.
TRANSLATED = [
    pl.col("id") < 12_000,
    18_000 <= pl.col("id"),  # noqa: SIM300 (the constant first: its sides are swapped)
    pl.col("i") >= 10,
    pl.col("i") == 3.0,
    pl.col("f") > 0.5,
    pl.col("s") == "name 7",
    pl.col("s") != "name 8",
    pl.col("i").is_in([1, 2, 3, -7]),
    pl.col("b") == True,  # noqa: E712 (a comparison, as a user writes it)
    pl.col("s").is_null(),
    pl.col("f").is_not_null(),
    pl.col("id").is_between(5_000, 9_000, closed="left"),
    pl.col("k").cast(pl.Int64) == 2,  # a cast of the column: not translated, applied by Polars
]
#: Predicates with no translation (functions, arithmetic, comparisons of two columns).
UNTRANSLATED = [
    pl.col("s").str.starts_with("name 1"),
    pl.col("i") * 2 > pl.col("k"),
    pl.col("f") > pl.col("i"),
    pl.col("f").abs() < 0.3,
    pl.col("i") < 2.5,  # 2.5 is no int32: Polars compares as floats
]


def _random_predicate(rng: random.Random) -> pl.Expr:
    return random_filter(rng, TRANSLATED + UNTRANSLATED)


@pytest.fixture(scope="module", params=["file", "dataset"])
def readable(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp("polars_scan")
    if request.param == "file":
        path = directory / "table.leaf"
        looseleaf.write_table(TABLE, path, page_size=32 * 1024)
        return looseleaf.open(path)
    looseleaf.write_dataset(TABLE, directory / "ds", max_rows_per_file=11_000, page_size=32 * 1024)
    return looseleaf.dataset(directory / "ds")


def test_random_queries_give_polars_answer(readable):
    rng = random.Random(17)
    frame = pl.from_arrow(TABLE).lazy()
    scan = looseleaf.scan_polars(readable.arrow_dataset(batch_size=4_096))
    names = TABLE.column_names
    for case in range(40):
        predicate = _random_predicate(rng)
        columns = rng.sample(names, rng.randrange(1, len(names) + 1))
        limit = rng.choice([None, 0, 1, 37, 5_000])

        def query(f: pl.LazyFrame) -> pl.LazyFrame:
            f = f.filter(predicate).select(columns)  # noqa: B023 (used at once)
            return f if limit is None else f.head(limit)  # noqa: B023

        what = f"case {case}: {columns} where {predicate} limit {limit}"
        got, truth = query(scan).collect(), query(frame).collect()
        assert_frame_equal(got, truth, check_exact=True), what


def test_translation_keeps_every_row_polars_keeps():
    """Any predicate's translation keeps a superset of its rows, and a predicate of translated
    parts only is translated whole: the rows it keeps are exactly Polars'."""
    rng = random.Random(5)
    frame = pl.from_arrow(TABLE)
    for case in range(200):
        predicate = _random_predicate(rng)
        kept = frame.with_row_index("row").filter(predicate)["row"].to_list()
        translated = to_arrow_filter(predicate, TABLE.schema)
        if translated is None:
            continue
        by_arrow = TABLE.append_column("row", pa.array(range(TABLE.num_rows), pa.uint32())).filter(translated)
        assert set(kept) <= set(by_arrow["row"].to_pylist()), f"case {case}: {predicate}"
    for predicate in TRANSLATED[:-1]:
        translated = to_arrow_filter(predicate, TABLE.schema)
        assert translated is not None, predicate
        truth = frame.filter(predicate)
        assert_frame_equal(pl.from_arrow(TABLE.filter(translated)), truth), predicate
    for predicate in [*UNTRANSLATED, TRANSLATED[-1]]:
        assert to_arrow_filter(predicate, TABLE.schema) is None, predicate


def test_translations():
    schema = TABLE.schema
    swapped = 3 > pl.col("f")  # noqa: SIM300 (the constant first: its sides are swapped)
    assert to_arrow_filter((pl.col("i") > 3) & swapped, schema).equals(
        (pc.field("i") > pa.scalar(3, pa.int32())) & (pc.field("f") < pa.scalar(3.0))
    )
    # The translated conjuncts of a chain whose others have no translation.
    mixed = (pl.col("id") < 10) & pl.col("s").str.contains("x") & pl.col("s").is_null()
    assert to_arrow_filter(mixed, schema).equals((pc.field("id") < pa.scalar(10)) & pc.field("s").is_null())
    # An or needs both sides; a column the schema lacks is not translated.
    assert to_arrow_filter((pl.col("id") < 10) | pl.col("s").str.contains("x"), schema) is None
    assert to_arrow_filter(pl.col("missing") < 10, schema) is None
    # A value that is not exactly of the column's type.
    assert to_arrow_filter(pl.col("i") < 2**40, schema) is None
    assert to_arrow_filter(pl.col("s") == 3, schema) is None
    assert to_arrow_filter(pl.col("i").is_in([1, None]), schema) is None


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    directory = tmp_path_factory.mktemp("polars_lineitem")
    looseleaf.write_table(LINEITEM, directory / "lineitem.leaf", page_size=64 * 1024)
    looseleaf.write_dataset(LINEITEM, directory / "ds", max_rows_per_file=60_000, page_size=64 * 1024)
    return {
        "file": looseleaf.open(directory / "lineitem.leaf"),
        "dataset": directory / "ds",
    }


def q1(f: pl.LazyFrame) -> pl.LazyFrame:
    import datetime

    price = pl.col("l_extendedprice")
    disc_price = price * (1 - pl.col("l_discount"))
    return (
        f.filter(pl.col("l_shipdate") <= datetime.date(1998, 9, 2))
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            price.sum().alias("sum_base_price"),
            disc_price.sum().alias("sum_disc_price"),
            (disc_price * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def q6(f: pl.LazyFrame) -> pl.LazyFrame:
    import datetime

    return f.filter(
        pl.col("l_shipdate").is_between(datetime.date(1994, 1, 1), datetime.date(1995, 1, 1), closed="left")
        & pl.col("l_discount").is_between(0.05, 0.07)
        & (pl.col("l_quantity") < 24)
    ).select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue"))


@pytest.mark.parametrize("kind", ["file", "dataset"])
def test_q1_and_q6_equal_polars_over_the_table(lineitem, kind):
    frame = pl.from_arrow(LINEITEM).lazy()
    scan = looseleaf.scan_polars(lineitem[kind])
    for query in (q1, q6):
        got, truth = query(scan).collect(), query(frame).collect()
        assert got.height > 0
        assert_frame_equal(got, truth, check_exact=False, rel_tol=1e-9), query.__name__


def test_pushdown_shows_in_the_io_counters(lineitem):
    reader = lineitem["file"]
    a = reader.arrow_dataset()
    scan = looseleaf.scan_polars(a)
    file_bytes = Path(reader.path).stat().st_size
    # A filter on the sorted key: its zones only.
    got = scan.filter(pl.col("l_orderkey") < 500).select("l_tax").collect()
    assert got.height == 2_000
    assert a.last_io_stats["zones_skipped"] > 0
    assert a.last_io_stats["bytes_read"] < 0.05 * file_bytes, a.last_io_stats
    # One column: its bytes.
    scan.select(pl.col("l_tax").sum()).collect()
    one_column = reader.plan(columns=["l_tax"])["bytes"]
    assert a.last_io_stats["bytes_read"] <= one_column * 1.1 + 64 * 1024, (a.last_io_stats, one_column)
    # A limit: its rows.
    assert scan.head(10).collect().height == 10
    assert a.last_io_stats["bytes_read"] < 0.05 * file_bytes, a.last_io_stats
    # Q6: the ship date's zones.
    q6(scan).collect()
    assert a.last_io_stats["zones_skipped"] > 0


def test_batch_size_and_bad_sources(lineitem):
    a = lineitem["file"].arrow_dataset()
    frames = list(looseleaf.polars_scan._scan(a, ["l_tax"], None, None, 1_000))
    assert frames
    assert all(f.height <= 1_000 for f in frames)
    assert sum(f.height for f in frames) == LINEITEM.num_rows
    with pytest.raises(looseleaf.InvalidArgumentError, match="source must be"):
        looseleaf.scan_polars(42)
    with pytest.raises(looseleaf.InvalidArgumentError, match="options"):
        looseleaf.scan_polars(a, batch_size=5)
