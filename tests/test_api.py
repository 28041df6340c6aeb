"""The Python API around the reads: metadata, plans, I/O counters, stores, writers, threads, CLI."""

from __future__ import annotations

import subprocess
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import looseleaf


@pytest.fixture
def table() -> pa.Table:
    n = 20_000
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "small": pa.array([i % 100 for i in range(n)], pa.int8()),
            "name": pa.array([None if i % 11 == 0 else f"name-{i}" for i in range(n)]),
            "nothing": pa.nulls(n, pa.float64()),
        }
    )


@pytest.fixture
def path(tmp_path, table):
    path = tmp_path / "t.leaf"
    # Plain values: these tests reason about the layout of pages.
    looseleaf.write_table(table, path, page_size=16_384, encodings="plain")
    return path


def test_schema_rows_and_metadata(path, table):
    reader = looseleaf.open(path)
    assert reader.schema == table.schema
    assert reader.num_rows == table.num_rows
    assert reader.num_columns == 4
    assert repr(reader).startswith("looseleaf.FileReader(")
    metadata = reader.metadata
    assert metadata["num_rows"] == table.num_rows
    assert metadata["format_version"] == "2.5"
    assert metadata["created_by"].startswith("looseleaf ")
    by_field = {c["field"]: c for c in metadata["columns"]}
    assert set(by_field) == set(table.column_names)
    for column in metadata["columns"]:
        assert sum(p["num_rows"] for p in column["pages"]) == table.num_rows
        assert column["num_pages"] == len(column["pages"])
        assert column["bytes"] == sum(p["bytes"] for p in column["pages"])
    # 8-byte ids in 16 KiB pages: ten pages; 1-byte values in ten times fewer.
    assert by_field["id"]["num_pages"] == 10
    assert by_field["small"]["num_pages"] == 2
    assert {p["encoding"] for p in by_field["name"]["pages"]} == {"nullable(binary(offsets=plain(32)))"}
    assert {p["encoding"] for p in by_field["nothing"]["pages"]} == {"all_null"}
    assert by_field["nothing"]["bytes"] == 0
    assert {p["encoding"] for p in by_field["id"]["pages"]} == {"plain(64)"}


def test_plan_matches_the_layout(path):
    reader = looseleaf.open(path)
    pages = {c["field"]: c["num_pages"] for c in reader.metadata["columns"]}
    sizes = {c["field"]: c["bytes"] for c in reader.metadata["columns"]}
    full = reader.plan()
    assert full["requests"] == pages["id"] + pages["small"] + pages["name"]  # all-null pages need nothing
    assert full["bytes"] == sum(sizes.values())
    assert full["indirect_requests"] == 0
    projected = reader.plan(columns=["small"])
    assert projected["bytes"] == sizes["small"]
    assert set(projected["columns"]) == {"small"}
    # Requests leave in top-level row order across columns with different page sizes.
    priorities = [r["priority"] for r in full["request_list"]]
    assert priorities == sorted(priorities)

    few = reader.plan(indices=[5, 17_000, 9])
    assert few["bytes"] < 40_000
    # These 16 KiB string pages are small: a few of their rows are read with the whole page in
    # one request rather than offsets first and then the bytes.
    assert few["indirect_requests"] == 0
    ranged = reader.plan(columns=["id"], start=100, num_rows=10)
    assert ranged["bytes"] == 80
    assert ranged["reads"] == 1


def test_few_rows_of_large_string_pages_use_indirect_io(tmp_path):
    n = 200_000
    table = pa.table({"s": pa.array([f"value number {i}" for i in range(n)])})
    path = tmp_path / "strings.leaf"
    looseleaf.write_table(table, path, page_size=1 << 20, encodings="plain")
    reader = looseleaf.open(path)
    plan = reader.plan(indices=[3, 150_000])
    # One page each: their offsets first (direct), then their bytes (indirect, bounded).
    assert plan["requests"] == 4
    assert plan["indirect_requests"] == 2
    assert plan["bytes"] < 100
    stream_plan = reader.plan(start=0, num_rows=n)
    assert stream_plan["indirect_requests"] == 0
    assert reader.take([150_000, 3]).equals(table.take([150_000, 3]))


def test_stream_reports_io(path, table):
    reader = looseleaf.open(path)
    stream = reader.stream(columns=["id", "name"], batch_size=1000)
    result = pa.RecordBatchReader.from_stream(stream).read_all()
    assert result.equals(table.select(["id", "name"]))
    stats = stream.io_stats()
    plan = reader.plan(columns=["id", "name"])
    assert stats["requests"] == plan["requests"]
    assert stats["bytes_read"] == plan["read_bytes"] >= plan["bytes"]
    assert stats["peak_reserved_bytes"] <= reader.options["io_buffer_bytes"]
    assert stats["batches"] == 20
    assert stats["scheduling_seconds"] > 0
    assert stats["decode_seconds"] > 0
    with pytest.raises(looseleaf.InvalidArgumentError, match="consumed"):
        pa.RecordBatchReader.from_stream(stream)


def test_backpressure_keeps_buffered_bytes_under_the_budget(tmp_path):
    n = 400_000
    table = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array(range(n), pa.float64())})
    path = tmp_path / "big.leaf"
    looseleaf.write_table(table, path, page_size=64 * 1024, encodings="plain")
    budget = 512 * 1024
    reader = looseleaf.open(path, io_buffer_bytes=budget)
    stream = reader.stream(batch_size=1024)
    rows = 0
    import time

    for batch in pa.RecordBatchReader.from_stream(stream):
        rows += batch.num_rows
        time.sleep(0.0005)  # a slow consumer
    assert rows == n
    stats = stream.io_stats()
    assert stats["bytes_read"] == 2 * 8 * n
    assert stats["bytes_read"] > 10 * budget
    assert stats["bypassed_reads"] == 0
    assert stats["peak_reserved_bytes"] <= budget


def test_memory_store_round_trip(table):
    result = looseleaf.write_table(table, "memory://tables/t.leaf")
    assert result["num_rows"] == table.num_rows
    reader = looseleaf.open("memory://tables/t.leaf")
    assert reader.to_table().equals(table)
    assert reader.take([3, 1]).equals(table.take([3, 1]))


def test_file_urls_and_pathlike(path, table):
    assert looseleaf.open(f"file://{path}").num_rows == table.num_rows
    assert looseleaf.open(str(path)).num_rows == table.num_rows


def test_write_table_accepts_every_arrow_shape(tmp_path, table):
    shapes = {
        "table": table,
        "batch": table.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=777)),
        "batches": table.to_batches(max_chunksize=1234),
        "generator": (b for b in table.to_batches(max_chunksize=5000)),
    }
    for name, data in shapes.items():
        path = tmp_path / f"{name}.leaf"
        result = looseleaf.write_table(data, path)
        assert result["num_rows"] == table.num_rows
        assert result["num_bytes"] == path.stat().st_size
        assert looseleaf.open(path).to_table().equals(table), name
    with pytest.raises(looseleaf.InvalidArgumentError, match="schema"):
        looseleaf.write_table([], tmp_path / "none.leaf")
    looseleaf.write_table([], tmp_path / "none.leaf", schema=table.schema)
    assert looseleaf.open(tmp_path / "none.leaf").num_rows == 0


def test_file_writer_context_manager(tmp_path, table):
    path = tmp_path / "w.leaf"
    with looseleaf.FileWriter(path, table.schema, page_size=4096) as writer:
        for batch in table.to_batches(max_chunksize=333):
            writer.write_batch(batch)
        assert writer.num_rows == table.num_rows
        writer.write(table.slice(0, 10))
    assert writer.closed
    reader = looseleaf.open(path)
    assert reader.to_table().equals(pa.concat_tables([table, table.slice(0, 10)]))


def test_schema_metadata_survives(tmp_path):
    schema = pa.schema([pa.field("a", pa.int32(), metadata={"unit": "m"})], metadata={"origin": "test"})
    table = pa.table({"a": pa.array([1, 2], pa.int32())}, schema=schema)
    looseleaf.write_table(table, tmp_path / "m.leaf")
    read = looseleaf.open(tmp_path / "m.leaf").schema
    assert read.metadata == {b"origin": b"test"}
    assert read.field("a").metadata == {b"unit": b"m"}


def test_concurrent_reads_from_threads(path, table):
    reader = looseleaf.open(path)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for _ in range(5):
                assert reader.to_table(columns=["name", "id"]).equals(table.select(["name", "id"]))
                assert reader.take([seed, 0, seed]).equals(table.take([seed, 0, seed]))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i * 1000,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_cli_demo_inspect_convert(tmp_path, table):
    demo = subprocess.run(
        [sys.executable, "-m", "looseleaf", "demo", "--rows", "20000", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "every read matched the data written" in demo.stdout
    parquet = tmp_path / "in.parquet"
    pq.write_table(table, parquet)
    out = tmp_path / "out.leaf"
    subprocess.run(
        [sys.executable, "-m", "looseleaf", "convert", str(parquet), str(out)],
        check=True,
        capture_output=True,
    )
    assert looseleaf.open(out).to_table().equals(table)
    inspect = subprocess.run(
        [sys.executable, "-m", "looseleaf", "inspect", str(out), "--pages"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "20,000 rows" in inspect.stdout
    assert "name" in inspect.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "looseleaf", "inspect", str(tmp_path / "missing.leaf")],
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0
    assert "missing.leaf" in failed.stderr


@pytest.mark.parametrize(("batch_size", "key"), [(100, pa.int8()), (None, pa.int16()), (40_000, pa.int32())])
def test_dictionary_columns_keep_the_dictionary_with_narrow_keys(tmp_path, batch_size, key) -> None:
    modes = [
        "AIR",
        "MAIL",
        "RAIL",
        "SHIP",
        "TRUCK",
        None,
        "REG AIR",
        "FOB",
        "a value longer than 32 bytes, copied exactly",
    ]
    column = pa.array([modes[(i * 7) % len(modes)] for i in range(50_000)], pa.string())
    table = pa.table({"mode": column, "n": pa.array(range(50_000))})
    path = tmp_path / "modes.leaf"
    looseleaf.write_table(table, path)
    reader = looseleaf.open(path)
    as_dictionary = reader.to_table(dictionary_columns=["mode"], batch_size=batch_size)
    assert as_dictionary.schema.field("mode").type == pa.dictionary(key, pa.string())
    assert as_dictionary.column("mode").cast(pa.string()).combine_chunks().equals(column)
    assert reader.to_table(columns=["mode"]).column("mode").combine_chunks().equals(column)
    # Eight distinct strings: the dictionary form holds far fewer bytes than the strings.
    assert as_dictionary.column("mode").nbytes * 2 < column.nbytes


# Every read method, called with `options` and (where it reads rows) a negative row.
READS = {
    "read_all": lambda r, **o: r.read_all(**o).read_all(),
    "read_range": lambda r, **o: r.read_range(0, 10, **o).read_all(),
    "stream": lambda r, **o: pa.RecordBatchReader.from_stream(r.stream(**o)).read_all(),
    "to_table": lambda r, **o: r.to_table(**o),
    "take": lambda r, **o: r.take([3, 1], **o),
    "plan": lambda r, **o: r.plan(**o),
}
NEGATIVE_ROWS = {
    "read_range": lambda r: r.read_range(-1, 10),
    "to_table": lambda r: r.to_table(start=-1),
    "take": lambda r: r.take([3, -1]),
    "plan": lambda r: r.plan(indices=[-2]),
}


@pytest.mark.parametrize("method", sorted(READS))
@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"io_depth": 0}, "io_depth"),
        ({"io_buffer_bytes": -5}, "io_buffer_bytes"),
        ({"batch_size": "many"}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"decode_parallelism": 1.5}, "decode_parallelism"),
        ({"columns": ["nope"]}, "nope"),
        ({"dictionary_columns": ["nope"]}, "dictionary_columns"),
        ({"bach_size": 10}, "bach_size"),
    ],
)
def test_every_read_method_checks_its_options_alike(path, method, options, named):
    reader = looseleaf.open(path)
    with pytest.raises(looseleaf.InvalidArgumentError, match=named) as raised:
        READS[method](reader, **options)
    assert isinstance(raised.value, ValueError)
    # The same check, with the same message, whichever method it came through.
    with pytest.raises(looseleaf.InvalidArgumentError) as again:
        READS["read_all"](reader, **options)
    assert str(again.value) == str(raised.value)


@pytest.mark.parametrize("method", sorted(NEGATIVE_ROWS))
def test_negative_rows_are_invalid_arguments(path, method):
    reader = looseleaf.open(path)
    with pytest.raises(looseleaf.InvalidArgumentError, match=r"(start|indices): row -\d+ is negative"):
        NEGATIVE_ROWS[method](reader)


def test_open_options_are_the_defaults_of_every_read(path, table):
    reader = looseleaf.open(path, batch_size=1000, io_depth=2, io_buffer_bytes="1 MiB")
    assert reader.options["batch_size"] == 1000
    assert reader.options["io_depth"] == 2
    assert reader.options["io_buffer_bytes"] == 1 << 20
    assert {b.num_rows for b in reader.read_all()} == {1000}
    # A read's own option wins over the reader's.
    assert max(b.num_rows for b in reader.read_all(batch_size=7000)) == 7000
    with pytest.raises(looseleaf.InvalidArgumentError, match="batch_size"):
        looseleaf.open(path, batch_size=0)


def test_indices_of_every_shape_without_pandas(path, table):
    """numpy arrays, array.array, lists and pyarrow arrays are read without importing pandas
    (a fresh interpreter checks: its first take must not pay for that import)."""
    code = f"""
import array, sys
import looseleaf, pyarrow as pa
reader = looseleaf.open({str(path)!r})
rows = [5, 0, 5, 19_999]
import numpy as np
shapes = (rows, array.array("q", rows), array.array("I", rows), np.array(rows), np.array(rows, np.int32))
for indices in shapes:
    assert reader.take(indices, columns=["id"]).column(0).to_pylist() == rows, indices
assert "pandas" not in sys.modules, "a take imported pandas"
# (pyarrow.array itself imports pandas: built last.)
for indices in (pa.array(rows, pa.uint16()), pa.chunked_array([rows[:2], rows[2:]])):
    assert reader.take(indices, columns=["id"]).column(0).to_pylist() == rows, indices
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_io_budget_is_shared_by_reads_and_checked(path, table):
    budget = looseleaf.IoBudget("1 MiB", depth=2)
    assert (budget.bytes, budget.depth) == (1 << 20, 2)
    assert repr(budget) == "IoBudget(bytes=1048576, depth=2)"
    assert budget == budget
    assert budget != looseleaf.IoBudget(1 << 20, depth=2)
    assert looseleaf.IoBudget(4096).depth is None
    for bytes_, depth in [(0, None), ("lots", None), (1, 0), (1, -2)]:
        with pytest.raises(looseleaf.InvalidArgumentError):
            looseleaf.IoBudget(bytes_, depth)
    with pytest.raises(looseleaf.InvalidArgumentError, match="io_budget"):
        looseleaf.open(path, io_budget=1 << 20)

    # Two readers, the budget given to each.
    readers = [looseleaf.open(path, io_budget=budget, io_buffer_bytes="64 MiB") for _ in range(2)]
    assert readers[0].options["io_budget"] == budget
    streams = [r.stream(batch_size=1000) for r in readers]
    for stream in streams:
        assert pa.RecordBatchReader.from_stream(stream).read_all().equals(table)
    assert readers[1].take([5, 3, 5]).equals(table.take([5, 3, 5]))
    stats = budget.stats()
    assert stats["reads"] > 0
    assert stats["in_flight"] == 0
    assert stats["reserved_bytes"] == 0
    assert stats["peak_in_flight"] <= 2

    # The process-wide default: reads given no budget use it.
    assert looseleaf.get_io_budget() is None
    process = looseleaf.IoBudget("256 KiB", depth=1)
    looseleaf.set_io_budget(process)
    try:
        assert looseleaf.get_io_budget() == process
        assert looseleaf.open(path).to_table().equals(table)
        assert process.stats()["reads"] > 0
        assert process.stats()["peak_in_flight"] == 1
    finally:
        looseleaf.set_io_budget(None)
    assert looseleaf.get_io_budget() is None


FORKED_CHILD = """
import os, sys
import pyarrow as pa
import looseleaf

directory = sys.argv[1]
table = pa.table({"id": pa.array(range(50_000), pa.int64()), "s": [f"v{i % 77}" for i in range(50_000)]})
# The parent starts the runtime and the encoding threads, then forks (as Spark forks its
# Python workers): the child inherits neither thread and must start its own.
looseleaf.write_table(table, f"{directory}/parent.leaf", page_size=16_384)
assert looseleaf.open(f"{directory}/parent.leaf").read_all().read_all() == table
pid = os.fork()
if pid == 0:
    try:
        looseleaf.write_table(table, f"{directory}/child.leaf", page_size=16_384)
        ok = looseleaf.open(f"{directory}/child.leaf").read_all().read_all() == table
        os._exit(0 if ok else 1)
    except BaseException:
        os._exit(2)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_writes_and_reads(tmp_path):
    # A child process of its own, with a timeout: a child waiting on threads it did not
    # inherit would hang, not fail.
    script = tmp_path / "fork.py"
    script.write_text(FORKED_CHILD)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
