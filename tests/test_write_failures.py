"""Writes that die: whatever ends a write part way — an exception in the input, a killed process, a
writer collected without ``close()`` — readers of ``looseleaf.dataset`` see the dataset as it was
or as the write makes it, never part of it and never nothing, and no upload is left pending.

A ``write_dataset`` is a job of the directory's commit log (``_commits/``): its files are named by
one commit, written after the last of them is finished, and an overwrite deletes the old files
only after that commit.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import looseleaf
from s3_server import start_moto

BUCKET = "writes"


def _table(version: int, rows: int) -> pa.Table:
    ids = pa.array(range(rows), pa.int64())
    return pa.table(
        {
            "id": ids,
            "k": pc.cast(pc.bit_wise_and(ids, pa.scalar(3, pa.int64())), pa.int32()),
            "v": pa.array([f"version {version} row {i}" for i in range(rows)]),
        }
    )


def _read(uri: str, storage_options: dict | None = None) -> pa.Table:
    table = looseleaf.dataset(uri, storage_options=storage_options).to_table()
    return table.select(["id", "k", "v"]).sort_by("id")


def _data_files(root: Path) -> list[str]:
    """Every data file below ``root``, visible or not (hidden directories aside)."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.leaf")
        if not any(part.startswith("_") for part in p.relative_to(root).parts)
    )


@pytest.fixture(scope="module")
def moto():
    server = start_moto()
    server.create_bucket(BUCKET)
    yield server
    server.stop()


def _failing(table: pa.Table, after: int):
    """Batches of ``table``, then an exception after ``after`` of them."""
    for i, batch in enumerate(table.to_batches(max_chunksize=500)):
        if i == after:
            raise RuntimeError("the input failed")
        yield batch


@pytest.mark.parametrize("store", ["local", "s3"])
@pytest.mark.parametrize("existing_data", ["append", "overwrite"])
def test_a_failed_write_dataset_deletes_the_files_it_finished(tmp_path, moto, store, existing_data):
    if store == "s3":
        options = moto.storage_options()
        uri = f"s3://{BUCKET}/failed-{existing_data}"
    else:
        options, uri = None, str(tmp_path / "ds")
    old = _table(1, 3_000)
    looseleaf.write_dataset(old, uri, partitioning=["k"], max_rows_per_file=400, storage_options=options)

    def objects() -> list[str]:
        if store == "local":
            return _data_files(Path(uri))
        listed = moto.client().list_objects_v2(Bucket=BUCKET, Prefix=uri.split("/", 3)[3])
        return sorted(o["Key"] for o in listed.get("Contents", []) if "/_" not in o["Key"])

    before = objects()
    new = _table(2, 5_000)
    with pytest.raises(Exception, match="the input failed"):
        looseleaf.write_dataset(
            _failing(new, after=6),
            uri,
            schema=new.schema,
            partitioning=["k"],
            max_rows_per_file=400,
            existing_data=existing_data,
            storage_options=options,
        )
    assert objects() == before, "the files of the failed write are deleted, the old ones kept"
    assert _read(uri, options).equals(old.sort_by("id"))
    if store == "s3":
        assert not moto.client().list_multipart_uploads(Bucket=BUCKET).get("Uploads")


_CHILD = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    import looseleaf

    uri, rows = sys.argv[1], int(sys.argv[2])
    ids = pa.array(range(rows), pa.int64())
    table = pa.table({
        "id": ids,
        "k": pa.array([i % 4 for i in range(rows)], pa.int32()),
        "v": pa.array([f"version 2 row {i}" for i in range(rows)]),
    })

    def batches():
        for i, batch in enumerate(table.to_batches(max_chunksize=200)):
            print(f"batch {i}", flush=True)
            yield batch
        print("end", flush=True)

    looseleaf.write_dataset(batches(), uri, schema=table.schema, partitioning=["k"],
                            max_rows_per_file=300, existing_data="overwrite")
    print("done", flush=True)
    """
)


def _kill_while_writing(uri: str, rows: int, line: str, delay: float) -> str:
    """Runs the writing child, kills it ``delay`` seconds after it prints ``line``; returns the
    last line it printed."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, uri, str(rows)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    assert child.stdout is not None
    last = ""
    try:
        for printed in child.stdout:
            last = printed.strip()
            if last == line:
                if delay:
                    time.sleep(delay)
                child.send_signal(signal.SIGKILL)
                break
    finally:
        child.kill()
        child.wait(timeout=60)
    return last


def test_a_killed_write_dataset_leaves_the_old_or_the_new_dataset(tmp_path):
    rows = 4_000
    uri = str(tmp_path / "ds")
    old = _table(1, 3_000)
    looseleaf.write_dataset(old.slice(0, 1_000), uri, partitioning=["k"], max_rows_per_file=50)
    looseleaf.write_dataset(
        old.slice(1_000), uri, partitioning=["k"], max_rows_per_file=50, existing_data="append"
    )
    old = old.sort_by("id")
    new = _table(2, rows).sort_by("id")
    # Kill points: before any row, part way (files finished, more open), once the input is
    # consumed (files finishing, the commit, the old files' deletion) at growing delays.
    points = [("batch 0", 0.0), ("batch 4", 0.0), ("batch 12", 0.0)]
    points += [("end", delay) for delay in (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)]
    outcomes = []
    for line, delay in points:
        _kill_while_writing(uri, rows, line, delay)
        seen = _read(uri)
        assert seen.equals(old) or seen.equals(new), f"killed at {line!r} + {delay} s: a mixed dataset"
        outcomes.append(seen.equals(new))
        if seen.equals(new):
            # Start again from the old dataset (an overwrite of it, itself atomic).
            looseleaf.write_dataset(
                old, uri, partitioning=["k"], max_rows_per_file=50, existing_data="overwrite"
            )
            assert _read(uri).equals(old)
    assert not any(outcomes[:3]), "killed before the input ended: the old dataset"
    # A write that is not killed, after all that, leaves only its own files visible.
    looseleaf.write_dataset(new, uri, partitioning=["k"], existing_data="overwrite")
    assert _read(uri).equals(new)


def test_a_file_writer_collected_without_close_aborts_its_upload(tmp_path, moto):
    table = _table(1, 20_000)
    local = tmp_path / "dropped.leaf"
    writer = looseleaf.FileWriter(local, table.schema, page_size=4096)
    writer.write(table)
    del writer
    gc.collect()
    deadline = time.monotonic() + 10
    while list(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.iterdir()) == [], "the staging file of the local upload is removed"

    client = moto.client()
    writer = looseleaf.FileWriter(
        f"s3://{BUCKET}/dropped.leaf", table.schema, page_size=4096, storage_options=moto.storage_options()
    )
    for _ in range(60):  # past the first part (5 MiB), so the multipart upload has begun
        writer.write(table)
    assert client.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    del writer
    gc.collect()
    deadline = time.monotonic() + 10
    while client.list_multipart_uploads(Bucket=BUCKET).get("Uploads") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not client.list_multipart_uploads(Bucket=BUCKET).get("Uploads"), "the multipart upload is aborted"
    assert "Contents" not in client.list_objects_v2(Bucket=BUCKET, Prefix="dropped.leaf")
