"""Filtered reads side by side (issue 16): looseleaf, Parquet (pyarrow.dataset), DuckDB on the same
Parquet file, a Lance dataset and Vortex, on TPC-H lineitem as generated and sorted by l_shipdate.

    pip install duckdb               # once, next to compare.py's tpchgen-cli, pylance and vortex-data
    python3 benches/filters.py                     # lineitem SF1, 3 runs, ~10-15 min on 2 cores
    python3 benches/filters.py --quick             # SF 0.01, 1 run, < 1 min (CI smoke test)
    python3 benches/filters.py --scale 0.1 --zone-map-rows 4096 --systems looseleaf,vortex

Data: lineitem from ``tpchgen-cli`` (compare.py's generation and cache, ``--data``), in two
variants: ``generated`` (the generator's order, by l_orderkey: ship dates are spread over every
part of the file) and ``sorted`` (by l_shipdate). Each system writes its own file of each variant
at its defaults:

- looseleaf: ``looseleaf.write_table(table, path)`` (``zone_map_rows=`` passed through when
  ``--zone-map-rows`` is given);
- parquet: ``pyarrow.parquet.write_table(table, path, write_statistics=True,
  write_page_index=True)``, default row groups; read by ``pyarrow.dataset`` and by DuckDB;
- lance: a dataset, ``lance.write_dataset(table, path)`` (its default file format);
- vortex: ``vortex.io.write(table, path)``.

Queries (every read returns an Arrow table; the filter columns need not be returned):

- ``q6``: TPC-H Q6's predicate, ``l_shipdate >= 1994-01-01 and l_shipdate < 1995-01-01 and
  l_discount between 0.05 and 0.07 and l_quantity < 24`` (the between as ``>=`` and ``<=``),
  returning l_extendedprice, l_discount;
- ``shipdate <share>``: ``l_shipdate >= lo and l_shipdate < hi``, the bounds taken from the
  column's quantiles around its median so that the range holds 0.1%, 1%, 10% and 50% of the rows
  (dates are whole days, so the share is approximate: the measured share is reported), returning
  l_orderkey, l_extendedprice, l_comment.

How each system is asked (the pushdown each one offers, at its defaults):

- looseleaf: ``looseleaf.open(path).to_table(columns=..., filter=<pyarrow.compute.Expression>)``;
- parquet: ``pyarrow.dataset.dataset(path).to_table(columns=..., filter=<Expression>)`` (row
  groups pruned by their statistics; the page index is written but pyarrow reads whole column
  chunks of the row groups kept, whatever the share: see the bytes read);
- duckdb: ``duckdb.connect().sql("SELECT ... FROM read_parquet(path) WHERE ...").to_arrow_table()``
  (row groups pruned by their statistics, and on sorted data it reads much less than whole row
  groups: see the bytes read; the connection is made in the timed first read, then reused by the
  warm-process reads);
- lance: ``lance.dataset(path).to_table(columns=..., filter="<SQL>")`` (the filter columns are
  scanned, the other columns taken for the matching rows; no scalar index is built);
- vortex: ``vortex.open(path).to_arrow(columns, expr=<vortex.expr>).read_all()`` (zone maps of its
  default layout), the literals typed as the columns (``vortex.expr.literal(dtype, value)``);
- ``looseleaf scan+filter`` (the baseline, not a peer): ``looseleaf.open(path).to_table(columns=
  returned + filter columns)`` and then ``Table.filter(<Expression>)``.

Every literal has the column's own type (date32, decimal128(15, 2)), so no system casts a column.

Measures, each in a **fresh process** (this script with ``--worker``; the spec on stdin, the result
as JSON on stdout), imports done before the clock, the system's files in the page cache (read whole
just before), nothing else read by the library before:

- ``first read``: open + filtered read, the first read of the process;
- ``warm process``: the median of ``--warm-repeats`` more runs of the same read (open included)
  in that process;
- ``bytes read``: what the first read asked of its files (``rchar`` of /proc/self/io), the
  evidence of each system's pushdown next to its file size.

Each is run ``--repeats`` times (the systems interleaved) and the median reported. Every result is
checked against pyarrow's ``Table.filter`` of the data in memory (row count and a sum per returned
column, Q6's revenue ``sum(l_extendedprice * l_discount)``); a wrong answer is flagged. A system
that fails is reported as ``error: <message>`` and the run goes on. Ratios are "looseleaf
advantage": best peer time / looseleaf time (above 1: looseleaf is faster).

Targets (issue 16): at 1% of rows or fewer on sorted data, looseleaf ≥ 2x the best peer; at 50%,
never slower than looseleaf's own full scan + filter; zone maps cost < 1% of the file (looseleaf
written with ``zone_map_rows=0`` against the default or ``--zone-map-rows``; "n/a" if the writer
does not take the option). After the timings, each system's pushdown on the most selective range
query, as the system reports it (row groups read, rows scanned per stage, looseleaf's plan).

Output: a markdown report on stdout (progress on stderr) and ``<out>/filters-<date>.json``
(``filters-<date>-quick.json`` with ``--quick``). Absolute numbers on a shared machine are noisy:
compare systems within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import DATA, RESULTS, build, fresh_process, machine, page_cache
from harness.data import lineitem
from harness.formats import path_size
from harness.report import first_line, fmt_seconds, target, targets_section
from harness.systems import detect
from harness.timing import median_or_none, repeated, timed

#: The systems measured; ``scan_filter`` is looseleaf's unfiltered read filtered afterwards (the
#: baseline of the 50% target), not a peer.
SYSTEMS = ["looseleaf", "parquet", "duckdb", "lance", "vortex", "scan_filter"]
PEERS = ["parquet", "duckdb", "lance", "vortex"]
LABELS = {
    "looseleaf": "looseleaf",
    "parquet": "parquet",
    "duckdb": "duckdb",
    "lance": "lance",
    "vortex": "vortex",
    "scan_filter": "looseleaf scan+filter",
}
#: The file each system reads (DuckDB reads Parquet's file).
FILE_OF = {
    "looseleaf": "looseleaf",
    "parquet": "parquet",
    "duckdb": "parquet",
    "lance": "lance",
    "vortex": "vortex",
    "scan_filter": "looseleaf",
}
#: What each system imports to be usable here (the first module names its version).
NEEDS = {
    "looseleaf": ("looseleaf",),
    "parquet": ("pyarrow",),
    "duckdb": ("duckdb",),
    "lance": ("lance",),
    "vortex": ("vortex",),
    "scan_filter": ("looseleaf",),
}
#: How each system is asked, for the report (the code is ``Reader.read``).
HOW = {
    "looseleaf": "`looseleaf.open(path).to_table(columns=..., filter=<pyarrow.compute.Expression>)`",
    "parquet": "`pyarrow.dataset.dataset(path, format='parquet').to_table(columns=..., "
    "filter=<Expression>)`: row groups pruned by their statistics; no page-level pruning (whole column "
    "chunks read, whatever the share: see the bytes read)",
    "duckdb": '`duckdb.connect().sql("SELECT ... FROM read_parquet(path) WHERE <SQL>").to_arrow_table()` '
    "on Parquet's file (the connection made in the first read, reused by the warm-process reads)",
    "lance": "`lance.dataset(path).to_table(columns=..., filter='<SQL>')` (no scalar index built)",
    "vortex": "`vortex.open(path).to_arrow(columns, expr=<vortex.expr.Expr>).read_all()`, literals typed "
    "with `vortex.expr.literal(dtype, value)`",
    "scan_filter": "`looseleaf.open(path).to_table(columns=returned + filter columns)`, then "
    "`Table.filter(<Expression>)` (the baseline of the 50% target, not a peer)",
}
WRITERS = ["looseleaf", "parquet", "lance", "vortex"]
EXTENSIONS = {"looseleaf": "leaf", "parquet": "parquet", "lance": "lance", "vortex": "vortex"}
VARIANTS = ["generated", "sorted"]
SORT_COLUMN = "l_shipdate"
Q6_COLUMNS = ["l_extendedprice", "l_discount"]
Q6_TERMS = [
    ["l_shipdate", ">=", "1994-01-01"],
    ["l_shipdate", "<", "1995-01-01"],
    ["l_discount", ">=", "0.05"],
    ["l_discount", "<=", "0.07"],
    ["l_quantity", "<", "24"],
]
SWEEP_COLUMNS = ["l_orderkey", "l_extendedprice", "l_comment"]
SWEEP_SHARES = [0.001, 0.01, 0.1, 0.5]
QUICK_SHARES = [0.01, 0.5]
#: The issue's bars: ≥ 2x the best peer at this share of rows or below on sorted data.
FAST_SHARE = 0.01
FAST_ADVANTAGE = 2.0
ZONE_MAP_SIZE_SHARE = 0.01
OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
SQL_OPS = {"==": "=", "!=": "<>"}
WORKER_TIMEOUT = 900


# --------------------------------------------------------------------------------------------
# Predicates: one neutral form (a conjunction of [column, op, literal text]), one rendering per system
# --------------------------------------------------------------------------------------------


def column_kinds(schema: Any, columns: list[str]) -> dict[str, dict[str, Any]]:
    """The literal type of each filter column: date, decimal (precision, scale) or int."""
    import pyarrow as pa

    kinds: dict[str, dict[str, Any]] = {}
    for name in columns:
        kind = schema.field(name).type
        if pa.types.is_date32(kind):
            kinds[name] = {"kind": "date"}
        elif pa.types.is_decimal(kind):
            kinds[name] = {"kind": "decimal", "precision": kind.precision, "scale": kind.scale}
        elif pa.types.is_integer(kind):
            kinds[name] = {"kind": "int"}
        else:
            raise ValueError(f"no literal rendering for {name}: {kind}")
    return kinds


def _python_literal(text: str, kind: dict[str, Any]) -> Any:
    import datetime
    import decimal

    if kind["kind"] == "date":
        return datetime.date.fromisoformat(text)
    if kind["kind"] == "decimal":
        return decimal.Decimal(text)
    return int(text)


def arrow_filter(terms: list[list[str]], kinds: dict[str, dict[str, Any]]) -> Any:
    """The predicate as a ``pyarrow.compute.Expression``, each literal of its column's type."""
    import pyarrow as pa
    import pyarrow.compute as pc

    expression = None
    for column, op, text in terms:
        kind = kinds[column]
        arrow_type = {
            "date": pa.date32(),
            "decimal": pa.decimal128(kind.get("precision", 38), kind.get("scale", 0)),
            "int": pa.int64(),
        }[kind["kind"]]
        term = OPS[op](pc.field(column), pa.scalar(_python_literal(text, kind), arrow_type))
        expression = term if expression is None else expression & term
    return expression


def sql_filter(terms: list[list[str]], kinds: dict[str, dict[str, Any]]) -> str:
    """The predicate as SQL (DuckDB and Lance's DataFusion), each literal of its column's type."""
    parts = []
    for column, op, text in terms:
        kind = kinds[column]
        if kind["kind"] == "date":
            literal = f"DATE '{text}'"
        elif kind["kind"] == "decimal":
            literal = f"CAST('{text}' AS DECIMAL({kind['precision']}, {kind['scale']}))"
        else:
            literal = str(int(text))
        parts.append(f"{column} {SQL_OPS.get(op, op)} {literal}")
    return " AND ".join(parts)


def vortex_filter(terms: list[list[str]], kinds: dict[str, dict[str, Any]]) -> Any:
    """The predicate as a ``vortex.expr.Expr``. Literals need their dtype spelled out: a bare
    ``Decimal("0.05")`` becomes decimal(2, 2), which Vortex refuses to compare with decimal(15, 2)."""
    import vortex
    import vortex.expr as ve

    terms_out = []
    for column, op, text in terms:
        kind = kinds[column]
        if kind["kind"] == "date":
            dtype = vortex.date("days")
        elif kind["kind"] == "decimal":
            dtype = vortex.decimal(precision=kind["precision"], scale=kind["scale"])
        else:
            dtype = vortex.int_(64)
        terms_out.append(OPS[op](ve.column(column), ve.literal(dtype, _python_literal(text, kind))))
    return ve.and_collect(terms_out)


def duckdb_query(path: str, columns: list[str], terms: list[list[str]], kinds: dict[str, Any]) -> str:
    source = path.replace("'", "''")
    return f"SELECT {', '.join(columns)} FROM read_parquet('{source}') WHERE {sql_filter(terms, kinds)}"


def filter_columns(terms: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(column for column, _, _ in terms))


# --------------------------------------------------------------------------------------------
# Writing and reading
# --------------------------------------------------------------------------------------------


def write(system: str, table: Any, path: Path, zone_map_rows: int | None = None) -> None:
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if system == "looseleaf":
        import looseleaf

        options = {} if zone_map_rows is None else {"zone_map_rows": zone_map_rows}
        looseleaf.write_table(table, path, **options)
    elif system == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path, write_statistics=True, write_page_index=True)
    elif system == "lance":
        import lance

        lance.write_dataset(table, str(path))
    elif system == "vortex":
        import vortex
        import vortex.io

        vortex.io.write(table, str(path))
    else:
        raise ValueError(system)


def import_system(system: str) -> None:
    """Imports what ``system`` needs to read (so that imports stay out of the timings), and the
    pyarrow modules a filtered read may import on first use: ``Table.filter(Expression)`` imports
    pyarrow.acero and pyarrow.dataset (~0.2 s, ssl included), and Expression.to_substrait, which
    a filter may be translated with, pyarrow.substrait."""
    import pyarrow.acero
    import pyarrow.compute  # every system's checks use it
    import pyarrow.dataset

    with contextlib.suppress(ImportError):
        import pyarrow.substrait  # noqa: F401

    if system in ("looseleaf", "scan_filter"):
        import looseleaf  # noqa: F401
    elif system == "duckdb":
        import duckdb  # noqa: F401
    elif system == "lance":
        import lance  # noqa: F401
    elif system == "vortex":
        import vortex.expr  # noqa: F401


class Reader:
    """One system's filtered read of one file, the predicate prepared in the system's own form
    before any clock starts."""

    def __init__(self, system: str, path: str, columns: list[str], terms: list[list[str]], kinds: Any):
        self.system, self.path, self.columns = system, path, columns
        self.connection: Any = None
        if system in ("looseleaf", "parquet", "scan_filter"):
            self.predicate: Any = arrow_filter(terms, kinds)
        elif system == "duckdb":
            self.predicate = duckdb_query(path, columns, terms, kinds)
        elif system == "lance":
            self.predicate = sql_filter(terms, kinds)
        elif system == "vortex":
            self.predicate = vortex_filter(terms, kinds)
        else:
            raise ValueError(system)
        self.extra = [c for c in filter_columns(terms) if c not in columns]

    def read(self) -> Any:
        """Open + filtered read, returning a pyarrow Table."""
        system, path, columns = self.system, self.path, self.columns
        if system == "looseleaf":
            import looseleaf

            return looseleaf.open(path).to_table(columns=columns, filter=self.predicate)
        if system == "scan_filter":
            import looseleaf

            table = looseleaf.open(path).to_table(columns=columns + self.extra)
            return table.filter(self.predicate).select(columns)
        if system == "parquet":
            import pyarrow.dataset as ds

            return ds.dataset(path, format="parquet").to_table(columns=columns, filter=self.predicate)
        if system == "duckdb":
            import duckdb

            if self.connection is None:  # the first read makes it; later reads reuse it
                self.connection = duckdb.connect()
            relation = self.connection.sql(self.predicate)
            # duckdb >= 1.4 names it to_arrow_table; before, fetch_arrow_table.
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            return fetch()
        if system == "lance":
            import lance

            return lance.dataset(path).to_table(columns=columns, filter=self.predicate)
        if system == "vortex":
            import vortex

            return vortex.open(path).to_arrow(columns, expr=self.predicate).read_all()
        raise ValueError(system)


def checks(table: Any) -> dict[str, Any]:
    """What a result must match: its row count, a sum per column (string columns: total length),
    and Q6's revenue when the table has its columns. Decimals are compared as exact text."""
    import decimal

    import pyarrow as pa
    import pyarrow.compute as pc

    def text(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, decimal.Decimal):
            return str(value.normalize())
        return str(value)

    out: dict[str, Any] = {"rows": table.num_rows}
    for name in table.column_names:
        column = table.column(name)
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_string_view(kind) or pa.types.is_large_string(kind):
            out[f"len({name})"] = text(pc.sum(pc.binary_length(column.cast(pa.string()))).as_py() or 0)
        else:
            out[f"sum({name})"] = text(pc.sum(column).as_py())
    if {"l_extendedprice", "l_discount"} <= set(table.column_names):
        revenue = pc.sum(pc.multiply(table.column("l_extendedprice"), table.column("l_discount")))
        out["revenue"] = text(revenue.as_py())
    return out


# --------------------------------------------------------------------------------------------
# The worker: one measurement in a fresh process
# --------------------------------------------------------------------------------------------


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    system = spec["system"]
    fresh_process.import_before_clock()
    import_system(system)
    reader = Reader(system, spec["path"], spec["columns"], spec["terms"], spec["kinds"])
    page_cache.warm(Path(spec["path"]))
    read_before = bytes_read()
    table, seconds = timed(reader.read)
    read = bytes_read() - read_before if read_before is not None else None
    result: dict[str, Any] = {"seconds": seconds, "bytes_read": read, "checks": checks(table)}
    del table
    again = repeated(reader.read, spec["warm_repeats"])
    result["warm_seconds"] = median_or_none(again)
    result["warm_samples"] = again
    return result


def bytes_read() -> int | None:
    """Bytes this process has read with read system calls (``rchar`` of /proc/self/io, every
    thread, page cache hits included): what a read asked of its files, and whatever else the
    process read meanwhile (a module imported on first use). Reads through a memory map are not
    counted (none of the systems here maps its files by default)."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def shipdate_ranges(table: Any, shares: list[float]) -> list[dict[str, Any]]:
    """For each share, ``[lo, hi)`` around the median of l_shipdate holding about that share of rows."""
    import datetime

    import numpy as np

    days = np.sort(table.column(SORT_COLUMN).cast("int32").to_numpy())
    n = len(days)
    epoch = datetime.date(1970, 1, 1)
    out = []
    for share in shares:
        first = int(n * (0.5 - share / 2))
        lo = int(days[first])
        hi = int(days[min(n - 1, first + max(1, round(n * share)))])
        if hi <= lo:
            hi = lo + 1
        rows = int(np.searchsorted(days, hi) - np.searchsorted(days, lo))
        out.append(
            {
                "share": share,
                "lo": (epoch + datetime.timedelta(days=lo)).isoformat(),
                "hi": (epoch + datetime.timedelta(days=hi)).isoformat(),
                "rows": rows,
                "actual_share": rows / n,
            }
        )
    return out


def fmt_share(share: float) -> str:
    return f"{share:.1%}" if share < 0.1 else f"{share:.0%}"


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.files_dir: Path = args.data / "filters"
        self.files_dir.mkdir(parents=True, exist_ok=True)

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    @property
    def scale(self) -> float:
        return 0.01 if self.args.quick else self.args.scale

    @property
    def repeats(self) -> int:
        return self.args.repeats or (1 if self.args.quick else 3)

    @property
    def warm_repeats(self) -> int:
        if self.args.warm_repeats is not None:
            return self.args.warm_repeats
        return 2 if self.args.quick else 5

    def path(self, system: str, variant: str, zone_map_rows: int | None = None) -> Path:
        tag = "" if zone_map_rows is None else f"_zm{zone_map_rows}"
        return self.files_dir / f"lineitem_sf{self.scale:g}_{variant}{tag}.{EXTENSIONS[system]}"

    def run(self) -> dict[str, Any]:
        args = self.args
        wanted = args.systems.split(",") if args.systems else SYSTEMS
        unknown = set(wanted) - set(SYSTEMS)
        if unknown:
            sys.exit(f"unknown systems {sorted(unknown)}; choose from {SYSTEMS}")
        available = detect(NEEDS, wanted, "not selected (--systems)")
        active = [s for s in SYSTEMS if available[s]["available"]]
        self.log(
            "systems: " + ", ".join(f"{s} ({'yes' if available[s]['available'] else 'no'})" for s in SYSTEMS)
        )
        results: dict[str, Any] = {
            "meta": {
                **machine.describe(),
                "quick": args.quick,
                "scale": self.scale,
                "repeats": self.repeats,
                "warm_repeats": self.warm_repeats,
                "zone_map_rows": args.zone_map_rows,
                "systems": available,
                "looseleaf_build": build.looseleaf_build(),
            },
        }
        self.log(f"lineitem SF {self.scale:g}: loading")
        table = lineitem(self.scale, args.data)
        shares = QUICK_SHARES if args.quick else SWEEP_SHARES
        queries = self.queries(table, shipdate_ranges(table, shares))
        results["data"] = {"rows": table.num_rows, "arrow_bytes": table.get_total_buffer_size()}
        # Expected answers: pyarrow's Table.filter of the data in memory (the same for both variants).
        expected: dict[str, Any] = {}
        for query in queries:
            if query["name"] not in expected:
                filtered = table.filter(arrow_filter(query["terms"], query["kinds"]))
                expected[query["name"]] = checks(filtered.select(query["columns"]))
                del filtered
            query["expected"] = expected[query["name"]]
        results["files"], results["zone_maps"] = self.write_files(table, active)
        del table
        results["queries"] = [self.measure(query, active, results["files"]) for query in queries]
        results["pushdown"] = self.pushdown(queries, active, results["files"])
        ratios(results)
        results["targets"] = targets(results)
        return results

    def queries(self, table: Any, ranges: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for variant in VARIANTS:
            out.append(
                {"name": "q6", "variant": variant, "columns": Q6_COLUMNS, "terms": Q6_TERMS, "share": None}
            )
        for variant in VARIANTS:
            for r in ranges:
                out.append(
                    {
                        "name": f"shipdate {fmt_share(r['share'])}",
                        "variant": variant,
                        "columns": SWEEP_COLUMNS,
                        "terms": [[SORT_COLUMN, ">=", r["lo"]], [SORT_COLUMN, "<", r["hi"]]],
                        "share": r["share"],
                        "range": r,
                    }
                )
        for query in out:
            query["kinds"] = column_kinds(table.schema, filter_columns(query["terms"]))
            query["sql"] = sql_filter(query["terms"], query["kinds"])
            query["arrow"] = str(arrow_filter(query["terms"], query["kinds"]))
        return out

    def write_files(self, table: Any, active: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Every writer's file of each variant ({variant: {writer: {path, bytes, seconds} | {error}}})
        and the size of looseleaf's zone maps: its file against one written with ``zone_map_rows=0``."""
        writers = sorted({FILE_OF[s] for s in active}, key=WRITERS.index)
        files: dict[str, Any] = {}
        zone_maps: dict[str, Any] = {}
        for variant in VARIANTS:
            data = table if variant == "generated" else table.sort_by(SORT_COLUMN)
            files[variant] = {}
            for writer in writers:
                path = self.path(writer, variant)
                try:
                    start = time.perf_counter()
                    zone_map_rows = self.args.zone_map_rows if writer == "looseleaf" else None
                    write(writer, data, path, zone_map_rows)
                    seconds = time.perf_counter() - start
                    files[variant][writer] = {"path": str(path), "bytes": path_size(path), "seconds": seconds}
                    self.log(f"{variant}: wrote {writer}: {path_size(path) / 1e6:.1f} MB in {seconds:.2f} s")
                except Exception as e:
                    files[variant][writer] = {"error": f"{type(e).__name__}: {first_line(str(e), 500)}"}
                    self.log(f"{variant}: {writer} cannot write it: {type(e).__name__}: {e}")
            zone_maps[variant] = self.zone_map_cost(data, variant, files[variant].get("looseleaf"))
            del data
        errors = [z["error"] for z in zone_maps.values() if "error" in z]
        return files, ({"error": errors[0]} if errors else zone_maps)

    def zone_map_cost(self, table: Any, variant: str, written: dict[str, Any] | None) -> dict[str, Any]:
        if written is None:
            return {"error": "n/a: looseleaf not selected"}
        if "error" in written:
            return {"error": "n/a: looseleaf could not write the data"}
        if self.args.zone_map_rows == 0:
            return {"error": "n/a: --zone-map-rows 0 (zone maps off) in this run"}
        without = self.path("looseleaf", variant, zone_map_rows=0)
        try:
            write("looseleaf", table, without, zone_map_rows=0)
        except TypeError as e:
            return {"error": f"n/a: the writer does not take zone_map_rows ({e})"}
        except Exception as e:
            return {"error": f"n/a: zone_map_rows=0 refused ({type(e).__name__}: {first_line(str(e))})"}
        on, off = written["bytes"], path_size(without)
        without.unlink()
        self.log(f"{variant}: looseleaf zone maps {on - off:,} bytes = {(on - off) / on:.3%} of the file")
        return {"bytes": on, "bytes_without": off, "share": (on - off) / on}

    def measure(self, query: dict[str, Any], active: list[str], files: dict[str, Any]) -> dict[str, Any]:
        variant = query["variant"]
        label = f"{query['name']} ({variant})"
        result: dict[str, Any] = dict(query)
        result["systems"] = {}
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in active}
        for _ in range(self.repeats):
            for system in active:
                if any("error" in r for r in runs[system]):
                    continue  # failed once: not asked again
                file = files[variant][FILE_OF[system]]
                if "error" in file:
                    runs[system].append({"error": f"write failed: {file['error']}"})
                    continue
                spec = {
                    "system": system,
                    "path": file["path"],
                    "columns": query["columns"],
                    "terms": query["terms"],
                    "kinds": query["kinds"],
                    "warm_repeats": self.warm_repeats,
                }
                runs[system].append(fresh_process.run(__file__, spec, WORKER_TIMEOUT))
        for system, samples in runs.items():
            errors = [r["error"] for r in samples if "error" in r]
            if errors:
                result["systems"][system] = {"error": errors[0]}
                continue
            first = [r["seconds"] for r in samples]
            warm = [r["warm_seconds"] for r in samples if r["warm_seconds"] is not None]
            got = samples[-1]["checks"]
            read = [r["bytes_read"] for r in samples if r.get("bytes_read") is not None]
            result["systems"][system] = {
                "bytes_read": median_or_none(read),
                "first": statistics.median(first),
                "first_samples": first,
                "warm": median_or_none(warm),
                "warm_samples": [r["warm_samples"] for r in samples],
                "rows": got["rows"],
                "checks": got,
                "correct": all(r["checks"] == query["expected"] for r in samples),
            }
        self.log(f"{label}: " + summary(result["systems"]))
        return result

    def pushdown(self, queries: list[dict[str, Any]], active: list[str], files: dict[str, Any]) -> list[Any]:
        """How much each system read on the most selective range query of each variant, as it
        reports it (outside the timings)."""
        out = []
        for query in queries:
            if query["share"] != min(q["share"] or 1 for q in queries):
                continue
            entry: dict[str, Any] = {"query": query["name"], "variant": query["variant"], "systems": {}}
            for system in active:
                if system == "scan_filter":
                    continue
                file = files[query["variant"]][FILE_OF[system]]
                if "error" in file:
                    continue
                try:
                    entry["systems"][system] = explain(system, file["path"], query)
                except Exception as e:
                    entry["systems"][system] = f"error: {type(e).__name__}: {first_line(str(e))}"
            out.append(entry)
        return out


def explain(system: str, path: str, query: dict[str, Any]) -> str:
    """What ``system`` read for ``query``, from its own plan or statistics."""
    import re

    columns, terms, kinds = query["columns"], query["terms"], query["kinds"]
    if system == "looseleaf":
        import looseleaf

        plan = looseleaf.open(path).plan(columns=columns, filter=arrow_filter(terms, kinds))
        return f"plan filter: {json.dumps(plan.get('filter'))}"
    if system == "parquet":
        import pyarrow.dataset as ds

        fragment = next(iter(ds.dataset(path, format="parquet").get_fragments()))
        kept = fragment.split_by_row_group(arrow_filter(terms, kinds))
        return f"row groups read: {len(kept)} of {fragment.num_row_groups} (whole column chunks)"
    if system == "duckdb":
        import duckdb

        rows = duckdb.connect().sql("EXPLAIN ANALYZE " + duckdb_query(path, columns, terms, kinds)).fetchall()
        plan = "\n".join(str(r[-1]) for r in rows)
        found = re.search(r"Row Groups Scanned:\s*(\d+)\s*/\s*(\d+)", plan)
        pushed = "Filters:" in plan
        scanned = f"row groups read: {found.group(1)} of {found.group(2)}" if found else "row groups: ?"
        return f"{scanned}; filter pushed into the Parquet scan: {'yes' if pushed else 'no'}"
    if system == "lance":
        import lance

        scanner = lance.dataset(path).scanner(columns=columns, filter=sql_filter(terms, kinds))
        stages = []
        for line in scanner.analyze_plan().splitlines():
            if "LanceRead" not in line:
                continue
            stage = "filter scan" if "full_filter=" in line else "take of the matches"
            projection = re.search(r"projection=\[([^\]]*)\]", line)
            rows = re.search(r"rows_scanned=([^,\]]+)", line)
            read = re.search(r"bytes_read=([^,\]]+)", line)
            stages.append(
                f"{stage} of [{projection.group(1) if projection else '?'}]: "
                f"{rows.group(1) if rows else '?'} rows, {read.group(1) if read else '?'} bytes"
            )
        if not any(stage.startswith("filter scan") for stage in stages):
            return "filter not pushed into the scan (no LanceRead with full_filter in analyze_plan)"
        return "analyze_plan: " + "; ".join(reversed(stages))
    if system == "vortex":
        return "no plan or I/O statistics in its Python API (see its bytes read)"
    raise ValueError(system)


def summary(systems: dict[str, Any]) -> str:
    parts = []
    for system, v in systems.items():
        if "error" in v:
            parts.append(f"{system} error: {first_line(v['error'], 80)}")
        else:
            wrong = "" if v["correct"] else " WRONG"
            parts.append(f"{system} {fmt_seconds(v['first'])}/{fmt_seconds(v['warm'])}{wrong}")
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# Ratios, targets, report
# --------------------------------------------------------------------------------------------


def ratios(results: dict[str, Any]) -> None:
    """Per query and measure: the best peer and looseleaf's advantage (best peer's time /
    looseleaf's), only over correct answers; stored into each query's entry."""
    for query in results["queries"]:
        query["ratios"] = {}
        for measure in ("first", "warm"):
            systems = query["systems"]
            ok = {
                s: v[measure] for s, v in systems.items() if "error" not in v and v["correct"] and v[measure]
            }
            peers = {s: t for s, t in ok.items() if s in PEERS}
            leaf = ok.get("looseleaf")
            if not peers:
                continue
            best = min(peers, key=peers.__getitem__)
            query["ratios"][measure] = {
                "best_peer": best,
                "best_peer_seconds": peers[best],
                "looseleaf_seconds": leaf,
                "advantage": peers[best] / leaf if leaf else None,
            }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, measured: str, bar: str, met: bool | None) -> None:
        out.append(target(name, measured, bar, met))

    names = {"first": "first read", "warm": "warm process"}
    for query in results["queries"]:
        share = query["share"]
        if share is None or query["variant"] != "sorted" or share > FAST_SHARE:
            continue
        for measure in ("first", "warm"):
            r = query["ratios"].get(measure)
            label = f"sorted, {query['name']}: {names[measure]} vs best peer"
            if not r:
                add(label, "no peer measured", f"≥ {FAST_ADVANTAGE:g}x", None)
            elif r["advantage"] is None:
                add(f"{label} ({r['best_peer']})", "looseleaf: no result", f"≥ {FAST_ADVANTAGE:g}x", None)
            else:
                add(
                    f"{label} ({r['best_peer']})",
                    f"{r['advantage']:.2f}x ({fmt_seconds(r['looseleaf_seconds'])} vs "
                    f"{fmt_seconds(r['best_peer_seconds'])})",
                    f"≥ {FAST_ADVANTAGE:g}x",
                    r["advantage"] >= FAST_ADVANTAGE,
                )
    for query in results["queries"]:
        if query["share"] != max(q["share"] or 0 for q in results["queries"]):
            continue
        leaf = query["systems"].get("looseleaf", {})
        base = query["systems"].get("scan_filter", {})
        for measure in ("first", "warm"):
            label = f"{query['variant']}, {query['name']}: {names[measure]}, filtered vs full scan + filter"
            if "error" in leaf or "error" in base or not leaf or not base:
                add(label, "no result", "≤ 1.00x the time", None)
                continue
            ratio = leaf[measure] / base[measure]
            add(
                label,
                f"{ratio:.2f}x the time ({fmt_seconds(leaf[measure])} vs {fmt_seconds(base[measure])})",
                "≤ 1.00x the time",
                ratio <= 1.0 and leaf["correct"],
            )
    zone_maps = results["zone_maps"]
    if "error" in zone_maps:
        add(
            "zone maps: share of the looseleaf file", zone_maps["error"], f"< {ZONE_MAP_SIZE_SHARE:.0%}", None
        )
    else:
        for variant, z in zone_maps.items():
            add(
                f"{variant}: zone maps' share of the looseleaf file",
                f"{z['share']:.3%} ({z['bytes'] - z['bytes_without']:,} of {z['bytes']:,} bytes)",
                f"< {ZONE_MAP_SIZE_SHARE:.0%}",
                z["share"] < ZONE_MAP_SIZE_SHARE,
            )
    return out


def fmt_mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n < 10e6 else f"{n / 1e6:.0f} MB"


def cell(entry: dict[str, Any] | None, measure: str) -> str:
    if entry is None:
        return "-"
    if "error" in entry:
        return "error: " + first_line(entry["error"], 100).replace("|", "\\|")
    text = fmt_seconds(entry[measure])
    if not entry["correct"]:
        text += f" **WRONG** ({entry['rows']:,} rows)"
    return text


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    systems = [s for s in SYSTEMS if meta["systems"][s]["available"]]
    build = meta["looseleaf_build"]
    lines = [
        "# Filtered reads side by side (issue 16)",
        "",
        machine.headline(meta) + f"; lineitem SF {meta['scale']:g} "
        f"({results['data']['rows']:,} rows); "
        + ("**quick mode**; " if meta["quick"] else "")
        + f"each measure the median of {meta['repeats']} fresh processes; warm process = median of "
        f"{meta['warm_repeats']} further reads in the process. Page cache warm. looseleaf build: "
        f"extension built {build.get('extension_built')} UTC, checkout {build.get('commit')} "
        f"({build.get('uncommitted_rust_files', '?')} uncommitted Rust files)"
        + (f", zone_map_rows={meta['zone_map_rows']}" if meta["zone_map_rows"] is not None else "")
        + ".",
        "",
        "Systems: "
        + "; ".join(
            f"{LABELS[s]}: {i.get('version', '?')}"
            + ("" if i["available"] else f" (not run: {i.get('reason')})")
            for s, i in meta["systems"].items()
        )
        + ".",
        "",
        "Files: "
        + "; ".join(
            f"{variant}: "
            + ", ".join(
                f"{w} {f['bytes'] / 1e6:.1f} MB" if "error" not in f else f"{w} error"
                for w, f in files.items()
            )
            for variant, files in results["files"].items()
        )
        + ".",
    ]
    for measure, title in (("first", "First read (fresh process)"), ("warm", "Warm process")):
        lines += [
            "",
            f"## {title}",
            "",
            "Median time, open included; *rows*: what every system returned (a system returning "
            "anything else is flagged **WRONG**). *Advantage* = best peer's time / looseleaf's (above "
            "1: looseleaf is faster). *scan+filter*: looseleaf's unfiltered read + `Table.filter` "
            "(the 50% target's bar, not a peer).",
            "",
            "| query | data | rows (share) | "
            + " | ".join(LABELS[s] for s in systems)
            + " | best peer | looseleaf advantage |",
            "|---|---|---:|" + "---:|" * len(systems) + "---|---:|",
        ]
        for query in results["queries"]:
            rows = query["expected"]["rows"]
            share = rows / results["data"]["rows"]
            r = query["ratios"].get(measure)
            best = r["best_peer"] if r else "-"
            advantage = f"{r['advantage']:.2f}x" if r and r["advantage"] else "-"
            row = [cell(query["systems"].get(s), measure) for s in systems]
            lines.append(
                f"| {query['name']} | {query['variant']} | {rows:,} ({fmt_share(share)}) | "
                + " | ".join(row)
                + f" | {best} | {advantage} |"
            )
    lines += [
        "",
        "## Bytes read (first read)",
        "",
        "What each first read asked of its file(s): the process's `rchar` (bytes returned by read "
        "system calls, page cache hits included) over the read, against the size of the file read.",
        "",
        "| query | data | " + " | ".join(LABELS[s] for s in systems) + " |",
        "|---|---|" + "---:|" * len(systems),
    ]
    for query in results["queries"]:
        row = []
        for system in systems:
            entry = query["systems"].get(system, {})
            file = results["files"][query["variant"]].get(FILE_OF[system], {})
            if entry.get("bytes_read") is None or "bytes" not in file:
                row.append("-")
            else:
                row.append(f"{fmt_mb(entry['bytes_read'])} of {fmt_mb(file['bytes'])}")
        lines.append(f"| {query['name']} | {query['variant']} | " + " | ".join(row) + " |")
    ranges = [q for q in results["queries"] if q.get("range") and q["variant"] == VARIANTS[0]]
    lines += [
        "",
        "Ranges: "
        + "; ".join(
            f"{q['name']}: `l_shipdate >= {q['range']['lo']} and < {q['range']['hi']}`" for q in ranges
        )
        + ". Q6: `"
        + " and ".join(f"{c} {op} {v}" for c, op, v in Q6_TERMS)
        + "`. Every result checked against pyarrow's `Table.filter` of the data in memory (rows, a sum "
        "per column, Q6's revenue).",
    ]
    lines += ["", "How each system is asked:", ""]
    lines += [f"- {LABELS[s]}: {HOW[s]}" for s in systems]
    q6 = next(q for q in results["queries"] if q["name"] == "q6")
    lines += ["", f"Q6 as SQL (DuckDB, Lance): `{q6['sql']}`; as a pyarrow expression: `{q6['arrow']}`."]
    if results.get("pushdown"):
        lines += ["", "## Pushdown (most selective range query, as each system reports it)", ""]
        for entry in results["pushdown"]:
            for system, text in entry["systems"].items():
                lines.append(f"- {entry['variant']}, {entry['query']}, {LABELS[system]}: {text}")
    lines += targets_section(results["targets"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--quick", action="store_true", help="SF 0.01, 1 run, shares 1%% and 50%% only")
    parser.add_argument("--repeats", type=int, help="fresh processes per measure (default 3; 1 with --quick)")
    parser.add_argument(
        "--warm-repeats", type=int, help="reads per process after the first (default 5; 2 with --quick)"
    )
    parser.add_argument("--zone-map-rows", type=int, help="looseleaf's zone_map_rows (default: its own)")
    parser.add_argument("--systems", help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument("--data", type=Path, default=DATA, help="data and file cache")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fresh_process.serve(worker)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    args.data.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    installed = build.pin_looseleaf(args.data / "pinned-filters")
    results = Run(args).run()
    results["meta"]["wall_seconds"] = time.perf_counter() - started
    build.note_reinstall(results["meta"]["looseleaf_build"], installed)
    name = f"filters-{time.strftime('%Y-%m-%d')}{'-quick' if args.quick else ''}.json"
    (args.out / name).write_text(json.dumps(results, indent=1, default=str))
    print(markdown(results))
    print(f"results: {args.out / name} ({results['meta']['wall_seconds']:.0f} s)", file=sys.stderr)
    # A wrong or failed answer of looseleaf fails the run (the CI smoke test relies on it).
    failed = [
        f"{q['name']} ({q['variant']}): {v.get('error', 'wrong answer')}"
        for q in results["queries"]
        for system, v in q["systems"].items()
        if system == "looseleaf" and ("error" in v or not v.get("correct"))
    ]
    if failed:
        sys.exit("looseleaf failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
