"""Files and objects that change while they are read: every read of a reader is of the version it
opened, or an ``ObjectChangedError`` naming the file, never bytes of two versions; and no change
by another process ends this one (no ``SIGBUS`` from a mapped page of a truncated file).

Objects are pinned by their ETag (``If-Match`` on every later request, retry and hedge); local
files by their size and modification time, checked after every copying read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import looseleaf
from s3_server import start_moto

BUCKET = "changes"


def _table(seed: int, n: int = 50_000) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(np.arange(n) + seed * 10**9, pa.int64()),
            "v": pa.array(rng.integers(-(2**60), 2**60, n), pa.int64()),
            "s": pa.array([f"row {i} of version {seed}" for i in range(n)]),
        }
    )


@pytest.fixture(scope="module")
def moto():
    server = start_moto()
    server.create_bucket(BUCKET)
    yield server
    server.stop()


@pytest.mark.parametrize("store", ["s3", "memory"])
def test_an_object_overwritten_after_open_is_an_error_naming_it(moto, store):
    if store == "s3":
        path, options = f"s3://{BUCKET}/overwritten.leaf", moto.storage_options()
    else:
        path, options = "memory://changes/overwritten.leaf", None
    first, second = _table(1), _table(2)
    looseleaf.write_table(first, path, storage_options=options, page_size=64 * 1024)
    reader = looseleaf.open(path, storage_options=options)
    assert reader.take([0, 49_999]).equals(first.take([0, 49_999]))
    looseleaf.write_table(second, path, storage_options=options, page_size=64 * 1024)
    # Every read path of the old reader: an error naming the object, no mixed bytes.
    changed = r"overwritten\.leaf.*changed since it was opened"
    for read in (
        lambda: reader.take([7, 30_000]),
        lambda: reader.to_table(),
        lambda: reader.to_table(columns=["s"], filter=[("id", "<", 10**9 + 100)]),
        lambda: pa.Table.from_batches(reader.read_range(1000, 10)),
    ):
        with pytest.raises(looseleaf.ObjectChangedError, match=changed):
            read()
    # A reader opened now reads the new version.
    assert looseleaf.open(path, storage_options=options).to_table().equals(second)


def test_a_local_file_rewritten_in_place_or_truncated_is_an_error(tmp_path):
    path = tmp_path / "rewritten.leaf"
    looseleaf.write_table(_table(1), str(path), page_size=64 * 1024)
    reader = looseleaf.open(path)
    size = path.stat().st_size
    data = bytearray(path.read_bytes())
    data[size // 2] ^= 0xFF
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.seek(0)
        f.write(data)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    with pytest.raises(looseleaf.ObjectChangedError, match=r"rewritten\.leaf.*changed since it was opened"):
        reader.to_table()
    truncated = tmp_path / "truncated.leaf"
    looseleaf.write_table(_table(1), str(truncated), page_size=64 * 1024)
    reader = looseleaf.open(truncated)
    os.truncate(truncated, size // 2)
    with pytest.raises(looseleaf.ObjectChangedError, match=r"truncated\.leaf"):
        reader.take([1, 40_000])


def test_a_file_replaced_by_a_rename_is_read_as_opened(tmp_path):
    """Writers that replace a file (looseleaf's among them) write a new one and rename it: the
    open reader keeps reading the file it opened."""
    path = tmp_path / "replaced.leaf"
    first = _table(1)
    looseleaf.write_table(first, str(path), page_size=64 * 1024)
    reader = looseleaf.open(path)
    looseleaf.write_table(_table(2), str(path), page_size=64 * 1024)
    assert reader.to_table().equals(first)
    assert looseleaf.open(path).to_table().equals(_table(2))


def test_truncation_during_a_read_never_ends_the_process(tmp_path):
    """A child streams a large file slowly while the parent truncates it: the child gets an
    error (or all its rows, if it read them first) and exits normally; never a signal."""
    path = tmp_path / "big.leaf"
    rng = np.random.default_rng(3)
    looseleaf.write_table(
        pa.table({"v": pa.array(rng.integers(-(2**62), 2**62, 3_000_000), pa.int64())}),
        str(path),
        page_size=1 << 20,
    )
    marker = tmp_path / "started"
    child = textwrap.dedent(
        f"""
        import pathlib, sys, time
        import looseleaf
        reader = looseleaf.open({str(path)!r})
        rows = 0
        try:
            for batch in reader.read_all(batch_size=4096, io_buffer_bytes="1 MiB"):
                pathlib.Path({str(marker)!r}).touch()
                rows += batch.num_rows
                time.sleep(0.002)
        except looseleaf.LooseleafError as e:
            print("error:", type(e).__name__, e)
            sys.exit(3)
        print("rows:", rows)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            if marker.exists() or process.poll() is not None:
                break
            import time

            time.sleep(0.05)
        os.truncate(path, path.stat().st_size // 3)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode in (0, 3), (process.returncode, out, err[-2000:])
    if process.returncode == 3:
        assert b"big.leaf" in out, out
