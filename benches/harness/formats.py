"""Each file format's writer and readers, as the side-by-side benches call them: every system at
its defaults, a file per system. ``lance`` writes Lance file format 2.1, ``lance22`` format 2.2
(pylance's stable default)."""

from __future__ import annotations

import shutil
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from . import systems

EXTENSIONS = {
    "looseleaf": "leaf",
    "parquet": "parquet",
    "lance": "lance",
    "lance22": "lance22",
    "vortex": "vortex",
}
LANCE_VERSIONS = {"lance": "2.1", "lance22": "2.2"}
#: What each system imports to be usable here (the first module names its version).
NEEDS = {
    "looseleaf": ("looseleaf",),
    "parquet": ("pyarrow",),
    "lance": ("lance", "lance.file"),
    "lance22": ("lance", "lance.file"),
    "vortex": ("vortex", "vortex.io"),
}


def detect(
    names: Sequence[str], wanted: Collection[str], unselected: str = "not selected"
) -> dict[str, dict[str, Any]]:
    """:func:`harness.systems.detect` of the systems ``names``, Lance's with its file format."""
    notes = {s: f" (file format {v})" for s, v in LANCE_VERSIONS.items()}
    return systems.detect({s: NEEDS[s] for s in names}, wanted, unselected, notes)


def write(system: str, table: Any, path: Path) -> None:
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if system == "looseleaf":
        import looseleaf

        looseleaf.write_table(table, path)
    elif system == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif system in LANCE_VERSIONS:
        from lance.file import LanceFileWriter

        writer = LanceFileWriter(str(path), table.schema, version=LANCE_VERSIONS[system])
        for batch in table.to_batches():
            writer.write_batch(batch)
        writer.close()
    elif system == "vortex":
        import vortex.io

        vortex.io.write(table, str(path))


def import_system(system: str) -> None:
    """Imports what reading with ``system`` needs (so that imports stay out of the timings)."""
    if system == "looseleaf":
        import looseleaf  # noqa: F401
    elif system == "parquet":
        import pyarrow.parquet  # noqa: F401
    elif system in LANCE_VERSIONS:
        import lance.file  # noqa: F401
    elif system == "vortex":
        import vortex  # noqa: F401


def open_stream(
    system: str, path: str, columns: list[str] | None, batch_size: int | None, io_buffer: int | None
):
    """An iterator of record batches over the whole file (open included)."""
    if system == "looseleaf":
        import looseleaf

        return looseleaf.open(path).read_all(
            columns=columns, batch_size=batch_size, io_buffer_bytes=io_buffer
        )
    if system == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).iter_batches(batch_size=batch_size or 8192, columns=columns)
    if system in LANCE_VERSIONS:
        from lance.file import LanceFileReader

        reader = LanceFileReader(path, columns=columns)
        return reader.read_all(batch_size=batch_size or 8192).to_batches()
    if system == "vortex":
        import vortex

        return vortex.open(path).to_arrow(projection=columns, batch_size=batch_size)
    raise ValueError(system)


def scan(system: str, path: str, columns: list[str] | None, batch_size: int | None) -> tuple[int, int]:
    """Full scan (of ``columns``), every batch consumed and dropped; returns (rows, Arrow bytes)."""
    rows = size = 0
    for batch in open_stream(system, path, columns, batch_size, None):
        rows += batch.num_rows
        size += batch.get_total_buffer_size()
    return rows, size


def take(system: str, path: str, indices: list[int]) -> Any:
    """The rows at ``indices`` (distinct, any order), in that order, open included.

    - looseleaf: ``FileReader.take(indices)``, which takes any order;
    - parquet: pyarrow has no row-level access: stream only the row groups holding a wanted row
      (``ParquetFile.iter_batches(row_groups=...)``, 8192-row batches), keep the wanted rows of
      each batch (``RecordBatch.take``), then reorder. This is 3-6x faster here than
      ``read_row_groups`` followed by ``Table.take`` (which materialises the row groups whole);
    - lance: ``LanceFileReader.take_rows`` with the indices sorted, then reordered;
    - vortex: ``VortexFile.to_arrow(indices=...)`` with the indices sorted (as plain strings, not
      its default string_view, which pyarrow cannot take from), then reordered."""
    import numpy as np
    import pyarrow as pa

    wanted = np.asarray(indices, dtype=np.int64)
    ordered = np.unique(wanted)
    back = pa.array(np.searchsorted(ordered, wanted))
    if system == "looseleaf":
        import looseleaf

        return looseleaf.open(path).take(indices)
    if system == "parquet":
        import pyarrow.parquet as pq

        file = pq.ParquetFile(path)
        counts = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
        starts = np.concatenate([[0], np.cumsum(counts)])
        group_of = np.searchsorted(starts, ordered, side="right") - 1
        groups = np.unique(group_of)
        # Where each wanted row sits in the rows of the selected row groups, read in order.
        base = np.zeros(len(counts), dtype=np.int64)
        base[groups] = np.concatenate([[0], np.cumsum([counts[g] for g in groups])[:-1]])
        positions = ordered - starts[group_of] + base[group_of]
        parts, offset = [], 0
        for batch in file.iter_batches(batch_size=8192, row_groups=groups.tolist()):
            low, high = np.searchsorted(positions, [offset, offset + batch.num_rows])
            if high > low:
                parts.append(batch.take(pa.array(positions[low:high] - offset)))
            offset += batch.num_rows
        return pa.Table.from_batches(parts, schema=file.schema_arrow).take(back)
    if system in LANCE_VERSIONS:
        from lance.file import LanceFileReader

        table = LanceFileReader(path).take_rows(ordered.tolist(), batch_size=8192).to_table()
        return table.take(back)
    if system == "vortex":
        import vortex

        file = vortex.open(path)
        # pyarrow has no take kernel for string_view (Vortex's default): ask for plain strings.
        schema = pa.schema(
            [pa.field(f.name, _no_views(f.type), f.nullable) for f in file.dtype.to_arrow_schema()]
        )
        reader = file.to_arrow(indices=vortex.array(pa.array(ordered, pa.uint64())), schema=schema)
        return reader.read_all().take(back)
    raise ValueError(system)


def _no_views(kind: Any) -> Any:
    """``kind`` with string_view/binary_view (at any depth) replaced by string/binary."""
    import pyarrow as pa

    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = kind.value_field
        return pa.list_(pa.field(item.name, _no_views(item.type), item.nullable))
    if pa.types.is_fixed_size_list(kind):
        item = kind.value_field
        return pa.list_(pa.field(item.name, _no_views(item.type), item.nullable), kind.list_size)
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _no_views(f.type), f.nullable) for f in kind])
    return kind


def path_size(path: Path) -> int:
    """The bytes of a system's file, or of every file of its directory (a Lance dataset)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size
