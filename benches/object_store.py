"""Reads from an object store, side by side: looseleaf, pyarrow Parquet, Lance 2.1 and Vortex
on the same S3 endpoint (moto's server behind a proxy that adds a first-byte latency with a tail
and caps each response's bandwidth), in fresh processes.

    python3 benches/object_store.py                 # lineitem SF1, 25 ms, 80 MiB/s, 3 runs
    python3 benches/object_store.py --quick         # a small run (CI smoke test)

Measures, per system: open (to the schema), full scan, two-column projection, ``take`` of 1,000
rows, and open + 10 columns of a 10,000-column file; each with its time, its requests and the
bytes they fetched (counted by the proxy). For looseleaf also the requests of each phase of the
wide read (open, the 10 columns' metadata) and their round trips, and the adaptive I/O depth
against fixed depths on the scan and the take. Results: ``results.json`` and ``results.md`` in
``--out``; ratios are the best peer's time over looseleaf's (above 1: looseleaf is faster).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import DATA, RESULTS, ROOT, formats, fresh_process
from harness.data import lineitem
from harness.systems import detect

# The S3 server and its proxy are the test suite's (tests/s3_server.py).
sys.path.insert(0, str(ROOT / "tests"))

SYSTEMS = ["looseleaf", "parquet", "lance", "vortex"]
BUCKET = "bench"
PROJECTION = ["l_orderkey", "l_extendedprice"]
TAKE_ROWS = 1000
WIDE_COLUMNS = 10_000
WIDE_ROWS = 1_000
WIDE_READ = [f"c{i:05d}" for i in range(0, WIDE_COLUMNS, WIDE_COLUMNS // 10)]
DEPTHS: list[Any] = [8, 16, 32, 64, 128, 256, "auto"]
#: What each system imports to read from an object store (the first module names its version).
NEEDS = {
    "looseleaf": ("looseleaf",),
    "parquet": ("pyarrow", "pyarrow.parquet"),
    "lance": ("lance", "lance.file"),
    "vortex": ("vortex", "vortex.store"),
}
SEED = 20261124


# --- the worker: one measure in a fresh process ------------------------------------------------


def _looseleaf_options(endpoint: str) -> dict[str, str]:
    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    return {
        "aws_endpoint": endpoint,
        "aws_allow_http": "true",
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_region": REGION,
    }


def _pyarrow_fs(endpoint: str) -> Any:
    import pyarrow.fs as pafs

    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    return pafs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region=REGION,
        endpoint_override=endpoint.removeprefix("http://"),
        scheme="http",
    )


def _vortex_store(endpoint: str) -> Any:
    from vortex.store import S3Store

    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    return S3Store(
        BUCKET,
        endpoint=endpoint,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        region=REGION,
        client_options={"allow_http": True},
    )


def _open(system: str, key: str, endpoint: str, columns: list[str] | None, depth: Any) -> Any:
    """Opens ``key`` of the bucket with ``system``; returns an object the measures use."""
    if system == "looseleaf":
        import looseleaf

        options = {} if depth is None else {"io_depth": depth}
        return looseleaf.open(f"s3://{BUCKET}/{key}", storage_options=_looseleaf_options(endpoint), **options)
    if system == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(f"{BUCKET}/{key}", filesystem=_pyarrow_fs(endpoint), pre_buffer=True)
    if system == "lance":
        from lance.file import LanceFileReader

        options = {**_looseleaf_options(endpoint), "allow_http": "true"}
        return LanceFileReader(f"s3://{BUCKET}/{key}", storage_options=options, columns=columns)
    if system == "vortex":
        import vortex

        return vortex.open(key, store=_vortex_store(endpoint))
    raise ValueError(system)


def _schema(system: str, handle: Any) -> Any:
    if system == "looseleaf":
        return handle.schema
    if system == "parquet":
        return handle.schema_arrow
    if system == "lance":
        return handle.metadata().schema
    return handle.dtype.to_arrow_schema()


#: The I/O counters of the last looseleaf scan of this process.
_LAST_STATS: dict[str, Any] = {}


def _scan(system: str, handle: Any, columns: list[str] | None) -> int:
    """Reads every row of ``columns``; returns the bytes of Arrow data read."""
    if system == "looseleaf":
        import pyarrow as pa

        stream = handle.stream(columns)
        size = sum(b.get_total_buffer_size() for b in pa.RecordBatchReader.from_stream(stream))
        _LAST_STATS.update(stream.io_stats())
        return size
    if system == "parquet":
        return handle.read(columns=columns).nbytes
    if system == "lance":
        batches = handle.read_all(batch_size=8192).to_batches()
    else:
        batches = handle.to_arrow(projection=columns)
    return sum(batch.get_total_buffer_size() for batch in batches)


def _take(system: str, handle: Any, indices: list[int]) -> int:
    import numpy as np
    import pyarrow as pa

    if system == "looseleaf":
        return handle.take(indices).num_rows
    ordered = sorted(indices)
    if system == "parquet":
        # pyarrow has no row-level access: the row groups holding a wanted row, pre-buffered.
        metadata = handle.metadata
        sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
        bounds = np.cumsum([0, *sizes])
        group_of = {i: int(np.searchsorted(bounds, i, side="right")) - 1 for i in ordered}
        groups = sorted(set(group_of.values()))
        table = handle.read_row_groups(groups)
        first_row = dict(zip(groups, np.cumsum([0] + [sizes[g] for g in groups[:-1]]), strict=True))
        positions = [int(first_row[group_of[i]] + i - bounds[group_of[i]]) for i in ordered]
        return table.take(pa.array(positions)).num_rows
    if system == "lance":
        return handle.take_rows(ordered, batch_size=8192).to_table().num_rows
    import vortex

    return handle.to_arrow(indices=vortex.array(pa.array(ordered, pa.uint64()))).read_all().num_rows


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one measure; the import of the system's package is outside the timings."""
    system, measure, endpoint = spec["system"], spec["measure"], spec["endpoint"]
    if system == "looseleaf":
        import looseleaf  # noqa: F401
    elif system == "parquet":
        import pyarrow.parquet
    elif system == "lance":
        import lance.file  # noqa: F401
    else:
        import vortex  # noqa: F401
    import pyarrow  # noqa: F401

    marks: dict[str, float] = {}
    started = time.perf_counter()
    marks["start"] = time.time()
    columns = spec.get("columns")
    handle = _open(system, spec["key"], endpoint, columns, spec.get("depth"))
    _schema(system, handle)
    marks["opened"] = time.time()
    out: dict[str, Any] = {}
    if measure == "scan":
        out["arrow_bytes"] = _scan(system, handle, columns)
    elif measure == "take":
        out["rows"] = _take(system, handle, spec["indices"])
    elif measure == "wide" and system == "looseleaf":
        handle.plan(columns=columns)  # the columns' metadata, nothing else
        marks["metadata"] = time.time()
        out["arrow_bytes"] = _scan(system, handle, columns)
    elif measure == "wide":
        out["arrow_bytes"] = _scan(system, handle, columns)
    out["seconds"] = time.perf_counter() - started
    out["marks"] = marks
    if _LAST_STATS:
        out["io_stats"] = dict(_LAST_STATS)
    return out


# --- data ----------------------------------------------------------------------------------------


def write_files(table: Any, stem: str, directory: Path, systems: list[str]) -> dict[str, Path]:
    paths = {}
    for system in systems:
        path = directory / f"{stem}.{formats.EXTENSIONS[system]}"
        formats.write(system, table, path)
        paths[system] = path
    return paths


def wide_table() -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(SEED)
    values = rng.integers(0, 1 << 20, size=(WIDE_COLUMNS, WIDE_ROWS), dtype=np.int32)
    return pa.table({f"c{i:05d}": values[i] for i in range(WIDE_COLUMNS)})


def available(systems: list[str]) -> list[str]:
    """The systems of ``systems`` installed here, in that order; the others said so."""
    found = detect({s: NEEDS[s] for s in systems}, systems)
    for system in systems:
        if not found[system]["available"]:
            print(f"  {system}: not installed, left out", file=sys.stderr)
    return [s for s in systems if found[s]["available"]]


# --- the run ---------------------------------------------------------------------------------------


def rounds(arrivals: list[float], gap: float) -> int:
    """Round trips in a sequence of request arrivals: waves separated by more than ``gap``."""
    waves, last = 0, None
    for t in sorted(arrivals):
        if last is None or t - last > gap:
            waves += 1
        last = t
    return waves


def measure(proxy: Any, spec: dict[str, Any], repeats: int) -> dict[str, Any]:
    runs = []
    for _ in range(repeats):
        proxy.stats.clear()
        result = fresh_process.run(__file__, spec)
        if "error" in result:
            return result
        with proxy.stats.lock:
            result["requests"] = len(proxy.stats.requests)
            result["bytes"] = proxy.stats.bytes_sent
            arrivals = list(proxy.stats.arrivals)
        marks = result.get("marks", {})
        if "opened" in marks:
            result["open_requests"] = sum(1 for t in arrivals if t <= marks["opened"])
            result["open_rounds"] = rounds([t for t in arrivals if t <= marks["opened"]], spec["gap"])
        if "metadata" in marks:
            between = [t for t in arrivals if marks["opened"] < t <= marks["metadata"]]
            result["metadata_requests"] = len(between)
            result["metadata_rounds"] = rounds(between, spec["gap"])
        runs.append(result)
    best = min(runs, key=lambda r: r["seconds"])
    return {
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "min_seconds": best["seconds"],
        "requests": best["requests"],
        "bytes": best["bytes"],
        **{
            k: best[k]
            for k in ("open_requests", "open_rounds", "metadata_requests", "metadata_rounds")
            if k in best
        },
        **({"io_stats": best["io_stats"]} if "io_stats" in best else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale of lineitem (default 1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--latency", type=float, default=0.025, help="first-byte latency, seconds (default 0.025)"
    )
    parser.add_argument(
        "--tail", type=float, default=0.02, help="share of requests 10x slower (default 0.02)"
    )
    parser.add_argument("--bandwidth", type=float, default=80.0, help="MiB/s of each response (default 80)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--no-depth-sweep", action="store_true")
    parser.add_argument("--quick", action="store_true", help="scale 0.05, one run, no depth sweep")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--out", default=str(RESULTS / "object_store"))
    args = parser.parse_args()
    if args.worker:
        fresh_process.serve(worker)
        return
    if args.quick:
        args.scale, args.repeats, args.no_depth_sweep = 0.05, 1, True

    import numpy as np

    from s3_server import ProxySettings, S3Proxy, start_moto

    systems = available(args.systems.split(","))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"data: lineitem SF{args.scale:g} and a {WIDE_COLUMNS:,}-column table")
    table = lineitem(args.scale, Path(args.data))
    wide = wide_table()
    server = start_moto()
    server.create_bucket(BUCKET)
    client = server.client()
    sizes: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for stem, data in (("lineitem", table), ("wide", wide)):
            for system, path in write_files(data, stem, Path(tmp), systems).items():
                key = f"{stem}.{formats.EXTENSIONS[system]}"
                client.upload_file(str(path), BUCKET, key)
                sizes.setdefault(stem, {})[system] = path.stat().st_size
    settings = ProxySettings(
        first_byte=args.latency,
        tail_probability=args.tail,
        tail_factor=10,
        bandwidth=args.bandwidth * (1 << 20),
        # moto copies a whole object under a lock for every ranged read: without this the
        # benchmark measures moto, not the readers.
        cache_objects=True,
    )
    proxy = S3Proxy(server.port, settings)
    indices = np.random.default_rng(SEED).choice(table.num_rows, TAKE_ROWS, replace=False).tolist()
    gap = args.latency / 2
    results: dict[str, Any] = {
        "settings": {
            "scale": args.scale,
            "latency_seconds": args.latency,
            "tail": args.tail,
            "bandwidth_mib": args.bandwidth,
            "repeats": args.repeats,
            "rows": table.num_rows,
        },
        "sizes": sizes,
        "measures": {},
    }
    measures = {
        "open": {"key": "lineitem", "measure": "open"},
        "scan": {"key": "lineitem", "measure": "scan"},
        "projection": {"key": "lineitem", "measure": "scan", "columns": PROJECTION},
        "take": {"key": "lineitem", "measure": "take", "indices": indices},
        "wide": {"key": "wide", "measure": "wide", "columns": WIDE_READ},
    }
    try:
        for name, base in measures.items():
            for system in systems:
                spec = {
                    **base,
                    "key": f"{base['key']}.{formats.EXTENSIONS[system]}",
                    "system": system,
                    "endpoint": proxy.endpoint,
                    "gap": gap,
                }
                result = measure(proxy, spec, args.repeats)
                results["measures"].setdefault(name, {})[system] = result
                shown = (
                    "error"
                    if "error" in result
                    else f"{result['median_seconds']:.3f} s, {result['requests']} requests"
                )
                print(f"  {name:<11} {system:<10} {shown}", flush=True)
        if not args.no_depth_sweep and "looseleaf" in systems:
            for name in ("scan", "take"):
                for depth in DEPTHS:
                    spec = {
                        **measures[name],
                        "key": f"{measures[name]['key']}.leaf",
                        "system": "looseleaf",
                        "endpoint": proxy.endpoint,
                        "gap": gap,
                        "depth": depth,
                    }
                    result = measure(proxy, spec, args.repeats)
                    results.setdefault("depths", {}).setdefault(name, {})[str(depth)] = result
                    print(
                        f"  depth {name:<5} {depth!s:<5} {result.get('median_seconds', float('nan')):.3f} s",
                        flush=True,
                    )
    finally:
        proxy.close()
        server.stop()
    (out_dir / "results.json").write_text(json.dumps(results, indent=2))
    (out_dir / "results.md").write_text(markdown(results))
    print(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [
        f"# Object store reads: lineitem SF{s['scale']:g} ({s['rows']:,} rows) "
        f"and a {WIDE_COLUMNS:,}-column file",
        "",
        f"moto's S3 server behind a proxy: {s['latency_seconds'] * 1000:.0f} ms to the first byte "
        f"({s['tail']:.0%} of requests 10x slower), {s['bandwidth_mib']:g} MiB/s per response; "
        f"fresh process per run, median of {s['repeats']}; ratio = best peer / looseleaf (above 1: ahead).",
        "",
        "| measure | " + " | ".join(SYSTEMS) + " | ratio |",
        "|---|" + "---|" * (len(SYSTEMS) + 1),
    ]
    for name, by_system in results["measures"].items():
        cells = []
        for system in SYSTEMS:
            r = by_system.get(system)
            if r is None or "error" in r:
                cells.append("—" if r is None else "error")
                continue
            cells.append(f"{r['median_seconds']:.3f} s, {r['requests']} req, {r['bytes'] / 1e6:.1f} MB")
        peers = [
            by_system[p]["median_seconds"]
            for p in SYSTEMS[1:]
            if p in by_system and "error" not in by_system[p]
        ]
        own = by_system.get("looseleaf", {}).get("median_seconds")
        ratio = f"{min(peers) / own:.2f}x" if peers and own else "—"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    wide = results["measures"].get("wide", {}).get("looseleaf", {})
    if "open_rounds" in wide:
        lines += [
            "",
            f"looseleaf, open + 10 of {WIDE_COLUMNS:,} columns: open {wide['open_requests']} request(s) in "
            f"{wide['open_rounds']} round trip(s), the columns' metadata "
            f"{wide.get('metadata_requests')} request(s) in {wide.get('metadata_rounds')} round trip(s), "
            "before any data.",
        ]
    depths = results.get("depths")
    if depths:
        lines += ["", "| looseleaf I/O depth | " + " | ".join(depths) + " |", "|---|" + "---|" * len(depths)]
        keys = list(next(iter(depths.values())))
        for depth in keys:
            row = [f"{depths[m][depth].get('median_seconds', float('nan')):.3f} s" for m in depths]
            lines.append(f"| {depth} | " + " | ".join(row) + " |")
        for m, by_depth in depths.items():
            fixed = {
                d: r["median_seconds"] for d, r in by_depth.items() if d != "auto" and "median_seconds" in r
            }
            auto = by_depth.get("auto", {}).get("median_seconds")
            if fixed and auto:
                best = min(fixed, key=fixed.get)
                lines.append(
                    f"\n{m}: adaptive {auto:.3f} s vs best fixed depth {best} at {fixed[best]:.3f} s "
                    f"({auto / fixed[best] - 1:+.0%})"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
