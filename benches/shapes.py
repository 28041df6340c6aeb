"""looseleaf against its peers on data shapes `compare.py` does not cover, first reads only.

    python3 benches/shapes.py --repeats 5                       # every shape, ~10 min
    python3 benches/shapes.py --shapes wide2k --repeats 3       # one shape

`compare.py` measures four fixed data sets in depth; this script checks that its figures are
not particular to them. Shapes (seeded random, written once per system into ``--data``):

- ``text``: 500,000 rows: ``id``, ``comment`` (3 to 19 words drawn Zipf-like from 20,000, 10% null),
  ``price`` (float64 with two decimals, 10% null), ``qty`` (int32, 10% null), ``ts``
  (increasing timestamps), ``cat`` (50 distinct strings, 10% null);
- ``lists``: 200,000 rows: ``id``, ``vec`` (``list<float32>`` of 0 to 63 items, 10% null),
  ``tags`` (``list<string>`` of 0 to 5 of 300 tags, 10% null), ``s`` (``struct<a: int64, b: string>``);
- ``wide2k``: 20,000 rows of 2,000 columns, int64 (0 to 999) and float32 alternating.

Each measure runs in a fresh process (imports done, open included), the systems interleaved,
and reports the median: a full scan, a two-column projection and a take of 1,000 random rows
in random order (each system as `compare.py` reads it: ``harness/formats.py``). The ratio is the
best peer's time over looseleaf's: above 1, looseleaf is ahead.
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

from harness import formats, fresh_process
from harness.data import vocabulary
from harness.timing import seconds

SYSTEMS = ["looseleaf", "parquet", "lance", "vortex"]
PROJECTIONS = {"text": ["id", "comment"], "lists": ["id", "vec"], "wide2k": ["c0", "c1"]}
OPS = ["scan", "projection", "take"]
SEED = 7


def make(shape: str) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(SEED)

    def some_null(array: Any) -> Any:
        mask = pa.array(rng.random(len(array)) < 0.1)
        return pc.if_else(mask, pa.nulls(len(array), array.type), array)

    if shape == "text":
        n = 500_000
        words = vocabulary(rng, 20_000)
        picks = rng.zipf(1.3, n * 20) % len(words)
        lengths = rng.integers(3, 20, n)
        comments, at = [], 0
        for length in lengths:
            comments.append(" ".join(words[i] for i in picks[at : at + length]))
            at += length
        categories = np.array([f"category_{i}" for i in range(50)])
        start = 1_700_000_000_000_000
        return pa.table(
            {
                "id": pa.array(np.arange(n)),
                "comment": some_null(pa.array(comments)),
                "price": some_null(pa.array(np.round(rng.random(n) * 1000, 2))),
                "qty": some_null(pa.array(rng.integers(0, 100, n).astype(np.int32))),
                "ts": pa.array((start + np.cumsum(rng.integers(0, 1_000_000, n))).astype("datetime64[us]")),
                "cat": some_null(pa.array(categories[rng.integers(0, 50, n)])),
            }
        )
    if shape == "lists":
        n = 200_000
        offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 64, n))]).astype(np.int32)
        items = pa.array(rng.standard_normal(offsets[-1]).astype(np.float32))
        vec = pa.ListArray.from_arrays(pa.array(offsets), items)
        tag_offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 6, n))]).astype(np.int32)
        tag_items = pa.array([f"tag{x}" for x in rng.integers(0, 300, tag_offsets[-1])])
        tags = pa.ListArray.from_arrays(pa.array(tag_offsets), tag_items)
        names = pa.array([f"name {x}" for x in rng.integers(0, 100_000, n)])
        struct = pa.StructArray.from_arrays([pa.array(rng.integers(0, 1 << 40, n)), names], ["a", "b"])
        ids = pa.array(np.arange(n))
        return pa.table({"id": ids, "vec": some_null(vec), "tags": some_null(tags), "s": struct})
    if shape == "wide2k":
        n = 20_000
        columns = {}
        for i in range(2000):
            floats = i % 2 == 1
            values = rng.standard_normal(n).astype(np.float32) if floats else rng.integers(0, 1000, n)
            columns[f"c{i}"] = pa.array(values)
        return pa.table(columns)
    raise ValueError(shape)


def child(system: str, op: str, path: str, columns: list[str], rows: int, seed: int) -> float:
    """One first read in this (fresh) process, ms."""
    import random

    fresh_process.import_before_clock()
    formats.import_system(system)
    indices = random.Random(seed).sample(range(rows), 1000)
    if op == "scan":
        return seconds(lambda: formats.scan(system, path, None, None)) * 1e3
    if op == "projection":
        return seconds(lambda: formats.scan(system, path, columns, None)) * 1e3
    return seconds(lambda: formats.take(system, path, indices)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="text,lists,wide2k")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("benches/data/shapes"))
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        system, op, path, columns, rows, seed = args.child
        print(child(system, op, path, json.loads(columns), int(rows), int(seed)))
        return
    available = formats.detect(SYSTEMS, SYSTEMS)
    systems = [s for s in SYSTEMS if available[s]["available"]]
    args.data.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for shape in args.shapes.split(","):
        table = None
        for system in systems:
            path = args.data / f"{shape}.{formats.EXTENSIONS[system]}"
            if not path.exists():
                table = make(shape) if table is None else table
                formats.write(system, table, path)
            print(f"{shape} {system}: {formats.path_size(path) / 1e6:.1f} MB", flush=True)
        import looseleaf

        rows = looseleaf.open(str(args.data / f"{shape}.leaf")).num_rows
        for op in OPS:
            times: dict[str, list[float]] = {s: [] for s in systems}
            for repeat in range(args.repeats):
                for system in systems if repeat % 2 == 0 else systems[::-1]:
                    path = str(args.data / f"{shape}.{formats.EXTENSIONS[system]}")
                    spec = [system, op, path, json.dumps(PROJECTIONS[shape]), str(rows), str(repeat)]
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", *spec], capture_output=True, text=True, env=env
                    )
                    if out.returncode:
                        raise SystemExit(f"{system} {op} of {shape} failed:\n{out.stderr[-2000:]}")
                    times[system].append(float(out.stdout.split()[-1]))
            medians = {s: statistics.median(t) for s, t in times.items()}
            best, peer = min((t, s) for s, t in medians.items() if s != "looseleaf")
            cells = " ".join(f"{s} {t:.1f}" for s, t in medians.items())
            print(f"{shape} {op} (ms): {cells} -> {best / medians['looseleaf']:.2f}x vs {peer}", flush=True)


if __name__ == "__main__":
    main()
