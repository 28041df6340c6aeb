"""``looseleaf demo``: writes a sample table and reads it back by scan, range and take.

:func:`sample_table` is also the package's sample data (benchmarks and examples import it as
``looseleaf.cli.sample_table``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import __version__
from ..reader import open as open_file
from ..writer import write_table


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
