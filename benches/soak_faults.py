"""A soak under faults: reads and writes of looseleaf against moto's S3 server behind the
fault-injecting proxy of ``tests/s3_server.py``, for a given time (an hour by default; a
benchmark, not CI). Every kind of fault at once, in bursts, with spells of throttling: error
answers (500, 503 SlowDown), connections reset in the middle of a body, bodies cut short, stalls
past the client's timeout.

Each operation's result is checked against pyarrow's truth: reads (scan, projection, range,
take, filtered, dataset) must give the right rows or a looseleaf error naming the path; writes
(``write_table``, ``FileWriter``, ``write_dataset`` overwrite and append) must leave the new
file or dataset whole, or fail naming the path and leave the old one. A wrong result, an error
of another kind, or an operation past its time bound stops the soak with exit status 1.

    python benches/soak_faults.py [--seconds 3600] [--seed 45] [--operations write_table,take]

Prints, at the end (and every minute): operations run and checked, by kind; errors, by kind;
requests the proxy saw; faults injected, by kind.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import random
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import looseleaf
from s3_server import FaultSchedule, ProxySettings, proxy, start_moto

BUCKET = "soak"
#: No operation may take longer, whatever the faults.
BOUND_SECONDS = 120.0
_bound = concurrent.futures.ThreadPoolExecutor(max_workers=1)


def table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "v": pa.array(rng.random(rows)),
            "s": pa.array([f"row {i} of {seed}" for i in range(rows)]),
            "k": pa.array(np.arange(rows) % 3, pa.int32()),
        }
    )


def bounded(operation):
    """``operation()``, or an error if it runs past :data:`BOUND_SECONDS` (a hang)."""
    return _bound.submit(operation).result(timeout=BOUND_SECONDS)


#: What a soak runs, drawn at random each step.
OPERATIONS = (
    "scan",
    "projection",
    "range",
    "take",
    "filtered",
    "dataset_scan",
    "write_table",
    "file_writer",
    "dataset_write",
)


class Soak:
    def __init__(self, moto, p, options: dict, seed: int, operations=OPERATIONS) -> None:
        self.moto = moto
        self.proxy = p
        self.operations = list(operations)
        self.options = options
        self.rng = random.Random(seed)
        self.checked: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        #: The first message of each kind of error.
        self.examples: dict[str, str] = {}
        self.version = 0
        # What each location holds, as far as the soak knows: a file or a dataset.
        self.truth: dict[str, pa.Table] = {}
        clean = moto.storage_options()
        self.file = f"s3://{BUCKET}/file.leaf"
        self.dataset = f"s3://{BUCKET}/dataset"
        self.truth[self.file] = table(20_000, 0)
        looseleaf.write_table(self.truth[self.file], self.file, storage_options=clean, page_size=16 * 1024)
        self.truth[self.dataset] = table(6_000, 1)
        looseleaf.write_dataset(
            self.truth[self.dataset], self.dataset, partitioning=["k"], storage_options=clean
        )

    def step(self) -> None:
        operation = self.rng.choice(self.operations)
        began = time.monotonic()
        try:
            try:
                bounded(lambda: getattr(self, operation)())
                self.checked[operation] += 1
            except looseleaf.LooseleafError as e:
                if BUCKET not in str(e):
                    raise AssertionError(f"{operation}: an error that names no path: {e}") from e
                kind = f"{operation}: {type(e).__name__}"
                self.errors[kind] += 1
                if kind not in self.examples:
                    self.examples[kind] = str(e)[:400]
                    print(f"first {kind}: {self.examples[kind]}", flush=True)
                self.after_error(operation)
        except AssertionError:
            self.show_requests(began)
            raise

    def show_requests(self, since: float) -> None:
        """Prints the requests since ``since`` and what the proxy did to each."""
        with self.proxy.stats.lock:
            events = [e for e in self.proxy.stats.events if e.arrival >= since]
        print(f"the {len(events)} requests of the failed operation:", flush=True)
        for e in events:
            fault = e.fault or "-"
            print(f"  {e.arrival - since:7.3f} s {e.method:6} {e.path} fault={fault} store={e.store_status}")

    def after_error(self, operation: str) -> None:
        """A failed write left the old file or dataset, whole: checked without faults."""
        if operation in ("write_table", "file_writer", "dataset_write"):
            self.check_unchanged(operation)

    def check_unchanged(self, operation: str) -> None:
        clean = self.moto.storage_options()
        if operation == "dataset_write":
            got = looseleaf.dataset(self.dataset, storage_options=clean).to_table()
            expect(
                got.select(["id", "v", "s", "k"]).sort_by("id"),
                self.truth[self.dataset].sort_by("id"),
                operation,
            )
        else:
            target = self.target
            got = looseleaf.open(target, storage_options=clean).to_table() if target in self.truth else None
            if target in self.truth:
                expect(got, self.truth[target], operation)

    def reader(self):
        return looseleaf.open(self.file, storage_options=self.options)

    def scan(self) -> None:
        expect(self.reader().read_all(batch_size=3_000).read_all(), self.truth[self.file], "scan")

    def projection(self) -> None:
        expect(
            self.reader().to_table(columns=["s", "id"]),
            self.truth[self.file].select(["s", "id"]),
            "projection",
        )

    def range(self) -> None:
        start = self.rng.randrange(0, 19_000)
        got = self.reader().read_range(start, 1_000).read_all()
        expect(got, self.truth[self.file].slice(start, 1_000), "range")

    def take(self) -> None:
        indices = [self.rng.randrange(0, 20_000) for _ in range(20)]
        expect(self.reader().take(indices), self.truth[self.file].take(indices), "take")

    def filtered(self) -> None:
        low = self.rng.randrange(0, 20_000)
        predicate = (pc.field("id") >= low) & (pc.field("id") < low + 3_000) | (pc.field("v") > 0.98)
        expect(self.reader().to_table(filter=predicate), self.truth[self.file].filter(predicate), "filtered")

    def dataset_scan(self) -> None:
        got = looseleaf.dataset(self.dataset, storage_options=self.options).to_table()
        truth = self.truth[self.dataset].sort_by("id")
        expect(got.select(["id", "v", "s", "k"]).sort_by("id"), truth, "dataset_scan")

    def write_table(self) -> None:
        self.version += 1
        self.target = f"s3://{BUCKET}/written/{self.version % 4}.leaf"
        new = table(10_000, self.version)
        looseleaf.write_table(new, self.target, storage_options=self.options, page_size=16 * 1024)
        self.truth[self.target] = new
        self.check_unchanged("write_table")

    def file_writer(self) -> None:
        self.version += 1
        self.target = f"s3://{BUCKET}/written/{self.version % 4}.leaf"
        new = table(40_000, self.version)
        with looseleaf.FileWriter(
            self.target, new.schema, storage_options=self.options, page_size=64 * 1024
        ) as w:
            for batch in new.to_batches(max_chunksize=5_000):
                w.write_batch(batch)
        self.truth[self.target] = new
        self.check_unchanged("file_writer")

    def dataset_write(self) -> None:
        self.version += 1
        old = self.truth[self.dataset]
        new = table(5_000, self.version)
        if self.rng.random() < 0.5 and old.num_rows < 30_000:
            new = new.set_column(0, "id", pc.add(new.column("id"), old.num_rows))
            mode, expected = "append", pa.concat_tables([old, new])
        else:
            mode, expected = "overwrite", new
        looseleaf.write_dataset(
            new, self.dataset, partitioning=["k"], existing_data=mode, storage_options=self.options
        )
        self.truth[self.dataset] = expected
        self.check_unchanged("dataset_write")


def expect(got: pa.Table, truth: pa.Table, what: str) -> None:
    if not got.equals(truth):
        raise AssertionError(f"{what}: wrong data ({got.num_rows} rows, expected {truth.num_rows})")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument(
        "--operations",
        default=",".join(OPERATIONS),
        help="the operations to draw from, separated by commas (default: all)",
    )
    args = parser.parse_args()
    moto = start_moto()
    moto.create_bucket(BUCKET)
    schedule = FaultSchedule(
        {"internal_error": 0.02, "slow_down": 0.02, "reset": 0.02, "short": 0.02, "stall": 0.002},
        seed=args.seed,
        burst=3,
        throttle_probability=0.001,
        throttle_seconds=1.0,
        stall_seconds=3.0,
    )
    started = time.monotonic()
    report_at = started + 60
    with proxy(moto, ProxySettings(fault=schedule)) as p:
        options = {**moto.storage_options(p.endpoint), "timeout": "2s", "connect_timeout": "1s"}
        operations = args.operations.split(",")
        unknown = set(operations) - set(OPERATIONS)
        if unknown:
            parser.error(f"unknown operations {sorted(unknown)}; they are {', '.join(OPERATIONS)}")
        soak = Soak(moto, p, options, args.seed, operations)
        try:
            while time.monotonic() - started < args.seconds:
                soak.step()
                if time.monotonic() >= report_at:
                    report(soak, p, started)
                    report_at += 60
        finally:
            report(soak, p, started)
            moto.stop()
    return 0


def report(soak: Soak, p, started: float) -> None:
    print(
        f"{time.monotonic() - started:.0f} s: {sum(soak.checked.values())} operations checked "
        f"{dict(soak.checked)}; errors {dict(soak.errors)}; {p.stats.count()} requests; "
        f"faults injected {dict(p.stats.injected)}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
