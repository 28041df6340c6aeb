"""Datasets of many files side by side: ``looseleaf.dataset`` and ``pyarrow.dataset`` (Parquet) on
the same Hive-partitioned layout of TPC-H lineitem.

    python3 benches/datasets.py                 # lineitem SF1, 3 fresh processes per measure
    python3 benches/datasets.py --quick         # SF 0.01, 1 run (CI smoke test: fails on a wrong answer)

Layout: lineitem partitioned by ``l_returnflag``/``l_linestatus`` (4 directories of the 6 pairs)
with at most ``--rows-per-file`` rows per file, written by each library's own dataset writer
(``looseleaf.write_dataset(table, dir, partitioning=[...], max_rows_per_file=N)``;
``pyarrow.dataset.write_dataset(table, dir, format="parquet", partitioning=[...],
partitioning_flavor="hive", max_rows_per_file=N, max_rows_per_group=N)``), each read back with its
``dataset(dir)`` (Hive partitioning).

Queries: ``full scan``; ``2 columns`` (l_quantity, l_shipdate); ``partition filter``
(``l_returnflag == "R"``: whole files pruned by their directory); ``partition + column filter``
(``l_returnflag == "R"`` and ``l_quantity < 5``); ``count``; ``take 1000`` (random rows by their
number across files; pyarrow: ``Dataset.take``).

Measures, each in a **fresh process** (imports done before the clock, files in the page cache):
``first read`` (open + read, the process's first read) and ``warm`` (the median of 5 more in that
process); medians over ``--repeats`` processes. Every result is checked against the other
library's (row counts, and equal tables once sorted): a wrong answer fails the run.
"""

from __future__ import annotations

import argparse
import decimal
import hashlib
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

from harness import DATA, RESULTS, fresh_process, page_cache
from harness.data import lineitem
from harness.timing import median_or_none, repeated, timed

PARTITIONING = ["l_returnflag", "l_linestatus"]
SYSTEMS = ["looseleaf", "pyarrow"]
QUERIES = ["full scan", "2 columns", "partition filter", "partition + column filter", "count", "take 1000"]
WARM_REPEATS = 5


def write(system: str, table: Any, path: Path, rows_per_file: int) -> None:
    if system == "looseleaf":
        import looseleaf

        looseleaf.write_dataset(table, path, partitioning=PARTITIONING, max_rows_per_file=rows_per_file)
    else:
        import pyarrow.dataset as pads

        pads.write_dataset(
            table,
            path,
            format="parquet",
            partitioning=PARTITIONING,
            partitioning_flavor="hive",
            max_rows_per_file=rows_per_file,
            max_rows_per_group=rows_per_file,
        )


def run_query(system: str, path: str, query: str, indices: list[int]) -> Any:
    """One query, open included; returns a table or a count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if system == "looseleaf":
        import looseleaf

        ds = looseleaf.dataset(path)
    else:
        import pyarrow.dataset as pads

        ds = pads.dataset(path, format="parquet", partitioning="hive")
    returnflag = pc.field("l_returnflag") == "R"
    if query == "full scan":
        return ds.to_table()
    if query == "2 columns":
        return ds.to_table(columns=["l_quantity", "l_shipdate"])
    if query == "partition filter":
        return ds.to_table(filter=returnflag)
    if query == "partition + column filter":
        # The literal in the column's type: pyarrow cannot compare decimal(15, 2) with an integer.
        five = pa.scalar(decimal.Decimal(5), ds.schema.field("l_quantity").type)
        return ds.to_table(
            columns=["l_orderkey", "l_quantity"], filter=returnflag & (pc.field("l_quantity") < five)
        )
    if query == "count":
        return ds.count_rows()
    if query == "take 1000":
        return ds.take(pa.array(indices, pa.int64()))
    raise ValueError(query)


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.compute as pc

    # Before the clock: the queries' expressions are the user's, and pyarrow's first conversion of
    # a Python value imports pandas (about 0.17 s), whichever library then reads.
    _ = pc.field("l_returnflag") == "R"

    if spec["system"] == "looseleaf":
        import looseleaf  # noqa: F401
    else:
        import pyarrow.dataset  # noqa: F401
    args = (spec["system"], spec["path"], spec["query"], spec["indices"])
    result, first = timed(lambda: run_query(*args))
    warm = repeated(lambda: run_query(*args), spec["warm"])
    rows = result if isinstance(result, int) else result.num_rows
    digest = None
    if not isinstance(result, int) and spec["query"] != "take 1000":
        # Order across files differs between the two: compare sorted contents.
        table = result.select(sorted(result.column_names))
        keys = [(n, "ascending") for n in table.column_names]
        text = str(table.sort_by(keys).slice(0, 50).to_pylist()).encode()
        digest = hashlib.sha256(text).hexdigest()
    elif spec["query"] == "take 1000":
        digest = rows
    return {"first": first, "warm": median_or_none(warm), "rows": rows, "digest": digest}


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    result = fresh_process.run(__file__, spec)
    if "error" in result:
        sys.exit(f"worker failed ({spec['system']}, {spec['query']}): {result['error']}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="SF 0.01, one run (a smoke test)")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rows-per-file", type=int, default=150_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fresh_process.serve(worker)
        return 0
    if args.quick:
        args.scale, args.repeats, args.rows_per_file = 0.01, 1, 5_000
    table = lineitem(args.scale, args.data)
    base = args.data / f"datasets_sf{args.scale:g}_{args.rows_per_file}"
    paths = {}
    for system in SYSTEMS:
        paths[system] = base / system
        if not paths[system].exists():
            partial = base / f"{system}.partial"
            write(system, table, partial, args.rows_per_file)
            partial.rename(paths[system])
    for path in paths.values():
        page_cache.warm(path)
    indices = random.Random(7).sample(range(table.num_rows), min(1000, table.num_rows))
    results: dict[str, dict[str, Any]] = {}
    for query in QUERIES:
        results[query] = {}
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SYSTEMS}
        for _ in range(args.repeats):
            for system in SYSTEMS:
                spec = {"system": system, "path": str(paths[system]), "query": query, "indices": indices}
                runs[system].append(run_worker({**spec, "warm": 0 if args.quick else WARM_REPEATS}))
        for system, measured in runs.items():
            results[query][system] = {
                "first": statistics.median(r["first"] for r in measured),
                "warm": None if args.quick else statistics.median(r["warm"] for r in measured),
                "rows": measured[0]["rows"],
                "digest": measured[0]["digest"],
            }
        ours, theirs = results[query]["looseleaf"], results[query]["pyarrow"]
        if (ours["rows"], ours["digest"]) != (theirs["rows"], theirs["digest"]):
            sys.exit(f"{query}: looseleaf and pyarrow.dataset disagree: {ours} vs {theirs}")
    files = {s: sum(1 for f in paths[s].rglob("*") if f.is_file()) for s in SYSTEMS}
    lines = [
        f"lineitem SF{args.scale:g}, {table.num_rows:,} rows; files: looseleaf {files['looseleaf']}, "
        f"parquet {files['pyarrow']}; medians of {args.repeats} fresh processes",
        "",
        "| query | rows | looseleaf first | pyarrow first | ratio | looseleaf warm | pyarrow warm | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for query, r in results.items():
        a, b = r["looseleaf"], r["pyarrow"]
        warm = (
            f"{a['warm'] * 1e3:.1f} ms | {b['warm'] * 1e3:.1f} ms | {b['warm'] / a['warm']:.2f}x"
            if a["warm"]
            else "- | - | -"
        )
        lines.append(
            f"| {query} | {a['rows']:,} | {a['first'] * 1e3:.1f} ms | {b['first'] * 1e3:.1f} ms | "
            f"{b['first'] / a['first']:.2f}x | {warm} |"
        )
    report = "\n".join(lines)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    (args.out / f"datasets{suffix}.json").write_text(json.dumps(results, indent=1))
    (args.out / f"datasets{suffix}.md").write_text(report + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
