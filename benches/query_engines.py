"""TPC-H Q1 and Q6 through DuckDB and Polars, over looseleaf (``arrow_dataset()``), Parquet and,
where ``pylance`` is installed, Lance: the same queries on the same lineitem, each engine's own
way in to each format.

    pip install duckdb polars pylance   # pylance optional
    python3 benches/query_engines.py                 # lineitem SF1, 5 runs
    python3 benches/query_engines.py --scale 0.1 --runs 3

Ways in:

- DuckDB: ``FROM a`` of ``a = looseleaf.open(path).arrow_dataset()`` (its replacement scan of a
  pyarrow dataset: projection and filter pushed into looseleaf); ``FROM read_parquet(path)``
  (DuckDB's own Parquet reader); ``FROM l`` of ``l = lance.dataset(path)`` (Lance's dataset, a
  pyarrow dataset too).
- Polars: ``pl.scan_pyarrow_dataset(a)``; ``looseleaf.scan_polars(path)`` (format
  ``scan_polars``: Polars' IO-source interface, its predicates translated by looseleaf);
  ``pl.scan_parquet(path)`` (Polars' own reader); ``pl.scan_pyarrow_dataset(lance.dataset(path))``.

Each query runs ``--runs`` times in this process, the engines and formats interleaved; reported:
the first run (files in the page cache, the format's objects opened before the clock) and the
median of the others, and looseleaf's ratio (the other's time over looseleaf's: above 1, looseleaf
ahead). Results are checked equal across formats. In-process figures: a fresh-process comparison
is ``benches/filters.py``'s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow.parquet as pq

import looseleaf
from harness.data import generate_lineitem, lineitem

DATA = Path(__file__).resolve().parent / "data"

Q1 = """
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM {t} WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
"""
Q6 = """
SELECT sum(l_extendedprice * l_discount) AS revenue FROM {t}
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount >= 0.05 AND l_discount <= 0.07 AND l_quantity < 24
"""


def polars_q1(frame: pl.LazyFrame) -> pl.LazyFrame:
    import datetime

    price = pl.col("l_extendedprice")
    disc_price = price * (1 - pl.col("l_discount"))
    return (
        frame.filter(pl.col("l_shipdate") <= datetime.date(1998, 9, 2))
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            price.sum().alias("sum_base_price"),
            disc_price.sum().alias("sum_disc_price"),
            (disc_price * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            price.mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def polars_q6(frame: pl.LazyFrame) -> pl.LazyFrame:
    import datetime

    return frame.filter(
        (pl.col("l_shipdate") >= datetime.date(1994, 1, 1))
        & (pl.col("l_shipdate") < datetime.date(1995, 1, 1))
        & (pl.col("l_discount") >= 0.05)
        & (pl.col("l_discount") <= 0.07)
        & (pl.col("l_quantity") < 24)
    ).select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue"))


def files(scale: float, data: Path) -> dict[str, Path]:
    """lineitem as Parquet (the generator's), looseleaf and, if pylance is installed, Lance, with
    decimals as doubles (so that every engine and format computes alike)."""
    directory = data / f"tpch_sf{scale:g}"
    out = {"parquet": directory / "lineitem_f64.parquet", "looseleaf": directory / "lineitem_f64.leaf"}
    if not all(p.exists() for p in out.values()):
        generate_lineitem(scale, directory)
        table = lineitem(scale, data)
        import pyarrow as pa

        table = table.cast(
            pa.schema(
                [
                    pa.field(f.name, pa.float64() if pa.types.is_decimal(f.type) else f.type)
                    for f in table.schema
                ]
            )
        )
        pq.write_table(table, out["parquet"])
        looseleaf.write_table(table, out["looseleaf"])
    try:
        import lance
    except ImportError:
        return out
    out["lance"] = directory / "lineitem_f64.lance"
    if not out["lance"].exists():
        lance.write_dataset(pq.read_table(out["parquet"]), out["lance"])
    return out


def runners(paths: dict[str, Path]) -> dict[tuple[str, str, str], Callable[[], Any]]:
    """(engine, query, format) -> a run returning the result rows."""
    a = looseleaf.open(paths["looseleaf"]).arrow_dataset()
    sources: dict[str, Any] = {"looseleaf": a}
    if "lance" in paths:
        import lance

        sources["lance"] = lance.dataset(paths["lance"])
    out: dict[tuple[str, str, str], Callable[[], Any]] = {}
    connection = duckdb.connect()
    for name, query in (("Q1", Q1), ("Q6", Q6)):
        for fmt, source in sources.items():
            connection.register(f"t_{fmt}", source)
            out["duckdb", name, fmt] = lambda q=query, f=fmt: connection.sql(q.format(t=f"t_{f}")).fetchall()
        parquet = f"read_parquet('{paths['parquet']}')"
        out["duckdb", name, "parquet"] = lambda q=query, p=parquet: connection.sql(q.format(t=p)).fetchall()
    for name, query in (("Q1", polars_q1), ("Q6", polars_q6)):
        for fmt, source in sources.items():
            out["polars", name, fmt] = lambda q=query, s=source: (
                q(pl.scan_pyarrow_dataset(s)).collect().rows()
            )
        out["polars", name, "scan_polars"] = lambda q=query: (
            q(looseleaf.scan_polars(paths["looseleaf"])).collect().rows()
        )
        out["polars", name, "parquet"] = lambda q=query: q(pl.scan_parquet(paths["parquet"])).collect().rows()
    return out


def close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    paths = files(args.scale, args.data)
    for path in paths.values():  # into the page cache
        for file in [path] if path.is_file() else path.rglob("*"):
            if file.is_file():
                file.read_bytes()
    runs = runners(paths)
    times: dict[tuple[str, str, str], list[float]] = {key: [] for key in runs}
    results: dict[tuple[str, str, str], Any] = {}
    for _ in range(args.runs):
        for key, run in runs.items():
            started = time.perf_counter()
            results[key] = run()
            times[key].append(time.perf_counter() - started)
    for engine, query, fmt in runs:
        if not close(results[engine, query, fmt], results[engine, query, "parquet"]):
            print(f"{engine} {query}: {fmt} differs from parquet", file=sys.stderr)
            return 1
    print(
        f"lineitem SF{args.scale:g}, {args.runs} runs; ratio = other / looseleaf (above 1: looseleaf ahead)"
    )
    print(f"{'engine':8} {'query':5} {'format':12} {'first s':>8} {'median s':>9} {'ratio':>6}")
    for engine, query, fmt in runs:
        first, rest = times[engine, query, fmt][0], times[engine, query, fmt][1:] or times[engine, query, fmt]
        median = statistics.median(rest)
        ours = statistics.median(times[engine, query, "looseleaf"][1:] or times[engine, query, "looseleaf"])
        print(f"{engine:8} {query:5} {fmt:12} {first:8.3f} {median:9.3f} {median / ours:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
