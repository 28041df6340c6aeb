"""Bad input gives a clear looseleaf exception naming the file, never a crash or a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import looseleaf
from looseleaf import (
    CorruptFileError,
    InvalidArgumentError,
    LooseleafError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedError,
)


@pytest.fixture
def good_file(tmp_path):
    table = pa.table(
        {
            "i": pa.array(range(5000), pa.int64()),
            "s": pa.array([None if i % 7 == 0 else f"value {i}" for i in range(5000)]),
        }
    )
    path = tmp_path / "good.leaf"
    looseleaf.write_table(table, path, page_size=4096)
    return path, table


def read_everything(path) -> pa.Table:
    reader = looseleaf.open(path)
    return reader.to_table()


def test_truncated_files_are_rejected(good_file, tmp_path):
    path, _ = good_file
    data = path.read_bytes()
    cuts = sorted(
        {0, 1, 7, 8, 100, len(data) // 2, len(data) - 41, len(data) - 40, len(data) - 20, len(data) - 1}
    )
    for cut in cuts:
        damaged = tmp_path / f"cut{cut}.leaf"
        damaged.write_bytes(data[:cut])
        with pytest.raises(CorruptFileError) as info:
            read_everything(damaged)
        assert str(damaged) in str(info.value)


def test_every_flipped_footer_byte_is_detected(good_file, tmp_path):
    path, _ = good_file
    data = bytearray(path.read_bytes())
    reader = looseleaf.open(path)
    # Everything after the page data: column metadata, column table, footer and tail.
    metadata_start = max(sum(p["bytes"] for p in c["pages"]) for c in reader.metadata["columns"])
    start = len(data) - 600
    assert start > metadata_start
    for offset in range(start, len(data)):
        damaged_bytes = bytearray(data)
        damaged_bytes[offset] ^= 0x55
        damaged = tmp_path / "flipped.leaf"
        damaged.write_bytes(bytes(damaged_bytes))
        with pytest.raises(LooseleafError):
            read_everything(damaged)


def test_wrong_magic(good_file, tmp_path):
    path, _ = good_file
    data = bytearray(path.read_bytes())
    data[-4:] = b"PAR1"
    damaged = tmp_path / "magic.leaf"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="magic"):
        looseleaf.open(damaged)


def test_parquet_file_is_not_a_looseleaf_file(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    with pytest.raises(CorruptFileError, match="not a looseleaf file"):
        looseleaf.open(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.leaf"
    path.write_bytes(b"")
    with pytest.raises(CorruptFileError, match="empty") as info:
        looseleaf.open(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.leaf"
    with pytest.raises(NotFoundError) as info:
        looseleaf.open(path)
    assert isinstance(info.value, FileNotFoundError)
    assert "nope.leaf" in str(info.value)
    with pytest.raises(FileNotFoundError):
        looseleaf.open("memory://never-written.leaf")


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(InvalidArgumentError, match="directory"):
        looseleaf.open(tmp_path)


def test_out_of_range_and_negative_take(good_file):
    path, _ = good_file
    reader = looseleaf.open(path)
    with pytest.raises(InvalidArgumentError, match="5000 is out of range") as info:
        reader.take([1, 5000])
    assert isinstance(info.value, IndexError | ValueError)
    with pytest.raises(InvalidArgumentError, match="negative"):
        reader.take([-1])
    with pytest.raises(InvalidArgumentError):
        reader.take(["a"])
    with pytest.raises(InvalidArgumentError):
        reader.take([1.5])


def test_unknown_columns(good_file):
    path, _ = good_file
    reader = looseleaf.open(path)
    for call in (
        lambda: reader.to_table(columns=["i", "missing"]),
        lambda: reader.read_all(columns=["missing"]),
        lambda: reader.take([0], columns=["missing"]),
        lambda: reader.plan(columns=["missing"]),
    ):
        with pytest.raises(InvalidArgumentError, match="missing") as info:
            call()
        assert str(path) in str(info.value)
    with pytest.raises(InvalidArgumentError, match="list of column names"):
        reader.to_table(columns="i")


def test_ranges_past_the_end(good_file):
    path, _ = good_file
    reader = looseleaf.open(path)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        reader.read_range(4990, 11)
    with pytest.raises(InvalidArgumentError):
        reader.read_range(-1, 5)
    assert reader.read_range(4990, 10).read_all().num_rows == 10


def test_bad_options(good_file):
    path, _ = good_file
    for kwargs in ({"batch_size": 0}, {"io_depth": 0}, {"io_buffer_bytes": -5}, {"batch_size": "big"}):
        with pytest.raises(InvalidArgumentError):
            looseleaf.open(path, **kwargs)
    reader = looseleaf.open(path)
    with pytest.raises(InvalidArgumentError):
        reader.read_all(batch_size=0)
    with pytest.raises(InvalidArgumentError):
        looseleaf.write_table(pa.table({"a": [1]}), path.parent / "x.leaf", page_size=0)


def test_unsupported_storage_and_types(tmp_path):
    with pytest.raises(UnsupportedError, match="ftp"):
        looseleaf.open("ftp://host/file.leaf")
    union = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])])
    with pytest.raises(UnsupportedError, match="u"):
        looseleaf.write_table(pa.table({"u": union}), tmp_path / "union.leaf")
    assert not (tmp_path / "union.leaf").exists()


def test_writer_rejects_mismatched_batches(tmp_path):
    path = tmp_path / "w.leaf"
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False)])
    with pytest.raises(SchemaMismatchError), looseleaf.FileWriter(path, schema) as writer:
        writer.write_batch(pa.record_batch({"a": pa.array([1], pa.int64())}))
    assert not path.exists()
    with (
        pytest.raises(SchemaMismatchError, match="not nullable"),
        looseleaf.FileWriter(path, schema) as writer,
    ):
        writer.write_batch(pa.record_batch([pa.array([1, None], pa.int32())], names=["a"]))
    assert not path.exists()


def test_unfinished_writer_leaves_no_file(tmp_path):
    path = tmp_path / "unfinished.leaf"
    writer = looseleaf.FileWriter(path, pa.schema([("a", pa.int64())]), page_size=64)
    writer.write_batch(pa.record_batch({"a": pa.array(range(10_000), pa.int64())}))
    assert not path.exists()
    del writer
    assert not path.exists()
    assert os.listdir(tmp_path) == []

    def failing_producer() -> None:
        with looseleaf.FileWriter(path, pa.schema([("a", pa.int64())])) as writer:
            writer.write_batch(pa.record_batch({"a": pa.array([1, 2], pa.int64())}))
            raise RuntimeError("the producer failed")

    with pytest.raises(RuntimeError):
        failing_producer()
    assert not path.exists()
    assert os.listdir(tmp_path) == []


def test_closed_writer_cannot_be_used(tmp_path):
    writer = looseleaf.FileWriter(tmp_path / "c.leaf", pa.schema([("a", pa.int64())]))
    writer.close()
    with pytest.raises(InvalidArgumentError, match="closed"):
        writer.write_batch(pa.record_batch({"a": pa.array([1], pa.int64())}))
    with pytest.raises(InvalidArgumentError, match="closed"):
        writer.close()


def test_a_writer_killed_mid_write_leaves_no_file(tmp_path):
    path = tmp_path / "killed.leaf"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pyarrow as pa, looseleaf\n"
            f"w = looseleaf.FileWriter({str(path)!r}, pa.schema([('a', pa.int64())]), page_size=4096)\n"
            "batch = pa.record_batch({'a': pa.array(range(100_000), pa.int64())})\n"
            "w.write_batch(batch)\n"
            "print('writing', flush=True)\n"
            "while True:\n"
            "    w.write_batch(batch)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "writing"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        child.kill()
        child.stdout.close()
    # Nothing at the destination; whatever staging file is left is not taken for the file.
    assert not path.exists()
    for leftover in tmp_path.iterdir():
        with pytest.raises(LooseleafError):
            looseleaf.open(leftover).to_table()


BOMB = os.path.join(os.path.dirname(__file__), "data", "bomb_2p40.leaf")


def test_a_file_that_decodes_to_terabytes_is_refused_or_streamed_under_a_memory_cap():
    """453 bytes claiming 2^40 rows of a constant string, nulls and zeros (made by
    rust/looseleaf/tests/bombs.rs): under a 4 GiB address-space cap, whole results are refused
    with OutOfMemoryError stating rows and bytes, before anything is allocated; takes and
    streams work in bounded memory; the process never aborts."""
    child = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import pyarrow as pa, looseleaf
        reader = looseleaf.open({BOMB!r})
        assert reader.num_rows == 1 << 40
        for whole in (lambda: reader.to_table(), lambda: reader.to_table(columns=["z"]),
                      lambda: looseleaf.dataset({BOMB!r}).to_table()):
            try:
                whole()
                raise SystemExit("a whole result of 2^40 rows was built")
            except looseleaf.OutOfMemoryError as e:
                assert isinstance(e, MemoryError)
                assert "bomb_2p40.leaf" in str(e) and "1099511627776 rows" in str(e), e
        assert reader.take([0, (1 << 40) - 1]).num_rows == 2
        stream = reader.read_all(columns=["c"])
        for _ in range(3):
            assert stream.read_next_batch().num_rows > 0
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-3000:])
    assert result.stdout.strip().endswith("ok")


def test_a_field_name_arrow_cannot_carry_is_an_error_naming_the_file():
    """A NUL byte in a field name (made by rust/looseleaf/tests/bombs.rs) cannot cross Arrow's C
    data interface: opening the file says so, naming it, instead of an ArrowInvalid without a
    name from whichever read meets it first."""
    path = os.path.join(os.path.dirname(__file__), "data", "nul_in_name.leaf")
    with pytest.raises(UnsupportedError, match=r"nul_in_name\.leaf.*C data interface"):
        looseleaf.open(path)
    with pytest.raises(UnsupportedError, match=r"nul_in_name\.leaf"):
        looseleaf.dataset(path)
