"""Traces of reads (``trace=looseleaf.Trace()``): every request the plan predicts, each read's
moments in order, the batches handed out, the Chrome JSON and its lanes, the PNG, and the
``looseleaf trace`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import looseleaf
from looseleaf import cli

ROWS = 20_000


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ints, strings, a list column and a small int column to filter on, in pages of 16 KiB."""
    out = tmp_path_factory.mktemp("trace") / "mixed.leaf"
    table = pa.table(
        {
            "id": pa.array(range(ROWS), type=pa.int64()),
            "s": pa.array([None if i % 7 == 0 else f"row {i} " + "x" * (i % 13) for i in range(ROWS)]),
            "l": pa.array(
                [None if i % 11 == 0 else list(range(i, i + i % 5)) for i in range(ROWS)],
                type=pa.list_(pa.int32()),
            ),
            "k": pa.array([(i * 7919) % 100 for i in range(ROWS)], type=pa.int32()),
        }
    )
    looseleaf.write_table(table, out, page_size=16 * 1024)
    return out


OPTIONS = {"io_buffer_bytes": 64 * 1024, "batch_size": 1000}


def planned_reads(plan: dict, columns: set[int] | None = None) -> Counter:
    """The direct storage reads of a plan, as a multiset of byte ranges."""
    return Counter(
        tuple(read)
        for request in plan["request_list"]
        if request["known"] and (columns is None or request["column"] in columns)
        for read in request["reads"]
    )


def traced_reads(trace: looseleaf.Trace, columns: set[int] | None = None) -> Counter:
    """The completed direct storage reads of a trace, as a multiset of byte ranges."""
    return Counter(
        (r["offset"], r["end"])
        for r in trace.reads
        if r["known"] and r["completed_us"] is not None and (columns is None or r["column"] in columns)
    )


def check_trace(trace: looseleaf.Trace, rows: int) -> None:
    """What every trace of a completed read satisfies."""
    reads = trace.reads
    assert reads
    for r in reads:
        assert r["issued_us"] is not None, r
        assert r["completed_us"] is not None, r
        assert r["queued_us"] <= r["issued_us"] <= r["completed_us"], r
        assert not r["failed"]
    assert sum(b["rows"] for b in trace.batches) == rows
    lanes = {s["lane"] for s in trace.spans}
    assert {"scheduling", "decode loop", "decode", "consumer"} <= lanes
    assert trace.budget
    assert trace.budget[-1]["reads_in_flight"] == 0
    assert trace.info["io_buffer_bytes"] == OPTIONS["io_buffer_bytes"]

    document = json.loads(trace.to_chrome_json())
    events = document["traceEvents"]
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    for lane in ("scheduling", "decode loop", "decode (thread", "consumer"):
        assert any(n.startswith(lane) for n in names), (lane, names)
    io = [e for e in events if e.get("cat") == "io"]
    assert Counter(e["ph"] for e in io) == {"b": len(reads), "e": len(reads)}
    assert any(e["ph"] == "C" and e["name"] == "I/O buffer (bytes)" for e in events)


def test_scan_records_every_planned_request(path: Path) -> None:
    reader = looseleaf.open(path)
    plan = reader.plan(**OPTIONS)
    assert plan["requests"] > 8
    trace = looseleaf.Trace()
    rows = sum(b.num_rows for b in reader.read_all(trace=trace, **OPTIONS))
    assert rows == ROWS
    check_trace(trace, ROWS)
    assert traced_reads(trace) == planned_reads(plan)
    assert any(r["bypassed"] for r in trace.reads), "a 64 KiB buffer is passed by the lowest rows' reads"
    assert trace.summary()["rows"] == ROWS


def test_range_and_to_table(path: Path) -> None:
    reader = looseleaf.open(path)
    columns = ["s", "l"]
    plan = reader.plan(columns, start=3_333, num_rows=9_012, **OPTIONS)
    trace = looseleaf.Trace()
    rows = sum(b.num_rows for b in reader.read_range(3_333, 9_012, columns, trace=trace, **OPTIONS))
    assert rows == 9_012
    check_trace(trace, rows)
    assert traced_reads(trace) == planned_reads(plan)

    trace = looseleaf.Trace()
    table = reader.to_table(["id", "k"], start=100, num_rows=5_000, trace=trace, **OPTIONS)
    check_trace(trace, table.num_rows)
    assert traced_reads(trace) == planned_reads(
        reader.plan(["id", "k"], start=100, num_rows=5_000, **OPTIONS)
    )


def test_take_records_every_planned_request(path: Path) -> None:
    reader = looseleaf.open(path)
    indices = [(i * 7_777 + 13) % ROWS for i in range(300)] + [5, 5, ROWS - 1]
    plan = reader.plan(indices=indices, **OPTIONS)
    trace = looseleaf.Trace()
    taken = reader.take(indices, trace=trace, **OPTIONS)
    assert taken.num_rows == len(indices)
    check_trace(trace, len(indices))
    assert traced_reads(trace) == planned_reads(plan)
    # Items of lists found through their offsets: indirect, exactly when the plan says so.
    indirect = [r for r in trace.reads if not r["known"]]
    assert bool(indirect) == (plan["indirect_requests"] > 0)


def test_filtered_read_traces_every_stage(path: Path) -> None:
    reader = looseleaf.open(path)
    flt = [("k", "<", 30)]
    plan = reader.plan(filter=flt, **OPTIONS)
    filter_columns = {r["column"] for r in plan["request_list"]}
    assert filter_columns
    # The filter column is not returned: one the read returned would be read in stage 3 too, for
    # its values where the filter passed.
    others = [name for name in reader.schema.names if name != "k"]
    trace = looseleaf.Trace()
    table = reader.to_table(others, filter=flt, trace=trace, **OPTIONS)
    assert table.num_rows == sum(1 for i in range(ROWS) if (i * 7919) % 100 < 30)
    check_trace(trace, table.num_rows)
    # Stage 2 reads the filter columns as planned; stage 3 (what matched decides it) the others.
    assert traced_reads(trace, filter_columns) == planned_reads(plan)
    assert {r["column"] for r in trace.reads} - filter_columns


def test_png_is_drawn(path: Path, tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    reader = looseleaf.open(path)
    trace = looseleaf.Trace()
    reader.to_table(trace=trace, **OPTIONS)
    out = tmp_path / "trace.png"
    trace.to_png(out, width=12.0, dpi=100)
    assert out.stat().st_size > 10_000
    pixels = image.imread(out)
    height, width = pixels.shape[:2]
    assert width == 1200
    assert 400 <= height <= 3000
    assert "reads=" in repr(trace)


def test_events_and_json_file(path: Path, tmp_path: Path) -> None:
    trace = looseleaf.Trace()
    looseleaf.open(path).take([1, 2, 3], ["id"], trace=trace)
    kinds = Counter(e["type"] for e in trace.events)
    assert kinds["read"] == len(trace.reads)
    assert kinds["span"]
    assert kinds["budget"]
    out = tmp_path / "trace.json"
    trace.to_chrome_json(out)
    assert json.loads(out.read_text())["traceEvents"]


def test_a_trace_must_be_a_trace(path: Path) -> None:
    with pytest.raises(looseleaf.InvalidArgumentError, match="trace"):
        looseleaf.open(path).to_table(trace="yes")


def test_import_does_not_load_matplotlib() -> None:
    code = "import sys, looseleaf; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_command(path: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png, chrome = tmp_path / "take.png", tmp_path / "take.json"
    command = [sys.executable, "-m", "looseleaf", "trace", str(path), "--take", "200", "--columns", "s,l"]
    out = subprocess.run(
        [*command, "--json", str(chrome), "-o", str(png)], capture_output=True, text=True, check=True
    )
    assert "200 rows" in out.stdout
    assert png.stat().st_size > 10_000
    assert json.loads(chrome.read_text())["traceEvents"]

    # In process, on a range with a small buffer.
    png = tmp_path / "range.png"
    status = cli.main(["trace", str(path), "--range", "100:5000", "--io-buffer", "32KiB", "-o", str(png)])
    assert status == 0
    assert png.exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.leaf"], "missing.leaf"),
        (["{path}", "--columns", "nope"], "nope"),
    ],
)
def test_command_errors_are_one_line(path: Path, tmp_path: Path, arguments: list[str], message: str) -> None:
    pytest.importorskip("matplotlib")
    arguments = [a.format(path=path) for a in arguments]
    out = subprocess.run(
        [sys.executable, "-m", "looseleaf", "trace", *arguments, "-o", str(tmp_path / "x.png")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert message in out.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--range", "5:1"], "--range"),
        (["--range", "5"], "--range"),
        (["--take", "-1"], "--take"),
        (["--io-depth", "deep"], "--io-depth"),
    ],
)
def test_command_usage_errors(path: Path, tmp_path: Path, arguments: list[str], message: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "looseleaf", "trace", str(path), *arguments, "-o", str(tmp_path / "x.png")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert message in out.stderr.strip().splitlines()[-1]
