"""looseleaf side by side with Parquet (pyarrow), Lance file formats 2.1 and 2.2 (pylance) and Vortex.

    pip install . tpchgen-cli vortex-data matplotlib   # once (vortex and matplotlib are optional)
    python3 benches/compare.py --scale 1 --out benches/results     # full run, ~15 min at scale 1
    python3 benches/compare.py --quick --out /tmp/bench            # smoke run, small data, < 1 min

Data sets (generated once, cached in ``--data``, default ``benches/data/``):

- ``lineitem``: TPC-H lineitem at ``--scale`` from ``tpchgen-cli`` (string_view cast to string);
- ``embeddings``: 100,000 rows of ``id: int64``, ``embedding: fixed_size_list<float32, 768>``,
  ``caption: string`` (seeded random);
- ``nested``: 1,000,000 rows of ``id: int64``, ``tags: list<int64>``, ``words: list<string>`` and
  ``meta: struct<score: float64, name: string, flag: bool, count: int32>``, with null lists,
  null list items, null structs and null struct members (seeded random).
- ``wide``: a feature table of 50,000 rows and 300 columns: 100 each of int64, float64 and short
  strings (``v0``..``v4999``) (seeded random).

Each is written with every available system at its defaults (file size, write time), then every
measure runs in a **fresh process** (this script with ``--worker``; the spec comes on stdin, the
result goes back as JSON on stdout), so no cache, allocator or thread pool survives from one
measurement to the next. Timed measures run ``--repeats`` times, the systems interleaved, and
report the median:

- ``scan``: every batch of every column, open included;
- ``projection``: two columns (see ``PROJECTIONS``);
- ``take``: 1,000 random distinct rows in random order, open included, the rows returned in the
  order asked (see ``take`` in ``harness/formats.py`` for what each system does);
- ``stream_peak_rss``: a streaming full scan whose consumer sleeps after each batch; the peak
  resident memory of the read (the child's VmHWM, reset just before the read, minus its resident
  memory before it), and the child's ``ru_maxrss``;

each a *first read* — the first read of a fresh process (imports done, nothing read yet), open
included, as a script, a CLI call or a Spark task runs it — ``warm`` (the child first reads the
whole file, so it is in the page cache) and ``cold``
(the parent evicts the file from the page cache first, with ``posix_fadvise(DONTNEED)`` or, if
that does not work here, ``/proc/sys/vm/drop_caches``; whether eviction works is checked with
``mincore`` and reported); and, for scans, projections and takes, ``steady``: the median of
``STEADY_REPEATS`` more runs of the same read in the process that made the warm one (a process
that has read before: allocator, thread pools and page tables warm).

The same run measures the machine's limits (memory copy bandwidth with ``ctypes.memmove``, on one
thread and on every core; cold sequential read bandwidth of each data set's looseleaf file with
8 MiB reads) and, for lineitem, the looseleaf size of each column and its encodings, decode
throughput per encoding family (each column scanned alone) next to Parquet's, and dictionary-
preserving reads of low-cardinality strings against materialised ones.

Results: ``<out>/results.json``, ``<out>/results.md`` and a chart (``docs/benchmarks.png``, or
``<out>/benchmarks.png`` with ``--quick``). Ratios are "looseleaf advantage": the best peer's
time (or memory, or size) divided by looseleaf's, so above 1 means looseleaf is better. Absolute
numbers on shared machines are noisy: compare systems within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import random
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from harness import DATA, RESULTS, ROOT, build, data, fresh_process, machine
from harness.formats import EXTENSIONS, LANCE_VERSIONS, detect, import_system, open_stream, scan, take, write
from harness.page_cache import detect_cold_method, evict, read_file, resident_fraction
from harness.report import fmt_bytes, fmt_seconds, target, targets_section
from harness.timing import median_or_none, repeated, timed

#: ``lance`` writes Lance file format 2.1, ``lance22`` format 2.2 (pylance's stable default).
SYSTEMS = ["looseleaf", "parquet", "lance", "lance22", "vortex"]
PEERS = ["parquet", "lance", "lance22", "vortex"]
DATASETS = ["lineitem", "embeddings", "nested", "wide"]
MEASURES = [
    "size",
    "write",
    "scan_warm",
    "scan_steady",
    "scan_cold",
    "projection_warm",
    "projection_steady",
    "projection_cold",
    "take_warm",
    "take_steady",
    "take_cold",
    "stream_peak_rss",
]
#: Further runs of a read in the worker that measured the first one: the ``*_steady`` measures
#: (a process that has read before: allocator, thread pools and page tables warm).
STEADY_REPEATS = 5
PROJECTIONS = {
    "lineitem": ["l_shipdate", "l_extendedprice"],
    "embeddings": ["id", "caption"],
    "nested": ["id", "words"],
    "wide": ["i0", "s0"],
}
#: Columns of each kind in the ``wide`` data set (int64, float64, short strings).
WIDE_COLUMNS_PER_KIND = 100
#: Rows per batch of the slow streaming scan (embeddings rows are 3 KiB wide, wide rows 2 KiB).
STREAM_BATCH_ROWS = {"lineitem": 8192, "embeddings": 1024, "nested": 8192, "wide": 1024}
STREAM_SLEEP_SECONDS = 0.002
#: looseleaf's I/O budget in the slow streaming scan; the bar is this plus STREAM_BATCHES_ALLOWED batches.
STREAM_IO_BUFFER_BYTES = 32 * 1024 * 1024
STREAM_BATCHES_ALLOWED = 4
#: Rows per batch of Parquet and Lance scans: for each system and data set the best of
#: {1024, 8192, 65536, its default}, measured on this machine. Parquet is read by streaming
#: batches (``ParquetFile.iter_batches``): ``read_table``, which materialises the whole table, was
#: 2-10x slower here (page faults on a gigabyte of fresh memory). Lance's default of 1024 rows is
#: twice as slow on lineitem, but best on the 3 KiB rows of embeddings. looseleaf and Vortex use
#: their defaults, which were as fast as any of these.
PEER_BATCH_ROWS = {
    "parquet": {"lineitem": 8192, "embeddings": 8192, "nested": 8192, "wide": 8192},
    "lance": {"lineitem": 8192, "embeddings": 1024, "nested": 8192, "wide": 8192},
    "lance22": {"lineitem": 8192, "embeddings": 1024, "nested": 8192, "wide": 8192},
}
DICTIONARY_COLUMNS = ["l_shipmode", "l_returnflag", "l_shipinstruct"]
TAKE_ROWS = 1000
SEED = 20240611
MIB = 1024 * 1024


# --------------------------------------------------------------------------------------------
# Physical limits
# --------------------------------------------------------------------------------------------


def memcpy_bandwidth(size: int, threads: int, repeats: int = 5) -> float:
    """Best GB/s of copying ``size`` bytes between two buffers with ctypes.memmove on ``threads``
    threads (ctypes releases the GIL), each thread copying its share."""
    src = bytearray(os.urandom(MIB)) * (size // MIB)
    dst = bytearray(len(src))
    src_addr = ctypes.addressof((ctypes.c_char * len(src)).from_buffer(src))
    dst_addr = ctypes.addressof((ctypes.c_char * len(dst)).from_buffer(dst))
    share = len(src) // threads
    ctypes.memmove(dst_addr, src_addr, len(src))  # touch every page of dst

    def copy(i: int) -> None:
        ctypes.memmove(dst_addr + i * share, src_addr + i * share, share)

    best = 0.0
    for _ in range(repeats):
        workers = [threading.Thread(target=copy, args=(i,)) for i in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = max(best, share * threads / (time.perf_counter() - start) / 1e9)
    return best


def sequential_read(path: Path, method: str | None, repeats: int) -> dict[str, float]:
    """Median GB/s of reading the file sequentially with 8 MiB reads, cold (evicted first, if that
    works here) and warm."""
    size = path.stat().st_size
    cold, warm = [], []
    for _ in range(repeats):
        evict(path, method)
        start = time.perf_counter()
        read_file(path)
        cold.append(size / (time.perf_counter() - start) / 1e9)
        start = time.perf_counter()
        read_file(path)
        warm.append(size / (time.perf_counter() - start) / 1e9)
    return {"bytes": size, "cold_gbps": statistics.median(cold), "warm_gbps": statistics.median(warm)}


# --------------------------------------------------------------------------------------------
# Data sets
# --------------------------------------------------------------------------------------------


def _cached(path: Path, make: Any) -> Any:
    import pyarrow as pa

    if not path.exists():
        table = make()
        partial = path.with_suffix(".partial")
        with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        partial.rename(path)
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def embeddings(rows: int, data_dir: Path) -> Any:
    import numpy as np
    import pyarrow as pa

    def make() -> Any:
        rng = np.random.default_rng(SEED)
        dim = 768
        values = rng.standard_normal(rows * dim, dtype=np.float32)
        vocabulary = data.vocabulary(rng, 4096)
        lengths = rng.integers(4, 17, rows)
        picks = rng.integers(0, len(vocabulary), int(lengths.sum()))
        captions, at = [], 0
        for n in lengths:
            captions.append(" ".join(vocabulary[i] for i in picks[at : at + n]))
            at += n
        return pa.table(
            {
                "id": pa.array(np.arange(rows, dtype=np.int64)),
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(values), dim),
                "caption": pa.array(captions, pa.string()),
            }
        )

    return _cached(data_dir / f"embeddings_{rows}.arrow", make)


def nested(rows: int, data_dir: Path) -> Any:
    import numpy as np
    import pyarrow as pa

    def lists(rng: Any, max_len: int, null_rate: float, values: Any) -> Any:
        lengths = rng.integers(0, max_len + 1, rows)
        nulls = rng.random(rows) < null_rate
        lengths[nulls] = 0
        offsets = np.zeros(rows + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        items = values(int(offsets[-1]))
        return pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(nulls))

    def make() -> Any:
        rng = np.random.default_rng(SEED + 1)
        vocabulary = pa.array(data.vocabulary(rng, 5000), pa.string())

        def words(n: int) -> Any:
            picks = rng.integers(0, len(vocabulary), n)
            return vocabulary.take(pa.array(picks, mask=rng.random(n) < 0.02))

        tags = lists(rng, 8, 0.05, lambda n: pa.array(rng.integers(0, 1_000_000, n, dtype=np.int64)))
        word_lists = lists(rng, 5, 0.05, words)
        meta = pa.StructArray.from_arrays(
            [
                pa.array(rng.random(rows) * 100, mask=rng.random(rows) < 0.1),
                vocabulary.take(
                    pa.array(rng.integers(0, len(vocabulary), rows), mask=rng.random(rows) < 0.1)
                ),
                pa.array(rng.random(rows) < 0.5, mask=rng.random(rows) < 0.1),
                pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
            ],
            names=["score", "name", "flag", "count"],
            mask=pa.array(rng.random(rows) < 0.05),
        )
        return pa.table(
            {"id": pa.array(np.arange(rows, dtype=np.int64)), "tags": tags, "words": word_lists, "meta": meta}
        )

    return _cached(data_dir / f"nested_{rows}.arrow", make)


def wide(rows: int, data_dir: Path) -> Any:
    """A feature table: ``WIDE_COLUMNS_PER_KIND`` columns each of int64 (``i<n>``), float64
    (``f<n>``) and short strings (``s<n>``, a few thousand distinct values), seeded random."""
    import numpy as np
    import pyarrow as pa

    def make() -> Any:
        rng = np.random.default_rng(SEED)
        columns = {}
        for n in range(WIDE_COLUMNS_PER_KIND):
            columns[f"i{n}"] = pa.array(rng.integers(0, 1_000_000, rows))
            columns[f"f{n}"] = pa.array(rng.standard_normal(rows))
            columns[f"s{n}"] = pa.array([f"v{x}" for x in rng.integers(0, 5000, rows)], pa.string())
        return pa.table(columns)

    return _cached(data_dir / f"wide_{rows}.arrow", make)


# --------------------------------------------------------------------------------------------
# Dictionary-preserving reads (the formats' other reads are harness.formats')
# --------------------------------------------------------------------------------------------


def dictionary_read(system: str, path: str, columns: list[str], as_dictionary: bool) -> Any:
    """Reads ``columns`` whole, as dictionary arrays or materialised strings."""
    dictionary_columns = columns if as_dictionary else None
    if system == "looseleaf":
        import looseleaf

        return (
            looseleaf.open(path).read_all(columns=columns, dictionary_columns=dictionary_columns).read_all()
        )
    if system == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path, columns=columns, read_dictionary=dictionary_columns)
    raise ValueError(system)


# --------------------------------------------------------------------------------------------
# The worker: one measurement in a fresh process
# --------------------------------------------------------------------------------------------


def _proc_status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _head(table: Any) -> list[Any]:
    column = table.column(0).slice(0, 5)
    return [str(v) for v in column.to_pylist()]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import resource

    system, op, path = spec["system"], spec["op"], spec["path"]
    # Import everything the read needs before the clock starts.
    fresh_process.import_before_clock()
    import_system(system)
    if spec.get("warmup"):
        # One-time library start-up (pyarrow's compute registry, thread pools, runtimes) on a tiny
        # file of its own, so it is not charged to a measurement of the data set's file.
        for _ in open_stream(system, spec["warmup"], None, None, None):
            pass
        take(system, spec["warmup"], [3, 1])
    if spec.get("warm"):
        read_file(Path(path))
    result: dict[str, Any] = {}
    baseline = _proc_status("VmRSS")
    peak_reset = _reset_peak_rss()
    read, result["seconds"] = timed(lambda: read_once(system, op, path, spec))
    result.update(read)
    result["wall_seconds"] = result["seconds"]
    result["baseline_rss"] = baseline
    result["peak_rss"] = _proc_status("VmHWM") if peak_reset else None
    result["peak_rss_delta"] = result["peak_rss"] - baseline if peak_reset else None
    # Linux carries ru_maxrss across fork and exec: it starts at the parent's peak (the parent
    # holds the data sets), so the peak of the read is taken from VmHWM, reset just before it.
    result["ru_maxrss_inherited"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if spec.get("steady_repeats"):
        # The same read again in this process: what a process that has read before pays.
        steady = repeated(lambda: read_once(system, op, path, spec), spec["steady_repeats"])
        result["steady_seconds"] = statistics.median(steady)
    return result


def read_once(system: str, op: str, path: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One read of ``op`` (open included); what it returned, for checks and reports."""
    import pyarrow

    result: dict[str, Any] = {}
    if op == "scan" and system == "looseleaf":
        # The native stream, so that the read's own timings (scheduling, I/O wait, decode)
        # come back with the result.
        import looseleaf

        native = looseleaf.open(path).stream(spec.get("columns"), batch_size=spec.get("batch_size"))
        rows = size = 0
        for batch in pyarrow.RecordBatchReader.from_stream(native):
            rows += batch.num_rows
            size += batch.get_total_buffer_size()
        result["rows"], result["arrow_bytes"], result["io_stats"] = rows, size, native.io_stats()
    elif op == "scan":
        result["rows"], result["arrow_bytes"] = scan(
            system, path, spec.get("columns"), spec.get("batch_size")
        )
    elif op == "take":
        table = take(system, path, spec["indices"])
        result["rows"], result["head"] = table.num_rows, _head(table)
    elif op == "stream":
        rows = batches = biggest = 0
        native = None
        if system == "looseleaf":
            import looseleaf

            native = looseleaf.open(path).stream(
                batch_size=spec["batch_size"], io_buffer_bytes=spec["io_buffer_bytes"]
            )
            stream = pyarrow.RecordBatchReader.from_stream(native)
        else:
            stream = open_stream(system, path, None, spec["batch_size"], None)
        for batch in stream:
            rows += batch.num_rows
            batches += 1
            biggest = max(biggest, batch.get_total_buffer_size())
            del batch
            time.sleep(spec["sleep"])
        result.update(rows=rows, batches=batches, max_batch_bytes=biggest)
        if native is not None:
            result["io_stats"] = native.io_stats()
    elif op == "dictionary":
        table = dictionary_read(system, path, spec["columns"], spec["as_dictionary"])
        result["rows"], result["arrow_bytes"] = table.num_rows, table.get_total_buffer_size()
    else:
        raise ValueError(op)
    return result


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.data_dir: Path = args.data
        self.files_dir = self.data_dir / "files"
        self.files_dir.mkdir(parents=True, exist_ok=True)
        self.cold: dict[str, Any] = {}
        self.systems: dict[str, dict[str, Any]] = {}
        self.results: dict[str, Any] = {}

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    @property
    def active(self) -> list[str]:
        return [s for s in SYSTEMS if self.systems[s]["available"]]

    def sizes(self) -> dict[str, int | float]:
        if self.args.quick:
            return {"scale": 0.01, "embeddings": 2000, "nested": 20000, "wide": 2000}
        return {
            "scale": self.args.scale,
            "embeddings": self.args.embeddings_rows,
            "nested": self.args.nested_rows,
            "wide": self.args.wide_rows,
        }

    def load(self, dataset: str) -> Any:
        sizes = self.sizes()
        if dataset == "lineitem":
            return data.lineitem(float(sizes["scale"]), self.data_dir)
        if dataset == "embeddings":
            return embeddings(int(sizes["embeddings"]), self.data_dir)
        if dataset == "wide":
            return wide(int(sizes["wide"]), self.data_dir)
        return nested(int(sizes["nested"]), self.data_dir)

    def path(self, dataset: str, system: str) -> Path:
        sizes = self.sizes()
        tag = {
            "lineitem": f"sf{sizes['scale']:g}",
            "embeddings": sizes["embeddings"],
            "nested": sizes["nested"],
            "wide": sizes["wide"],
        }
        return self.files_dir / f"{dataset}_{tag[dataset]}.{EXTENSIONS[system]}"

    def warmup_path(self, system: str) -> Path:
        return self.files_dir / f"warmup.{EXTENSIONS[system]}"

    def write_warmups(self) -> None:
        """A tiny file per system, read by each worker before its measurement (see ``worker``)."""
        import pyarrow as pa

        table = pa.table(
            {
                "id": pa.array(range(100), pa.int64()),
                "name": pa.array([f"n{i}" for i in range(100)]),
                "tags": pa.array([[i, i + 1] for i in range(100)], pa.list_(pa.int64())),
            }
        )
        for system in self.active:
            with contextlib.suppress(Exception):
                write(system, table, self.warmup_path(system))

    def measure(self, spec: dict[str, Any], cold: bool, warmup: bool = True) -> dict[str, Any]:
        """One worker run; ``cold`` evicts the file first, otherwise the worker warms it;
        ``warmup`` has the worker read a tiny file first (library start-up not counted)."""
        spec = dict(spec)
        path = Path(spec["path"])
        if cold:
            evict(path, self.cold["method"])
            spec["resident_before"] = resident_fraction(path)
        else:
            spec["warm"] = True
        if warmup:
            spec["warmup"] = str(self.warmup_path(spec["system"]))
        result = fresh_process.run(__file__, spec)
        if cold:
            result["resident_before"] = spec["resident_before"]
        return result

    def repeated(
        self, specs: dict[str, dict[str, Any]], cold: bool, repeats: int
    ) -> dict[str, dict[str, Any]]:
        """Runs each system's spec ``repeats`` times, interleaving the systems, each a first read
        (no warm-up: the library's start-up is part of what a first read costs); median seconds."""
        samples: dict[str, list[dict[str, Any]]] = {system: [] for system in specs}
        for _ in range(repeats):
            for system, spec in specs.items():
                samples[system].append(self.measure(spec, cold, warmup=False))
        out = {}
        for system, runs in samples.items():
            errors = [r["error"] for r in runs if "error" in r]
            if errors:
                out[system] = {"value": None, "error": errors[0]}
                continue
            seconds = [r["seconds"] for r in runs]
            median = statistics.median(seconds)
            steady = [r["steady_seconds"] for r in runs if "steady_seconds" in r]
            out[system] = {
                "value": median,
                "unit": "s",
                "samples": seconds,
                "steady": median_or_none(steady),
                "steady_samples": steady,
                "peak_rss_delta": statistics.median(r["peak_rss_delta"] or 0 for r in runs),
                "last": {k: v for k, v in runs[-1].items() if k not in ("seconds",)},
            }
        return out

    # ----------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        args = self.args
        wanted = (
            args.systems.split(",") if args.systems else (["looseleaf", "parquet"] if args.quick else SYSTEMS)
        )
        unselected = "not selected (--systems; --quick runs looseleaf and parquet only)"
        self.systems = detect(SYSTEMS, wanted, unselected)
        self.log(
            "systems: "
            + ", ".join(f"{s} ({'yes' if i['available'] else 'no'})" for s, i in self.systems.items())
        )
        self.write_warmups()
        self.cold = detect_cold_method(self.data_dir)
        self.log(
            "cold reads: "
            + (f"possible via {self.cold['method']}" if self.cold["possible"] else "NOT possible")
        )
        limits: dict[str, Any] = {}
        copy_size = (16 if args.quick else 256) * MIB
        limits["memcpy_gbps_1_thread"] = memcpy_bandwidth(copy_size, 1)
        limits["memcpy_gbps_all_threads"] = memcpy_bandwidth(copy_size, os.cpu_count() or 1)
        limits["memcpy_bytes"] = copy_size
        self.log(
            f"memcpy: {limits['memcpy_gbps_1_thread']:.2f} GB/s on 1 thread, "
            f"{limits['memcpy_gbps_all_threads']:.2f} GB/s on {os.cpu_count()}"
        )
        datasets = args.datasets.split(",") if args.datasets else DATASETS
        results: dict[str, Any] = {
            "meta": self.meta(wanted),
            "limits": limits,
            "datasets": {},
        }
        self.results = results
        for dataset in datasets:
            results["datasets"][dataset] = self.run_dataset(dataset)
        limits["sequential_read"] = {
            dataset: sequential_read(self.path(dataset, "looseleaf"), self.cold["method"], self.repeats)
            for dataset in datasets
        }
        if "lineitem" in datasets and not args.skip_lineitem_extras:
            results["lineitem"] = self.lineitem_extras()
        results["ratios"] = ratios(results)
        results["targets"] = targets(results)
        return results

    @property
    def repeats(self) -> int:
        return self.args.repeats if self.args.repeats else (1 if self.args.quick else 3)

    def meta(self, wanted: list[str]) -> dict[str, Any]:
        return {
            **machine.describe(),
            "quick": self.args.quick,
            "sizes": self.sizes(),
            "repeats": self.repeats,
            "systems": self.systems,
            "cold": self.cold,
            "stream": {
                "batch_rows": STREAM_BATCH_ROWS,
                "sleep_seconds_per_batch": STREAM_SLEEP_SECONDS,
                "looseleaf_io_buffer_bytes": STREAM_IO_BUFFER_BYTES,
            },
            "projections": PROJECTIONS,
            "take_rows": TAKE_ROWS,
            "peer_batch_rows": PEER_BATCH_ROWS,
            "looseleaf_build": build.looseleaf_build(),
        }

    def run_dataset(self, dataset: str) -> dict[str, Any]:
        self.log(f"{dataset}: loading")
        table = self.load(dataset)
        info: dict[str, Any] = {
            "rows": table.num_rows,
            "arrow_bytes": table.get_total_buffer_size(),
            "schema": str(table.schema),
            "projection": PROJECTIONS[dataset],
            "projection_arrow_bytes": table.select(PROJECTIONS[dataset]).get_total_buffer_size(),
            "systems": {},
        }
        systems = info["systems"]
        # Writes interleaved across systems, `repeats` rounds, the median kept (one write each
        # put whichever system went first at the mercy of the moment).
        times: dict[str, list[float]] = {system: [] for system in self.active}
        for _ in range(self.repeats):
            for system in [s for s in self.active if "error" not in systems.get(s, {})]:
                path = self.path(dataset, system)
                try:
                    start = time.perf_counter()
                    write(system, table, path)
                    times[system].append(time.perf_counter() - start)
                    # fsync, and no head start
                    evict(path, "fadvise" if hasattr(os, "posix_fadvise") else None)
                except Exception as e:
                    self.log(f"{dataset}: {system} cannot write it: {type(e).__name__}: {e}")
                    systems[system] = {"error": f"write failed: {type(e).__name__}: {e}", "measures": {}}
        for system in self.active:
            if "error" in systems.get(system, {}):
                continue
            path = self.path(dataset, system)
            seconds = statistics.median(times[system])
            systems[system] = {
                "path": str(path),
                "measures": {
                    "size": {"value": path.stat().st_size, "unit": "bytes"},
                    "write": {"value": seconds, "unit": "s", "samples": times[system]},
                },
            }
            size = path.stat().st_size / 1e6
            self.log(f"{dataset}: wrote {system}: {size:.1f} MB in {seconds:.2f} s (median)")
        rng = random.Random(SEED)
        indices = rng.sample(range(table.num_rows), min(TAKE_ROWS, table.num_rows))
        info["take_expected_head"] = [str(v) for v in table.column(0).take(indices[:5]).to_pylist()]
        del table
        readable = [s for s in systems if "error" not in systems[s]]
        plans = [
            ("scan", {"op": "scan"}),
            ("projection", {"op": "scan", "columns": PROJECTIONS[dataset]}),
            ("take", {"op": "take", "indices": indices}),
        ]
        for name, base in plans:
            for temperature in ("warm", "cold"):
                specs = {s: {**base, "system": s, "path": systems[s]["path"]} for s in readable}
                if temperature == "warm":
                    for spec in specs.values():
                        spec["steady_repeats"] = STEADY_REPEATS
                for s in ("parquet", *LANCE_VERSIONS):
                    if s in specs and base["op"] == "scan":
                        specs[s]["batch_size"] = PEER_BATCH_ROWS[s][dataset]
                measured = self.repeated(specs, temperature == "cold", self.repeats)
                for system, value in measured.items():
                    value["cache"] = (
                        temperature
                        if temperature == "warm" or self.cold["possible"]
                        else "warm (cold impossible)"
                    )
                    systems[system]["measures"][f"{name}_{temperature}"] = value
                    if value.get("steady") is not None:
                        systems[system]["measures"][f"{name}_steady"] = {
                            "value": value["steady"],
                            "unit": "s",
                            "samples": value["steady_samples"],
                            "cache": "warm, in a process that has read it before",
                        }
                self.log(f"{dataset}: {name} {temperature}: " + summary(measured))
        stream = {
            "op": "stream",
            "batch_size": STREAM_BATCH_ROWS[dataset],
            "sleep": STREAM_SLEEP_SECONDS,
        }
        for system in readable:
            spec = {**stream, "system": system, "path": systems[system]["path"]}
            if system == "looseleaf":
                spec["io_buffer_bytes"] = STREAM_IO_BUFFER_BYTES
            run = self.measure(spec, cold=False)
            if "error" in run:
                value: dict[str, Any] = {"value": None, "error": run["error"]}
            else:
                value = {
                    "value": run["peak_rss_delta"],
                    "unit": "bytes",
                    "seconds": run["seconds"],
                    "last": run,
                }
            systems[system]["measures"]["stream_peak_rss"] = value
        self.log(
            f"{dataset}: slow stream peak RSS over baseline: "
            + ", ".join(
                f"{s} {fmt_bytes(systems[s]['measures']['stream_peak_rss']['value'])}" for s in readable
            )
        )
        takes = {s: systems[s]["measures"]["take_warm"].get("last", {}).get("head") for s in readable}
        info["take_consistent"] = all(
            h == info["take_expected_head"] for h in takes.values() if h is not None
        )
        if not info["take_consistent"]:
            self.log(f"{dataset}: WARNING take results differ: {takes}")
        return info

    def lineitem_extras(self) -> dict[str, Any]:
        import pyarrow.parquet as pq

        import looseleaf

        self.log("lineitem: columns, encodings, per-column decode, dictionary reads")
        leaf = self.path("lineitem", "looseleaf")
        parquet = self.path("lineitem", "parquet")
        table = self.load("lineitem")
        column_bytes = {name: table.column(name).nbytes for name in table.column_names}
        del table
        parquet_md = pq.ParquetFile(parquet).metadata
        parquet_sizes = {parquet_md.schema.column(j).name: 0 for j in range(parquet_md.num_columns)}
        for i in range(parquet_md.num_row_groups):
            for j in range(parquet_md.num_columns):
                column = parquet_md.row_group(i).column(j)
                parquet_sizes[column.path_in_schema] += column.total_compressed_size
        columns = []
        for column in looseleaf.open(leaf).metadata["columns"]:
            encodings: dict[str, int] = {}
            for page in column["pages"]:
                encodings[page["encoding"]] = encodings.get(page["encoding"], 0) + page["bytes"]
            dominant = max(encodings, key=encodings.__getitem__)
            columns.append(
                {
                    "name": column["field"],
                    "type": column["type"],
                    "pages": column["num_pages"],
                    "bytes": column["bytes"],
                    "parquet_bytes": parquet_sizes.get(column["field"]),
                    "arrow_bytes": column_bytes[column["field"]],
                    "encodings": encodings,
                    "dominant_encoding": dominant,
                    "family": re.match(r"[a-z_0-9]+", dominant).group(0),
                }
            )
        decode_systems = [s for s in ("looseleaf", "parquet") if self.systems[s]["available"]]
        for column in columns:
            specs = {
                s: {
                    "op": "scan",
                    "system": s,
                    "path": str(self.path("lineitem", s)),
                    "columns": [column["name"]],
                    "batch_size": PEER_BATCH_ROWS["parquet"]["lineitem"] if s == "parquet" else None,
                }
                for s in decode_systems
            }
            measured = self.repeated(specs, False, self.repeats)
            for system, value in measured.items():
                column[f"{system}_seconds"] = value["value"]
                column[f"{system}_mbps"] = (
                    column["arrow_bytes"] / value["value"] / 1e6 if value["value"] else None
                )
        families: dict[str, dict[str, Any]] = {}
        for column in columns:
            family = families.setdefault(
                column["family"],
                {"columns": [], "arrow_bytes": 0, "looseleaf_seconds": 0.0, "parquet_seconds": 0.0},
            )
            family["columns"].append(column["name"])
            family["arrow_bytes"] += column["arrow_bytes"]
            for system in decode_systems:
                family[f"{system}_seconds"] += column.get(f"{system}_seconds") or 0.0
        for family in families.values():
            for system in decode_systems:
                seconds = family[f"{system}_seconds"]
                family[f"{system}_mbps"] = family["arrow_bytes"] / seconds / 1e6 if seconds else None
        self.log(
            "lineitem: decode MB/s per family: "
            + ", ".join(f"{f} {v['looseleaf_mbps']:.0f}" for f, v in families.items())
        )
        dictionary: dict[str, Any] = {"columns": DICTIONARY_COLUMNS}
        for system in decode_systems:
            specs = {}
            for as_dictionary in (False, True):
                specs[f"{system}:{as_dictionary}"] = {
                    "op": "dictionary",
                    "system": system,
                    "path": str(self.path("lineitem", system)),
                    "columns": DICTIONARY_COLUMNS,
                    "as_dictionary": as_dictionary,
                }
            measured = self.repeated(specs, False, self.repeats)
            for key, value in measured.items():
                kind = "dictionary" if key.endswith("True") else "materialised"
                dictionary[f"{system}_{kind}"] = {
                    "seconds": value["value"],
                    "arrow_bytes": value.get("last", {}).get("arrow_bytes"),
                    "peak_rss_delta": value.get("peak_rss_delta"),
                }
        leaf_dict, leaf_plain = (
            dictionary.get("looseleaf_dictionary"),
            dictionary.get("looseleaf_materialised"),
        )
        if leaf_dict and leaf_plain and leaf_dict["seconds"]:
            dictionary["time_ratio"] = leaf_plain["seconds"] / leaf_dict["seconds"]
            dictionary["arrow_bytes_ratio"] = leaf_plain["arrow_bytes"] / leaf_dict["arrow_bytes"]
            if leaf_dict["peak_rss_delta"]:
                dictionary["peak_rss_ratio"] = leaf_plain["peak_rss_delta"] / leaf_dict["peak_rss_delta"]
        sizes = {
            s: self.results["datasets"]["lineitem"]["systems"][s]["measures"].get("size", {}).get("value")
            for s in self.active
        }
        return {"columns": columns, "families": families, "dictionary": dictionary, "total_sizes": sizes}


# --------------------------------------------------------------------------------------------
# Ratios, targets, reports
# --------------------------------------------------------------------------------------------


def measure_value(results: dict[str, Any], dataset: str, system: str, measure: str) -> float | None:
    entry = results["datasets"][dataset]["systems"].get(system, {}).get("measures", {}).get(measure)
    return None if entry is None else entry.get("value")


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    """For each data set and measure: the best peer and looseleaf's advantage over it (best peer's
    value / looseleaf's: every measure is lower-is-better, so above 1 means looseleaf is better;
    for scans this is looseleaf's throughput / the best peer's throughput)."""
    out: dict[str, Any] = {}
    for dataset in results["datasets"]:
        out[dataset] = {}
        for measure in MEASURES:
            leaf = measure_value(results, dataset, "looseleaf", measure)
            peers = {p: measure_value(results, dataset, p, measure) for p in PEERS}
            peers = {p: v for p, v in peers.items() if v}
            if not leaf or not peers:
                continue
            best = min(peers, key=peers.__getitem__)
            out[dataset][measure] = {
                "looseleaf": leaf,
                "best_peer": best,
                "best_peer_value": peers[best],
                "advantage": peers[best] / leaf,
            }
    return out


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The bars looseleaf is meant to clear, each with the measured figure and whether it does."""
    out: list[dict[str, Any]] = []
    r = results["ratios"]
    limits = results["limits"]
    datasets = results["datasets"]

    def add(name: str, measured: str, bar: str, met: bool | None) -> None:
        out.append(target(name, measured, bar, met))

    for dataset in datasets:
        entry = r.get(dataset, {}).get("scan_warm")
        if entry:
            add(
                f"{dataset}: full scan warm vs best peer ({entry['best_peer']})",
                f"{entry['advantage']:.2f}x",
                "≥ 1.5x",
                entry["advantage"] >= 1.5,
            )
    # The bars of the performance round (issue 15), first read and warm process alike.
    round_bars = [
        ("scan_steady", "full scan warm process", 1.5),
        ("projection_warm", "projection first read", 1.5),
        ("projection_steady", "projection warm process", 1.5),
        ("take_steady", f"take {TAKE_ROWS} rows warm process", 2.0),
        ("write", "write", 1.0),
        ("size", "file size", 1.0),
    ]
    for dataset in datasets:
        for measure, label, bar in round_bars:
            entry = r.get(dataset, {}).get(measure)
            if entry:
                add(
                    f"{dataset}: {label} vs best peer ({entry['best_peer']})",
                    f"{entry['advantage']:.2f}x",
                    f"≥ {bar:g}x",
                    entry["advantage"] >= bar,
                )
    for dataset in datasets:
        first = measure_value(results, dataset, "looseleaf", "scan_warm")
        steady = measure_value(results, dataset, "looseleaf", "scan_steady")
        if first and steady:
            add(
                f"{dataset}: first full scan of a process vs a warm process's",
                f"{first / steady:.2f}x the time ({fmt_seconds(first)} vs {fmt_seconds(steady)})",
                "≤ 1.25x",
                first <= 1.25 * steady,
            )
    for dataset in datasets:
        systems = results["datasets"][dataset]["systems"]
        scan = systems.get("looseleaf", {}).get("measures", {}).get("scan_warm", {})
        stats = scan.get("last", {}).get("io_stats")
        if stats and scan.get("value"):
            # The scheduling loop's running time over the scan's wall time (the last run).
            wall = scan["last"]["wall_seconds"]
            share = stats["scheduling_seconds"] / wall
            add(
                f"{dataset}: scheduling share of a full scan (warm)",
                f"{stats['scheduling_seconds'] * 1e3:.2f} ms of {wall * 1e3:.1f} ms = {share:.2%}"
                f" (decode tasks {stats['decode_seconds'] * 1e3:.0f} ms CPU,"
                f" waiting for I/O {stats['io_wait_seconds'] * 1e3:.1f} ms)",
                "< 1%",
                share < 0.01,
            )
    if "embeddings" in datasets:
        seconds = measure_value(results, "embeddings", "looseleaf", "scan_warm")
        if seconds:
            gbps = datasets["embeddings"]["arrow_bytes"] / seconds / 1e9
            memcpy = limits["memcpy_gbps_1_thread"]
            add(
                "embeddings: full scan warm vs memcpy (1 thread)",
                f"{gbps:.2f} GB/s = {gbps / memcpy:.0%} of {memcpy:.2f} GB/s",
                "≥ 50%",
                gbps >= 0.5 * memcpy,
            )
        seconds = measure_value(results, "embeddings", "looseleaf", "scan_cold")
        seq = limits.get("sequential_read", {}).get("embeddings")
        if seconds and seq:
            size = measure_value(results, "embeddings", "looseleaf", "size")
            gbps = size / seconds / 1e9
            cold_ok = results["meta"]["cold"]["possible"]
            add(
                "embeddings: full scan cold vs sequential read of the file",
                f"{gbps:.2f} GB/s = {gbps / seq['cold_gbps']:.0%} of {seq['cold_gbps']:.2f} GB/s"
                + ("" if cold_ok else " (cold impossible here: warm)"),
                "≥ 90%",
                gbps >= 0.9 * seq["cold_gbps"] if cold_ok else None,
            )
    for dataset in datasets:
        for temperature in ("warm", "cold"):
            entry = r.get(dataset, {}).get(f"take_{temperature}")
            if entry:
                add(
                    f"{dataset}: take {TAKE_ROWS} rows {temperature} vs best peer ({entry['best_peer']})",
                    f"{entry['advantage']:.2f}x faster",
                    "≥ 2x",
                    entry["advantage"] >= 2,
                )
    for dataset, info in datasets.items():
        stream = info["systems"].get("looseleaf", {}).get("measures", {}).get("stream_peak_rss")
        if stream and stream.get("value") is not None:
            batch = stream["last"].get("max_batch_bytes", 0)
            bound = STREAM_IO_BUFFER_BYTES + STREAM_BATCHES_ALLOWED * batch
            add(
                f"{dataset}: slow streaming scan peak RSS",
                f"{fmt_bytes(stream['value'])} over baseline",
                f"≤ I/O budget {fmt_bytes(STREAM_IO_BUFFER_BYTES)} + {STREAM_BATCHES_ALLOWED} batches "
                f"of {fmt_bytes(batch)} = {fmt_bytes(bound)}",
                stream["value"] <= bound,
            )
    if "lineitem" in datasets:
        leaf = measure_value(results, "lineitem", "looseleaf", "size")
        parquet = measure_value(results, "lineitem", "parquet", "size")
        if leaf and parquet:
            add(
                "lineitem: file size vs Parquet",
                f"{leaf / parquet:.0%} of Parquet's",
                "≤ 100%",
                leaf <= parquet,
            )
    for dataset in datasets:
        leaf = measure_value(results, dataset, "looseleaf", "scan_warm")
        parquet = measure_value(results, dataset, "parquet", "scan_warm")
        if leaf and parquet:
            add(
                f"{dataset}: full scan decode (warm) vs pyarrow Parquet",
                f"{parquet / leaf:.2f}x faster",
                "> 1x",
                parquet > leaf,
            )
    dictionary = results.get("lineitem", {}).get("dictionary", {})
    if "time_ratio" in dictionary:
        add(
            "lineitem: dictionary read vs materialised (time)",
            f"{dictionary['time_ratio']:.1f}x faster",
            "several x (≥ 3x)",
            dictionary["time_ratio"] >= 3,
        )
        add(
            "lineitem: dictionary read vs materialised (Arrow bytes)",
            f"{dictionary['arrow_bytes_ratio']:.1f}x smaller",
            "several x (≥ 3x)",
            dictionary["arrow_bytes_ratio"] >= 3,
        )
        if "peak_rss_ratio" in dictionary:
            add(
                "lineitem: dictionary read vs materialised (peak RSS)",
                f"{dictionary['peak_rss_ratio']:.1f}x smaller",
                "several x (≥ 3x)",
                dictionary["peak_rss_ratio"] >= 3,
            )
    return out


def summary(measured: dict[str, dict[str, Any]]) -> str:
    return ", ".join(
        f"{s} {fmt_seconds(v['value'])}" if v["value"] else f"{s} ERROR {v['error']}"
        for s, v in measured.items()
    )


def cell(results: dict[str, Any], dataset: str, system: str, measure: str) -> str:
    info = results["datasets"][dataset]
    entry = info["systems"].get(system, {}).get("measures", {}).get(measure)
    if entry is None:
        return "n/a"
    value = entry.get("value")
    if value is None:
        return "error"
    if measure == "size":
        return f"{value / 1e6:.1f} MB"
    if measure == "stream_peak_rss":
        return fmt_bytes(value)
    if measure.startswith(("scan", "projection")):
        size = info["arrow_bytes"] if measure.startswith("scan") else info["projection_arrow_bytes"]
        return f"{fmt_seconds(value)} ({size / value / 1e6:,.0f} MB/s)"
    return fmt_seconds(value)


LABELS = {
    "size": "file size",
    "write": "write",
    "scan_warm": "full scan, first read, warm",
    "scan_steady": "full scan, warm process",
    "scan_cold": "full scan, first read, cold",
    "projection_warm": "projection, first read, warm",
    "projection_steady": "projection, warm process",
    "projection_cold": "projection, first read, cold",
    "take_warm": f"take {TAKE_ROWS} rows, first read, warm",
    "take_steady": f"take {TAKE_ROWS} rows, warm process",
    "take_cold": f"take {TAKE_ROWS} rows, first read, cold",
    "stream_peak_rss": "slow stream, peak RSS",
}


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    limits = results["limits"]
    lines = [
        "# looseleaf side by side: results",
        "",
        machine.headline(meta)
        + "; "
        + (
            "**quick mode** (small data, 1 repetition)"
            if meta["quick"]
            else f"median of {meta['repeats']} runs"
        )
        + ". "
        "Every measure ran in a fresh process. The machine is shared: absolute numbers are noisy; "
        "compare systems within this run.",
        "",
        f"looseleaf build: extension built {meta['looseleaf_build'].get('extension_built')} UTC, "
        f"checkout at {meta['looseleaf_build'].get('commit')} "
        f"({meta['looseleaf_build'].get('uncommitted_rust_files', '?')} uncommitted Rust files)"
        + (
            f"; the installed package was rebuilt during the run "
            f"({meta['looseleaf_build']['installed_changed_during_run']} UTC), which did not affect it: "
            "the run used a copy of the package taken at its start."
            if "installed_changed_during_run" in meta["looseleaf_build"]
            else "; the run used a copy of the package taken at its start."
        ),
        "",
        "Systems: "
        + "; ".join(
            f"{s}: {i.get('version', '?')}" + ("" if i["available"] else f" — **not run**: {i.get('reason')}")
            for s, i in meta["systems"].items()
        )
        + ".",
        "",
        "Cold reads: "
        + (
            f"possible (page cache dropped per file with `{meta['cold']['method']}`, checked with mincore)."
            if meta["cold"]["possible"]
            else "**not possible on this machine**; the 'cold' rows are warm. "
        )
        + " ("
        + "; ".join(meta["cold"]["notes"])
        + ")",
        "",
        "## Physical limits",
        "",
        f"- memory copy (ctypes.memmove of {fmt_bytes(limits['memcpy_bytes'])}): "
        f"{limits['memcpy_gbps_1_thread']:.2f} GB/s on 1 thread, "
        f"{limits['memcpy_gbps_all_threads']:.2f} GB/s on {meta['cpus']} threads",
    ]
    for dataset, seq in limits.get("sequential_read", {}).items():
        lines.append(
            f"- sequential read of the {dataset} looseleaf file ({seq['bytes'] / 1e6:.0f} MB, 8 MiB reads): "
            f"{seq['cold_gbps']:.2f} GB/s cold, {seq['warm_gbps']:.2f} GB/s from the page cache"
        )
    lines += [
        "",
        "## Side by side",
        "",
        "Scans: median time, open included, and throughput in decoded Arrow bytes of the data set per "
        f"second (rows per batch: Parquet {PEER_BATCH_ROWS['parquet']}, Lance {PEER_BATCH_ROWS['lance']}, "
        "looseleaf and Vortex their defaults; every batch dropped once counted). "
        "*Advantage* = best peer's time (memory, "
        "size) / looseleaf's: above 1, looseleaf is better; for scans that is looseleaf's throughput "
        "/ the best peer's.",
    ]
    systems = [s for s in SYSTEMS if meta["systems"][s]["available"]]
    for dataset, info in results["datasets"].items():
        lines += [
            "",
            f"### {dataset}: {info['rows']:,} rows, {info['arrow_bytes'] / 1e6:,.1f} MB as Arrow "
            f"(projection: {', '.join(info['projection'])})",
            "",
            "| measure | " + " | ".join(systems) + " | best peer | looseleaf advantage |",
            "|---|" + "---:|" * len(systems) + "---|---:|",
        ]
        for measure in MEASURES:
            entry = results["ratios"].get(dataset, {}).get(measure)
            best = entry["best_peer"] if entry else "-"
            advantage = f"{entry['advantage']:.2f}x" if entry else "-"
            row = [cell(results, dataset, s, measure) for s in systems]
            lines.append(f"| {LABELS[measure]} | " + " | ".join(row) + f" | {best} | {advantage} |")
        if not info.get("take_consistent", True):
            lines.append("\n**Warning**: the systems' take results differ (see results.json).")
    lines += [
        "",
        f"Slow stream: a full scan in batches of {meta['stream']['batch_rows']} rows, the consumer sleeping "
        f"{meta['stream']['sleep_seconds_per_batch'] * 1000:.0f} ms per batch; peak RSS of the read over the "
        f"process's RSS before it; looseleaf with io_buffer_bytes = "
        f"{fmt_bytes(meta['stream']['looseleaf_io_buffer_bytes'])}, the others at their defaults.",
    ]
    extras = results.get("lineitem")
    if extras:
        lines += [
            "",
            "## lineitem: columns and encodings",
            "",
            "Total file sizes: "
            + ", ".join(f"{s} {v / 1e6:.1f} MB" for s, v in extras["total_sizes"].items() if v)
            + ". Per column, looseleaf (its encodings, from the file's metadata) next to Parquet "
            "(compressed column chunks); decode throughput: the column alone scanned warm in a fresh "
            "process, decoded Arrow MB/s.",
            "",
            "| column | type | looseleaf bytes | encoding(s) | Parquet bytes "
            "| looseleaf MB/s | Parquet MB/s |",
            "|---|---|---:|---|---:|---:|---:|",
        ]
        for c in extras["columns"]:
            encodings = "; ".join(f"`{e}`" for e in c["encodings"])
            lines.append(
                f"| {c['name']} | {c['type']} | {c['bytes'] / 1e6:.2f} MB | {encodings} | "
                f"{(c['parquet_bytes'] or 0) / 1e6:.2f} MB | {c.get('looseleaf_mbps') or 0:,.0f} | "
                f"{c.get('parquet_mbps') or 0:,.0f} |"
            )
        lines += [
            "",
            "Decode throughput per encoding family (columns grouped by their dominant encoding; Arrow "
            "bytes / summed single-column scan times):",
            "",
            "| family | columns | Arrow MB | looseleaf MB/s | Parquet MB/s (same columns) |",
            "|---|---|---:|---:|---:|",
        ]
        for family, f in extras["families"].items():
            lines.append(
                f"| {family} | {', '.join(f['columns'])} | {f['arrow_bytes'] / 1e6:,.1f} | "
                f"{f.get('looseleaf_mbps') or 0:,.0f} | {f.get('parquet_mbps') or 0:,.0f} |"
            )
        d = extras["dictionary"]
        lines += [
            "",
            f"Dictionary-preserving reads of {', '.join(d['columns'])} (whole columns, warm, fresh process):",
            "",
            "| read | time | Arrow bytes | peak RSS over baseline |",
            "|---|---:|---:|---:|",
        ]
        for key in (
            "looseleaf_materialised",
            "looseleaf_dictionary",
            "parquet_materialised",
            "parquet_dictionary",
        ):
            if key in d:
                v = d[key]
                label = key.replace("_", ": ").replace("parquet: dictionary", "parquet: read_dictionary")
                lines.append(
                    f"| {label} | {fmt_seconds(v['seconds'])} | {fmt_bytes(v['arrow_bytes'])} | "
                    f"{fmt_bytes(v['peak_rss_delta'])} |"
                )
        if "time_ratio" in d:
            lines.append(
                f"\nlooseleaf dictionary vs materialised: {d['time_ratio']:.1f}x faster, "
                f"{d['arrow_bytes_ratio']:.1f}x fewer Arrow bytes"
                + (f", {d['peak_rss_ratio']:.1f}x less peak RSS." if "peak_rss_ratio" in d else ".")
            )
    lines += targets_section(results["targets"])
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> str | None:
    """A bar chart of the main measures (absolute values, one bar per system per data set)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no chart: {e}"
    panels = [
        ("scan_warm", "full scan, warm (MB/s, higher is better)", "throughput"),
        ("scan_cold", "full scan, cold (MB/s, higher is better)", "throughput"),
        ("projection_warm", "projection, warm (MB/s, higher is better)", "throughput"),
        ("take_warm", f"take {TAKE_ROWS} rows, warm (ms, lower is better)", "ms"),
        ("stream_peak_rss", "slow streaming scan peak RSS (MiB, lower is better)", "mib"),
        ("size", "file size (MB, lower is better)", "mb"),
    ]
    systems = [s for s in SYSTEMS if results["meta"]["systems"][s]["available"]]
    datasets = list(results["datasets"])
    colors = {
        "looseleaf": "#2a9d8f",
        "parquet": "#e76f51",
        "lance": "#457b9d",
        "lance22": "#a8dadc",
        "vortex": "#8d6cab",
    }
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    width = 0.8 / max(1, len(systems))
    for ax, (measure, title, kind) in zip(axes.flat, panels, strict=True):
        for k, system in enumerate(systems):
            heights = []
            for dataset in datasets:
                value = measure_value(results, dataset, system, measure)
                info = results["datasets"][dataset]
                if not value:
                    heights.append(0)
                elif kind == "throughput":
                    size = (
                        info["projection_arrow_bytes"]
                        if measure.startswith("projection")
                        else info["arrow_bytes"]
                    )
                    heights.append(size / value / 1e6)
                elif kind == "ms":
                    heights.append(value * 1000)
                elif kind == "mib":
                    heights.append(value / MIB)
                else:
                    heights.append(value / 1e6)
            xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(datasets))]
            ax.bar(xs, heights, width, label=system, color=colors[system])
        if measure == "stream_peak_rss":
            ax.axhline(STREAM_IO_BUFFER_BYTES / MIB, color="#2a9d8f", linestyle="--", linewidth=1)
            ax.text(-0.4, STREAM_IO_BUFFER_BYTES / MIB, " looseleaf I/O budget", va="bottom", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(datasets)), datasets)
        if kind == "ms":
            ax.set_yscale("log")
    axes.flat[0].legend()
    fig.suptitle(
        f"looseleaf vs peers ({results['meta']['date']}, {results['meta']['cpus']} CPUs, "
        "noisy shared machine)"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor of lineitem (default 1)")
    parser.add_argument("--embeddings-rows", type=int, default=100_000)
    parser.add_argument("--nested-rows", type=int, default=1_000_000)
    parser.add_argument("--wide-rows", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument("--data", type=Path, default=DATA, help="data set cache")
    parser.add_argument(
        "--chart", type=Path, help="chart path (default docs/benchmarks.png; <out>/ with --quick)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small data, one repetition, looseleaf and parquet only"
    )
    parser.add_argument("--repeats", type=int, help="runs per timed measure (default 3; 1 with --quick)")
    parser.add_argument("--systems", help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--datasets", help=f"comma-separated subset of {','.join(DATASETS)}")
    parser.add_argument(
        "--skip-lineitem-extras", action="store_true", help="no per-column/dictionary measures"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fresh_process.serve(worker)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    args.data.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    installed = build.pin_looseleaf(args.data / "pinned")
    results = Run(args).run()
    results["meta"]["wall_seconds"] = time.perf_counter() - started
    measured = results["meta"]["looseleaf_build"]
    measured["pinned_from"] = str(installed)
    build.note_reinstall(measured, installed)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    chart_path = args.chart or (
        args.out / "benchmarks.png" if args.quick else ROOT / "docs" / "benchmarks.png"
    )
    problem = chart(results, chart_path)
    results["meta"]["chart"] = problem or str(chart_path)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (args.out / "results.md").write_text(markdown(results))
    print(markdown(results))
    print(
        f"results: {args.out / 'results.json'}, {args.out / 'results.md'}; chart: {results['meta']['chart']}"
    )


if __name__ == "__main__":
    main()
