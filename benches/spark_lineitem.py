"""Spark reading and writing TPC-H lineitem as looseleaf (JVM connector and Python data source)
vs as Parquet, side by side in one run.

    pip install tpchgen-cli   # once; pyspark and pandas come with the package's test extra
    python3 benches/spark_lineitem.py --scale 0.1

Generates lineitem with ``tpchgen-cli``, has Spark write it both as Parquet and as looseleaf
(from the same DataFrame, so the same rows in the same number of files), then times, in
alternation, Spark reading each:

- ``scan``: every column of every row materialised (written to Spark's ``noop`` sink, so
  nothing is skipped the way ``count()`` would skip it);
- ``scan 3 columns``: three columns (the looseleaf ``columns`` option, Parquet's pruning);
- ``TPC-H Q1``: the pricing summary aggregation;
- ``TPC-H Q6``: a selective filter (one year of ship dates, a discount band) and a sum, over
  the copies above and over copies sorted by ``l_shipdate`` (looseleaf with 256 KiB pages,
  whose statistics let the JVM connector skip pages; Parquet with its defaults, whose row-group
  statistics Spark uses);
- ``count``: ``df.count()`` (Parquet answers it from its footers, the JVM connector from the
  files' row counts);
- ``count, filtered``: ``df.filter(...).count()`` with Q6's filter (the JVM connector has the
  core count the matching rows: Spark pushes the filter and the aggregate);
- ``write``: the Parquet copy read and written again in each format (the same read for all).

and prints the median of each with the ratio of each looseleaf path to Parquet (below 1:
looseleaf faster): warm (one session, after a warm-up run) and as the first query of a fresh
Spark driver process (``--fresh-runs``, the session started before the clock), which is what a
scheduled job or a notebook's first cell sees. DuckDB runs the queries it can answer the same
way (Q1, Q6 sorted and not, both counts) on the same Parquet files, its answers checked against
Spark's (``duckdb-parquet``; left out with ``--no-duckdb`` or when it is not installed): not a
Spark reader, but what a team could run those queries with instead.
Absolute times on shared machines are noisy; the ratio is the figure. Results also go to
``benches/results/spark_lineitem.json``.

What it measures is the whole path as users see it: looseleaf's JVM connector
(``looseleaf-jvm`` in the figures, ``format("looseleaf")`` in a configured session: DataSource V2
columnar batches over JNI, built by ``scripts/build_jvm.sh`` and added with
``looseleaf.spark.configure``; left out, and said so, when it is not built) and its Python data
source (``looseleaf-python``: planning in a Python worker, batches through Arrow into the JVM),
against Spark's vectorised Parquet reader and writer inside the JVM.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness import DATA, RESULTS, ROOT
from harness.data import generate_lineitem
from harness.timing import seconds

Q1 = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""

Q6 = """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.05 and 0.07 and l_quantity < 24
"""

PROJECTION = ["l_orderkey", "l_extendedprice", "l_shipdate"]

#: Q6's filter, alone.
Q6_FILTER = (
    "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'"
    " and l_discount between 0.05 and 0.07 and l_quantity < 24"
)


def start_spark(cores: str, jvm: bool):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("looseleaf-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "4")
    )
    if jvm:
        import looseleaf.spark

        builder = looseleaf.spark.configure(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


QUERIES = [
    "scan",
    f"scan {len(PROJECTION)} columns",
    "TPC-H Q1",
    "TPC-H Q6",
    "TPC-H Q6, sorted",
    "count",
    "count, filtered",
    "write",
]
#: The paths measured, by the label the figures use.
JVM, PYTHON = "looseleaf-jvm", "looseleaf-python"
DUCKDB = "duckdb-parquet"
#: The queries DuckDB answers as Spark does (the others are Spark's own sinks and writers).
DUCKDB_QUERIES = ("TPC-H Q1", "TPC-H Q6", "TPC-H Q6, sorted", "count", "count, filtered")


class DuckDbQueries:
    """The queries of :data:`DUCKDB_QUERIES` in DuckDB, over the Parquet copies in ``directory``."""

    def __init__(self, directory: Path, cores: str) -> None:
        import duckdb

        self.directory = directory
        self.connection = duckdb.connect()
        if cores != "*":
            self.connection.execute(f"set threads = {int(cores)}")

    def run(self, name: str) -> list[tuple]:
        suffix = "_sorted" if name.endswith("sorted") else ""
        files = str(self.directory / f"parquet{suffix}" / "*.parquet")
        table = f"read_parquet('{files}')"
        if name.startswith("count"):
            where = f" where {Q6_FILTER}" if name == "count, filtered" else ""
            return self.connection.execute(f"select count(*) from {table}{where}").fetchall()
        query = (Q1 if "Q1" in name else Q6).replace("from lineitem", f"from {table}")
        return self.connection.execute(query).fetchall()


def same_answer(name: str, spark_answer: Any, duckdb_answer: list[tuple]) -> bool:
    """Whether DuckDB's rows are Spark's: exact, but averages (a double in DuckDB, a decimal of
    6 places in Spark) to Spark's last place."""
    if name.startswith("count"):
        return duckdb_answer == [(spark_answer,)]
    if len(spark_answer) != len(duckdb_answer):
        return False
    for spark_row, duck_row in zip(spark_answer, duckdb_answer, strict=True):
        for field, a, b in zip(spark_row.__fields__, spark_row, duck_row, strict=True):
            if field.startswith("avg_"):
                # Spark's average is a decimal rounded to its scale: within a unit of that place.
                if abs(float(a) - float(b)) > 10.0 ** a.as_tuple().exponent:
                    return False
            elif a != b:
                return False
    return True


class Queries:
    """The measured queries over the copies in ``directory``, by name and format."""

    def __init__(self, spark, directory: Path) -> None:
        self.spark = spark
        self.directory = directory

    def source(self, fmt: str) -> str:
        """The data source name of a labelled path in this session."""
        import looseleaf.spark

        return looseleaf.spark.JVM_FORMAT if fmt == JVM else looseleaf.spark.python_format(self.spark)

    def reader(self, fmt: str, columns: list[str] | None = None, ordered: bool = False):
        suffix = "_sorted" if ordered else ""
        leaves = str(self.directory / f"looseleaf{suffix}")
        if fmt == PYTHON:
            # The Python data source API has no column pruning: the source's own option.
            options = {"columns": ",".join(columns)} if columns else {}
            return self.spark.read.format(self.source(fmt)).options(**options).load(leaves)
        if fmt == "parquet":
            frame = self.spark.read.parquet(str(self.directory / f"parquet{suffix}"))
        else:
            frame = self.spark.read.format(self.source(fmt)).load(leaves)
        return frame.select(*columns) if columns else frame

    def written(self, fmt: str) -> tuple:
        """Rows and a sum of what ``write`` wrote in ``fmt``, read back in that format."""
        out = str(self.directory / "written" / fmt)
        frame = (
            self.spark.read.parquet(out)
            if fmt == "parquet"
            else self.spark.read.format(self.source(fmt)).load(out)
        )
        return tuple(frame.selectExpr("count(*)", "sum(l_extendedprice)").collect()[0])

    def run(self, name: str, fmt: str):
        if name == "write":
            out = str(self.directory / "written" / fmt)
            writer = self.reader("parquet").write.mode("overwrite")
            return writer.parquet(out) if fmt == "parquet" else writer.format(self.source(fmt)).save(out)
        if name.startswith("scan"):
            columns = PROJECTION if name != "scan" else None
            return self.reader(fmt, columns).write.format("noop").mode("overwrite").save()
        if name == "count":
            return self.reader(fmt).count()
        if name == "count, filtered":
            return self.reader(fmt).filter(Q6_FILTER).count()
        self.reader(fmt, ordered=name.endswith("sorted")).createOrReplaceTempView("lineitem")
        return self.spark.sql(Q1 if "Q1" in name else Q6).collect()


def report(name: str, medians: dict[str, float]) -> dict[str, float]:
    """Prints a query's medians with each path's ratio to Spark's Parquet reader; returns them."""
    result = {f"{fmt}_s": m for fmt, m in medians.items()}
    line = f"  {name:<18} Parquet {medians['parquet'] * 1000:7.0f} ms"
    for fmt, median in medians.items():
        if fmt != "parquet":
            ratio = median / medians["parquet"]
            result[f"{fmt}_ratio"] = ratio
            line += f"   {fmt} {median * 1000:7.0f} ms ({ratio:4.2f}x)"
    print(line)
    return result


def worker(args, name: str, fmt: str) -> int:
    """Runs one query once in this fresh process (its session started before the clock) and
    prints the time it took."""
    if fmt == DUCKDB:
        queries = DuckDbQueries(args.dir, args.cores)
        print(json.dumps({"seconds": seconds(lambda: queries.run(name))}))
        return 0
    import looseleaf.spark

    spark = start_spark(args.cores, fmt == JVM)
    looseleaf.spark.register(spark)
    print(json.dumps({"seconds": seconds(lambda: Queries(spark, args.dir).run(name, fmt))}))
    spark.stop()
    return 0


def fresh_run(args, directory: Path, name: str, fmt: str) -> float:
    """The time of ``name`` as the first query of a new Spark driver process."""
    command = [
        sys.executable,
        __file__,
        "--worker",
        name,
        fmt,
        "--dir",
        str(directory),
        "--cores",
        args.cores,
    ]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["seconds"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each query (default 5)")
    parser.add_argument("--cores", default="*", help="Spark local cores (default: all)")
    parser.add_argument("--dir", type=Path, default=None, help="data directory (default benches/data/...)")
    parser.add_argument(
        "--fresh-runs", type=int, default=3, help="runs of each query in a fresh Spark session (default 3)"
    )
    parser.add_argument(
        "--queries",
        default=None,
        help="the queries to run, separated by ';' (default: all): " + "; ".join(QUERIES),
    )
    parser.add_argument("--no-python", action="store_true", help="leave the Python data source out")
    parser.add_argument("--no-duckdb", action="store_true", help="leave DuckDB on the Parquet copies out")
    parser.add_argument("--worker", nargs=2, metavar=("QUERY", "FORMAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args, *args.worker)

    import looseleaf.spark

    directory = args.dir or DATA / f"spark_lineitem_sf{args.scale:g}"
    source = generate_lineitem(args.scale, directory)
    try:
        looseleaf.spark.jar_path()
        jvm = True
    except FileNotFoundError as e:
        print(f"  the JVM connector is left out: {e}")
        jvm = False
    spark = start_spark(args.cores, jvm)
    looseleaf.spark.register(spark)
    formats = ["parquet", *([JVM] if jvm else []), *([] if args.no_python else [PYTHON])]
    selected = [q for q in QUERIES if args.queries is None or q in args.queries.split(";")]

    parquet_dir, leaf_dir = directory / "parquet", directory / "looseleaf"
    df = spark.read.parquet(str(source))
    files = max(1, spark.sparkContext.defaultParallelism)
    df = df.repartition(files) if df.rdd.getNumPartitions() != files else df
    print(f"lineitem SF {args.scale:g}: {df.count():,} rows, written by Spark as {files} files per format")
    df.write.mode("overwrite").parquet(str(parquet_dir))
    df.write.format("looseleaf").mode("overwrite").save(str(leaf_dir))
    sorted_page_size = "256k"
    sorted_parquet_dir, sorted_leaf_dir = directory / "parquet_sorted", directory / "looseleaf_sorted"
    ordered = df.orderBy("l_shipdate")
    ordered.write.mode("overwrite").parquet(str(sorted_parquet_dir))
    ordered.write.format("looseleaf").option("pageSize", sorted_page_size).mode("overwrite").save(
        str(sorted_leaf_dir)
    )
    sizes = {
        "parquet": sum(p.stat().st_size for p in parquet_dir.glob("*.parquet")),
        "looseleaf": sum(p.stat().st_size for p in leaf_dir.glob("*.leaf")),
    }
    mb = {fmt: f"{size / 1e6:.1f} MB" for fmt, size in sizes.items()}
    print(f"  on disk: Parquet (snappy) {mb['parquet']}, looseleaf {mb['looseleaf']}")

    queries = Queries(spark, directory)
    duck = None
    if not args.no_duckdb:
        try:
            duck = DuckDbQueries(directory, args.cores)
        except ImportError:
            print("  DuckDB is left out: it is not installed (pip install duckdb)")
    # Same answers first, then warm-up, then alternate the timed runs.
    for name in ("TPC-H Q1", "TPC-H Q6", "TPC-H Q6, sorted", "count", "count, filtered"):
        if name not in selected:
            continue
        answers = {fmt: queries.run(name, fmt) for fmt in formats}
        if any(answer != answers["parquet"] for answer in answers.values()):
            sys.exit(f"{name} differs between formats: {answers}")
        duck_answer = duck.run(name) if duck is not None else None
        if duck_answer is not None and not same_answer(name, answers["parquet"], duck_answer):
            sys.exit(f"{name}: DuckDB's answer {duck_answer} differs from Spark's {answers['parquet']}")
    if "write" in selected:
        for fmt in formats:
            queries.run("write", fmt)
        written = {fmt: queries.written(fmt) for fmt in formats}
        if any(w != written["parquet"] for w in written.values()):
            sys.exit(f"the writes differ between formats: {written}")

    def paths_of(name: str) -> list[str]:
        """The paths timed for query ``name``: the formats, and DuckDB where it answers it."""
        return [*formats, *([DUCKDB] if duck is not None and name in DUCKDB_QUERIES else [])]

    results = {}
    print("  warm (one session, after a warm-up run):")
    for name in selected:
        paths = paths_of(name)

        def run(fmt: str, name: str = name) -> object:
            return duck.run(name) if fmt == DUCKDB else queries.run(name, fmt)

        times: dict[str, list[float]] = {fmt: [] for fmt in paths}
        for fmt in times:
            run(fmt)  # warm-up
        for _ in range(args.runs):
            for fmt in times:
                times[fmt].append(seconds(lambda fmt=fmt: run(fmt)))
        medians = {fmt: statistics.median(t) for fmt, t in times.items()}
        results[name] = report(name, medians)
    spark.stop()

    if args.fresh_runs:
        print(f"  first query of a fresh session (a new Spark driver per run, median of {args.fresh_runs}):")
    for name in selected if args.fresh_runs else ():
        paths = paths_of(name)
        medians = {}
        for fmt in paths:
            samples = [fresh_run(args, directory, name, fmt) for _ in range(args.fresh_runs)]
            medians[fmt] = statistics.median(samples)
        results[f"{name}, fresh"] = report(name, medians)

    out = RESULTS / "spark_lineitem.json"
    out.parent.mkdir(exist_ok=True)
    record = {
        "scale": args.scale,
        "cores": args.cores,
        "runs": args.runs,
        "fresh_runs": args.fresh_runs,
        "bytes": sizes,
        "results": results,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"  (results in {out.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
