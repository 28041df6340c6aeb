"""A PySpark pipeline over looseleaf: TPC-H lineitem in, an aggregation out, checked against
Spark's own Parquet path.

    pip install . tpchgen-cli 'pyspark>=4' 'pandas>=2.2,<3'   # Java 17 must be installed
    python3 examples/spark_lineitem.py --scale 0.1

1. ``tpchgen-cli`` generates lineitem as Parquet;
2. Spark reads it and writes it as a looseleaf dataset (one ``.leaf`` file per task, committed
   with the job) and, for comparison, as Parquet;
3. Spark reads both back and runs TPC-H Q1 on each; the answers must be identical;
4. a narrow read with the ``columns`` option, and the same rows through the ``mapInArrow``
   helpers (explicit ``(path, start, count)`` ranges), give the same revenue figure.

Not part of the test suite (it needs tpchgen-cli and takes a minute); benches/spark_lineitem.py
times the same reads.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

Q1 = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty,
       avg(l_extendedprice) as avg_price,
       avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""


def generate_lineitem(scale: float, directory: Path) -> Path:
    cli = shutil.which("tpchgen-cli")
    if cli is None:
        sys.exit("this example needs tpchgen-cli: pip install tpchgen-cli")
    subprocess.run(
        [cli, "parquet", "-s", str(scale), "--tables", "lineitem", "--output-dir", str(directory), "-q"],
        check=True,
    )
    return directory / "lineitem.parquet"


def spark_session():
    # Workers must run this Python (the one with looseleaf installed), on the loopback address.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[*]")
        .appName("looseleaf-example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    parser = argparse.ArgumentParser(description="TPC-H lineitem through Spark as looseleaf")
    parser.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    parser.add_argument("--dir", type=Path, default=None, help="working directory (default: a temporary one)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    import looseleaf.spark

    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        source = generate_lineitem(args.scale, work)
        print(f"1. tpchgen-cli wrote {source} in {time.perf_counter() - started:.1f} s")

        spark = spark_session()
        looseleaf.spark.register(spark)
        lineitem = spark.read.parquet(str(source))

        leaf_dir, parquet_dir = work / "lineitem_leaf", work / "lineitem_parquet"
        started = time.perf_counter()
        lineitem.write.format("looseleaf").mode("overwrite").save(str(leaf_dir))
        files = sorted(p.name for p in leaf_dir.iterdir())
        seconds = time.perf_counter() - started
        print(f"2. Spark wrote {len(files) - 1} looseleaf files in {seconds:.1f} s: {files}")
        lineitem.write.mode("overwrite").parquet(str(parquet_dir))

        answers = {}
        for name, frame in [
            ("looseleaf", spark.read.format("looseleaf").load(str(leaf_dir))),
            ("parquet", spark.read.parquet(str(parquet_dir))),
        ]:
            frame.createOrReplaceTempView("lineitem")
            started = time.perf_counter()
            answers[name] = spark.sql(Q1).collect()
            seconds = time.perf_counter() - started
            groups = len(answers[name])
            print(f"3. Q1 over {name}: {groups} groups in {seconds:.2f} s (a first run: warm-up included)")
        if answers["looseleaf"] != answers["parquet"]:
            print("   the answers differ!", answers, file=sys.stderr)
            return 1
        for row in answers["looseleaf"]:
            group = f"{row.l_returnflag} {row.l_linestatus}"
            print(f"   {group}  {row.count_order:>9,} rows  charge {row.sum_charge:,.2f}")
        print("   looseleaf and Parquet give the same answer")

        # A narrow read: only two columns are read from the files.
        narrow = (
            spark.read.format("looseleaf").option("columns", "l_extendedprice,l_discount").load(str(leaf_dir))
        )
        revenue = narrow.agg(F.sum(F.col("l_extendedprice") * F.col("l_discount"))).first()[0]
        # The same columns through mapInArrow, over explicit (path, start, count) row ranges.
        schema = looseleaf.spark.schema_of(str(leaf_dir), columns="l_extendedprice,l_discount")
        ranges = spark.createDataFrame(
            looseleaf.spark.list_ranges(str(leaf_dir)), looseleaf.spark.RANGE_SCHEMA
        )
        mapped = ranges.mapInArrow(looseleaf.spark.read_ranges(schema), schema)
        revenue_mapped = mapped.agg(F.sum(F.col("l_extendedprice") * F.col("l_discount"))).first()[0]
        print(f"4. revenue (columns option) {revenue:,.2f}; through mapInArrow {revenue_mapped:,.2f}")
        spark.stop()
        return 0 if revenue == revenue_mapped else 1


if __name__ == "__main__":
    sys.exit(main())
