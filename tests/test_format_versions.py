"""Format versions and page checksums, through the Python API.

``tests/data/format_1_0*.leaf`` were written by the format 1.0 writer (one with Zstandard pages,
one without) from the table in ``format_1_0.arrow``: every later reader must read them equal to it,
on every read path. Files written now are format 2.5 (2.0 plus zone maps, the ALP-RD and ALP encodings
of floats, the OnPair encoding of strings and decimals bit-packed in narrow lanes), with a CRC-32 of
every page buffer that reads verify unless told not to.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc
import pytest

import looseleaf

DATA = Path(__file__).parent / "data"
V1_FILES = ["format_1_0.leaf", "format_1_0_plain.leaf"]


@pytest.fixture(scope="module")
def v1_table() -> pa.Table:
    with pa.ipc.open_file(DATA / "format_1_0.arrow") as source:
        return source.read_all()


@pytest.mark.parametrize("name", V1_FILES)
def test_files_written_by_the_1_0_writer_read_equal_on_every_path(name: str, v1_table: pa.Table) -> None:
    reader = looseleaf.open(DATA / name)
    assert reader.metadata["format_version"] == "1.0"
    assert reader.to_table().equals(v1_table)
    assert reader.read_all(batch_size=37).read_all().equals(v1_table)
    assert reader.read_range(13, 237).read_all().equals(v1_table.slice(13, 237))
    indices = [299, 0, 150, 150, 7, 64]
    assert reader.take(indices).equals(v1_table.take(indices))
    columns = ["items", "attrs", "name"]
    assert reader.to_table(columns=columns).equals(v1_table.select(columns))
    as_dictionary = reader.to_table(columns=["name"], dictionary_columns=["name"])
    assert as_dictionary.column("name").cast(pa.string()).equals(v1_table.column("name"))


def test_new_files_are_format_2_5_with_checksums_and_zone_maps(tmp_path: Path) -> None:
    table = pa.table({"x": pa.array(range(1000), pa.int64())})
    looseleaf.write_table(table, tmp_path / "new.leaf")
    reader = looseleaf.open(tmp_path / "new.leaf")
    assert reader.metadata["format_version"] == "2.5"
    assert reader.to_table().equals(table)
    # The zone map (8,192-row zones: one here) is what a filter skips by; a file without one
    # (as 2.0 files are) is filtered by its pages' statistics, with the same result.
    looseleaf.write_table(table, tmp_path / "no_zones.leaf", zone_map_rows=0)
    for name in ("new.leaf", "no_zones.leaf"):
        got = looseleaf.open(tmp_path / name).to_table(filter=pc.field("x") >= 990)
        assert got.equals(table.slice(990))


def _page_buffer_offset(path: Path, column: int) -> tuple[int, int]:
    """Offset and size of the largest buffer of the first page of ``column``, found from the
    file's own layout: buffers are written in page order, 64-byte aligned, after the header."""
    pages = looseleaf.open(path).metadata["columns"][column]["pages"]
    sizes = pages[0]["buffer_sizes"]
    # The first page of the first column starts at offset 64; each buffer starts on the next
    # multiple of 64 after the previous one.
    assert column == 0
    offset, best = 64, (0, 0)
    for size in sizes:
        if size > best[1]:
            best = (offset, size)
        offset = (offset + size + 63) // 64 * 64
    return best


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_a_flipped_bit_is_a_checksum_error_naming_column_and_page(
    tmp_path: Path, compression: str | None
) -> None:
    table = pa.table({"values": pa.array([i * 7919 % 100_003 for i in range(5000)], pa.int64())})
    path = tmp_path / "damaged.leaf"
    looseleaf.write_table(table, path, compression=compression)
    offset, size = _page_buffer_offset(path, 0)
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0x10
    path.write_bytes(bytes(data))

    with pytest.raises(looseleaf.CorruptFileError) as caught:
        looseleaf.open(path).to_table()
    message = str(caught.value)
    assert 'checksum mismatch in page 0 of column "values" (number 0)' in message
    assert str(path) in message

    # Verification off: the damaged bytes decode to other values (or fail some other check),
    # but are not reported as a checksum mismatch.
    try:
        looseleaf.open(path, verify_checksums=False).to_table()
        error = ""
    except looseleaf.CorruptFileError as e:
        error = str(e)
    assert "checksum" not in error


def test_files_without_checksums_read_and_verify_checksums_is_checked(tmp_path: Path) -> None:
    table = pa.table({"s": ["a", None, "ccc"] * 100})
    looseleaf.write_table(table, tmp_path / "plain.leaf", checksums=False)
    reader = looseleaf.open(tmp_path / "plain.leaf")
    assert reader.to_table().equals(table)
    assert reader.options["verify_checksums"] is True
    unverified = looseleaf.open(tmp_path / "plain.leaf", verify_checksums=False)
    assert unverified.options["verify_checksums"] is False
    with pytest.raises(ValueError, match="verify_checksums"):
        reader.to_table(verify_checksums="sometimes")
