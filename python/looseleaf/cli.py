"""The ``looseleaf`` command: ``demo``, ``inspect`` and ``convert``.

Paths are anything :func:`looseleaf.open` takes, object store URLs included; each
``--storage-option KEY=VALUE`` (repeatable) configures the store. Errors are one line naming the
file and the problem, not a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import __version__
from .exceptions import LooseleafError
from .reader import open as open_file
from .writer import FileWriter, write_table

#: Extensions of the files ``convert`` reads or writes with pyarrow rather than looseleaf.
_ARROW_IPC = (".arrow", ".feather", ".ipc")
_PARQUET = (".parquet", ".pq")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="looseleaf", description="looseleaf columnar files")
    parser.add_argument("--version", action="version", version=f"looseleaf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="write a sample table and read it back by scan, range and take")
    demo.add_argument(
        "--rows", type=int, default=2_000_000, help="rows of the sample table (default 2,000,000)"
    )
    demo.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")

    storage = argparse.ArgumentParser(add_help=False)
    storage.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="configure the object store (object_store keys: aws_endpoint, aws_region, ...); repeatable",
    )

    inspect = commands.add_parser(
        "inspect", parents=[storage], help="print a file's schema, columns, pages and encodings"
    )
    inspect.add_argument("path")
    inspect.add_argument("--pages", action="store_true", help="list every page")
    inspect.add_argument("--json", action="store_true", help="print the metadata as JSON")

    convert = commands.add_parser(
        "convert",
        parents=[storage],
        help="convert Parquet, Arrow IPC or Feather to looseleaf, or looseleaf to any of them",
    )
    convert.add_argument("source")
    convert.add_argument("destination")
    convert.add_argument("--page-size", type=int, default=None, help="target page size in bytes")

    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(args.rows, args.dir)
        storage_options = _storage_options(parser, args.storage_option)
        if args.command == "inspect":
            return run_inspect(
                args.path, pages=args.pages, as_json=args.json, storage_options=storage_options
            )
        return run_convert(args.source, args.destination, args.page_size, storage_options)
    except (LooseleafError, OSError) as e:
        print(f"looseleaf: error: {e}", file=sys.stderr)
        return 1


def _storage_options(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--storage-option takes KEY=VALUE, got {pair!r}")
        options[key] = value
    return options


def sample_table(num_rows: int, seed: int = 42) -> pa.Table:
    """A table of trades: integers, floats, timestamps, booleans and strings, with nulls."""
    rng = pc.random(num_rows, initializer=seed)
    rng2 = pc.random(num_rows, initializer=seed + 1)

    def ints(values: pa.Array, scale: int) -> pa.Array:
        return pc.cast(pc.floor(pc.multiply(values, scale)), pa.int64())

    words = pa.array([f"{w}-{i}" for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 40)])
    comments = pa.array([f"trade note {i} " + "x" * (i % 37) for i in range(1000)])
    price = pc.round(pc.multiply(rng, 1000.0), 2)
    return pa.table(
        {
            "id": pa.array(range(num_rows), type=pa.int64()),
            "ts": pc.cast(pc.add(ints(rng2, 10**9), 1_700_000_000_000_000), pa.timestamp("us", tz="UTC")),
            "price": pc.if_else(pc.less(rng2, 0.05), pa.scalar(None, pa.float64()), price),
            "quantity": pc.cast(ints(rng, 500), pa.int32()),
            "buy": pc.less(rng, 0.5),
            "venue": words.take(ints(rng2, len(words))),
            "comment": pc.if_else(
                pc.less(rng, 0.1), pa.scalar(None, pa.string()), comments.take(ints(rng, 1000))
            ),
        }
    )


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def run_demo(num_rows: int, directory: str | None) -> int:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        directory = directory or tmp
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "trades.leaf")
        parquet_path = os.path.join(directory, "trades.parquet")
        print(f"looseleaf {__version__} demo: {num_rows:,} rows of sample trades")
        table, seconds = _timed(lambda: sample_table(num_rows))
        print(f"  made the table ({_mb(table.nbytes)} in memory) in {seconds:.2f} s")

        written, seconds = _timed(lambda: write_table(table, path))
        print(f"  wrote {path}: {_mb(written['num_bytes'])} in {seconds:.2f} s")
        _, pq_seconds = _timed(lambda: pq.write_table(table, parquet_path))
        print(f"  (pyarrow Parquet, same data: {_mb(os.path.getsize(parquet_path))} in {pq_seconds:.2f} s)")

        reader = open_file(path)
        scanned, seconds = _timed(lambda: reader.read_all().read_all())
        _, pq_scan = _timed(lambda: pq.read_table(parquet_path))
        assert scanned.equals(table), "the scan does not match the data written"
        print(
            f"  full scan: {seconds * 1000:.0f} ms ({table.nbytes / seconds / 1e9:.2f} GB/s); "
            f"Parquet {pq_scan * 1000:.0f} ms -> {pq_scan / seconds:.2f}x"
        )

        start, count = num_rows // 3, min(100_000, num_rows // 3)
        ranged, seconds = _timed(
            lambda: reader.read_range(start, count, columns=["id", "price", "venue"]).read_all()
        )
        assert ranged.equals(table.select(["id", "price", "venue"]).slice(start, count))
        print(f"  range of {count:,} rows x 3 columns from row {start:,}: {seconds * 1000:.1f} ms")

        indices = pc.cast(pc.floor(pc.multiply(pc.random(1000, initializer=7), num_rows)), pa.int64())
        taken, seconds = _timed(lambda: open_file(path).take(indices))
        assert taken.equals(table.take(indices))
        plan = reader.plan(indices=indices)
        print(
            f"  take of 1,000 random rows (open included): {seconds * 1000:.1f} ms, "
            f"{plan['reads']:,} reads of {_mb(plan['bytes'])} planned "
            f"(+{plan['indirect_requests']} dependent string reads)"
        )
        full = reader.plan()
        summary = f"{full['requests']:,} requests, {full['reads']:,} reads, {_mb(full['bytes'])}"
        print(f"  plan of a full scan: {summary}")
        print("  every read matched the data written")
    return 0


def run_inspect(
    path: str, *, pages: bool, as_json: bool, storage_options: dict[str, str] | None = None
) -> int:
    reader = open_file(path, storage_options=storage_options)
    metadata = reader.metadata
    if as_json:
        print(json.dumps(metadata, indent=2))
        return 0
    print(f"{metadata['location']}: {metadata['num_rows']:,} rows, {metadata['num_columns']} columns")
    print(f"format {metadata['format_version']}, written by {metadata['created_by']}")
    print(reader.schema)
    print()
    print(f"{'column':>6}  {'field':<24} {'type':<28} {'pages':>6} {'bytes':>14}  encodings")
    for column in metadata["columns"]:
        encodings = sorted({p["encoding"] for p in column["pages"]})
        print(
            f"{column['column']:>6}  {column['field']:<24} {column['type']:<28} "
            f"{column['num_pages']:>6} {column['bytes']:>14,}  {', '.join(encodings)}"
        )
        if pages:
            for i, page in enumerate(column["pages"]):
                print(
                    f"{'':>8}page {i}: {page['num_rows']:,} rows, {page['bytes']:,} bytes, {page['encoding']}"
                )
    return 0


def _progress(done: int, total: int, started: float) -> None:
    width = 30
    filled = width if total == 0 else int(width * done / total)
    elapsed = time.perf_counter() - started
    bar = "#" * filled + "-" * (width - filled)
    sys.stderr.write(f"\r[{bar}] {done:,}/{total:,} rows  {elapsed:.1f} s")
    sys.stderr.flush()


def run_convert(
    source: str, destination: str, page_size: int | None, storage_options: dict[str, str] | None = None
) -> int:
    """Parquet or Arrow IPC (local files, read by pyarrow) to looseleaf at any location, or
    looseleaf at any location to looseleaf, Parquet or Arrow IPC."""
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    if source.endswith(_ARROW_IPC):
        table = ipc.open_file(source).read_all()
        batches, total, schema = iter(table.to_batches()), table.num_rows, table.schema
    elif source.endswith(_PARQUET):
        parquet = pq.ParquetFile(source)
        batches = parquet.iter_batches(batch_size=65536)
        total, schema = parquet.metadata.num_rows, parquet.schema_arrow
    else:
        reader = open_file(source, storage_options=storage_options)
        stream = reader.read_all()
        batches, total, schema = iter(stream), reader.num_rows, stream.schema
    started = time.perf_counter()
    done = 0

    def progress(batch: pa.RecordBatch) -> pa.RecordBatch:
        nonlocal done
        done += batch.num_rows
        _progress(done, total, started)
        return batch

    if destination.endswith(_PARQUET + _ARROW_IPC):
        if destination.endswith(_PARQUET):
            with pq.ParquetWriter(destination, schema) as sink:
                for batch in batches:
                    sink.write_batch(progress(batch))
        else:
            with ipc.new_file(destination, schema) as sink:
                for batch in batches:
                    sink.write_batch(progress(batch))
        sys.stderr.write("\n")
        print(f"wrote {destination}: {done:,} rows")
        return 0
    with FileWriter(destination, schema, page_size=page_size, storage_options=storage_options) as writer:
        for batch in batches:
            writer.write_batch(progress(batch))
        result = writer.close()
    sys.stderr.write("\n")
    print(f"wrote {destination}: {result['num_rows']:,} rows, {_mb(result['num_bytes'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
