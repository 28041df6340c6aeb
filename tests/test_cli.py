"""The ``looseleaf`` command, run as a subprocess (``python -m looseleaf``) on small files: what
``head``/``cat`` print parses back to the rows written, ``convert`` round trips every format,
``inspect`` accounts for every column, errors are one line, a closed pipe is quiet, and the
progress bar appears on a terminal only."""

from __future__ import annotations

import base64
import datetime
import decimal
import itertools
import json
import os
import pty
import select
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import looseleaf
from looseleaf import cli

ROWS = 20_000
#: Columns pyarrow.csv writes as they are (the others become JSON text).
FLAT = ["id", "score", "name", "flag", "day", "price", "at"]


def _table(n: int = ROWS) -> pa.Table:
    names = ["alpha", "", "gamma, with a comma", 'say "hi"', "ünïcode"]
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "score": pa.array([None if i % 7 == 0 else i * 0.25 for i in range(n)], pa.float64()),
            "name": pa.array([None if i % 11 == 0 else names[i % 5] for i in range(n)], pa.string()),
            "flag": pa.array([None if i % 13 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
            "day": pa.array(
                [
                    None if i % 17 == 0 else datetime.date(2024, 1, 1) + datetime.timedelta(i % 400)
                    for i in range(n)
                ],
                pa.date32(),
            ),
            "price": pa.array(
                [None if i % 19 == 0 else decimal.Decimal(i % 1000 - 500) / 100 for i in range(n)],
                pa.decimal128(9, 2),
            ),
            "at": pa.array(
                [None if i % 23 == 0 else 1_700_000_000_000_000 + i * 1_000_003 for i in range(n)],
                pa.timestamp("us"),
            ),
            "tags": pa.array(
                [None if i % 29 == 0 else [f"t{j}" for j in range(i % 4)] for i in range(n)],
                pa.list_(pa.string()),
            ),
            "meta": pa.array(
                [
                    None if i % 31 == 0 else {"k": i % 5, "v": None if i % 3 == 0 else f"v{i}"}
                    for i in range(n)
                ],
                pa.struct([("k", pa.int32()), ("v", pa.string())]),
            ),
            "blob": pa.array(
                [None if i % 37 == 0 else bytes([i % 256, 0, 255]) for i in range(n)], pa.binary()
            ),
        }
    )


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


@pytest.fixture
def leaf(tmp_path, table) -> str:
    path = tmp_path / "t.leaf"
    looseleaf.write_table(table, path)
    return str(path)


def run(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """``python -m looseleaf ARGS`` with this environment (PYTHONPATH kept)."""
    done = subprocess.run(
        [sys.executable, "-m", "looseleaf", *args], capture_output=True, check=False, **kwargs
    )
    if check:
        assert done.returncode == 0, done.stderr
        assert not done.stderr, done.stderr
    return done


def _csv(data: bytes, schema: pa.Schema) -> pa.Table:
    convert = pacsv.ConvertOptions(
        column_types=schema, strings_can_be_null=True, quoted_strings_can_be_null=False
    )
    return pacsv.read_csv(pa.BufferReader(data), convert_options=convert)


def _expected_json(value, type_: pa.DataType):
    """``value`` (from ``to_pylist``) as the CLI's JSON form parses back (floats as Decimal)."""
    if value is None:
        return None
    if pa.types.is_struct(type_):
        return {f.name: _expected_json(value[f.name], f.type) for f in type_}
    if pa.types.is_list(type_):
        return [_expected_json(v, type_.value_type) for v in value]
    if pa.types.is_binary(type_):
        return base64.b64encode(value).decode()
    if pa.types.is_temporal(type_):
        return value.isoformat()
    if pa.types.is_floating(type_):
        return decimal.Decimal(repr(value))
    return value


def _assert_json_lines(text: bytes, expected: pa.Table) -> None:
    lines = text.decode().splitlines()
    assert len(lines) == expected.num_rows
    for line, row in zip(lines, expected.to_pylist(), strict=True):
        parsed = json.loads(line, parse_float=decimal.Decimal)
        assert list(parsed) == expected.column_names
        for field in expected.schema:
            assert parsed[field.name] == _expected_json(row[field.name], field.type), field.name


def test_head_prints_the_first_rows_in_every_format(leaf, table):
    first = table.slice(0, 7)
    out = run("head", leaf, "-n", "7", "--format", "csv").stdout
    assert _csv(out, table.select(FLAT).schema).select(FLAT).equals(first.select(FLAT))
    _assert_json_lines(run("head", leaf, "--limit", "7", "--format", "jsonl").stdout, first)

    wide = {**os.environ, "COLUMNS": "300"}
    lines = run("head", leaf, env=wide).stdout.decode().splitlines()
    assert len(lines) == 2 + 10
    assert lines[0].split() == table.column_names
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:2] == ["0", "null"]  # row 0: id 0, score null
    assert '["t0", "t1"]' in "\n".join(lines)  # a list, in its JSON form
    narrow = {**os.environ, "COLUMNS": "50"}
    lines = run("head", leaf, env=narrow).stdout.decode().splitlines()
    assert len(lines) == 2 + 10
    assert max(len(line) for line in lines) <= 50
    assert "more" in lines[0]  # columns dropped to fit, and said so


def test_head_columns_and_filter(leaf, table):
    out = run("head", leaf, "--columns", "id,meta.k", "-n", "3", "--format", "jsonl").stdout
    assert [json.loads(line) for line in out.decode().splitlines()] == [
        {"id": 0, "meta": None},
        {"id": 1, "meta": {"k": 1}},
        {"id": 2, "meta": {"k": 2}},
    ]
    out = run(
        "head",
        leaf,
        "--filter",
        '[["day", ">=", "2025-02-01"], ["id", "<", 1000]]',
        "--columns",
        "id,day",
        "--format",
        "csv",
        "-n",
        "1000",
    ).stdout
    got = _csv(out, pa.schema([("id", pa.int64()), ("day", pa.date32())]))
    want = table.filter(
        (pa.compute.field("day") >= datetime.date(2025, 2, 1)) & (pa.compute.field("id") < 1000)
    ).select(["id", "day"])
    assert want.num_rows > 0
    assert got.equals(want)


def test_head_of_an_empty_file_prints_the_header(tmp_path, table):
    path = tmp_path / "empty.leaf"
    looseleaf.write_table(table.slice(0, 0), path)
    assert run("head", str(path), "--format", "csv").stdout.decode().strip() == ",".join(
        f'"{c}"' for c in table.column_names
    )
    assert run("head", str(path)).stdout.decode().splitlines()[0].split() == table.column_names


def test_cat_streams_every_row_as_csv(leaf, table):
    out = run("cat", leaf).stdout
    schema = table.schema
    for name in ("tags", "meta", "blob"):
        schema = schema.set(schema.get_field_index(name), pa.field(name, pa.string()))
    got = _csv(out, schema)
    assert got.select(FLAT).equals(table.select(FLAT))
    # Nested columns are their JSON form, binary its base64 text.
    assert [None if v is None else json.loads(v) for v in got["meta"].to_pylist()] == table[
        "meta"
    ].to_pylist()
    assert got["blob"].to_pylist()[1] == base64.b64encode(table["blob"][1].as_py()).decode()
    limited = run("cat", leaf, "--limit", "9000", "--format", "jsonl").stdout
    _assert_json_lines(limited, table.slice(0, 9000))


def test_cat_into_a_closed_pipe_is_quiet(leaf):
    process = subprocess.Popen(
        [sys.executable, "-m", "looseleaf", "cat", leaf], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout.readline().startswith(b'"id"')
    process.stdout.close()  # as `| head -1` does
    _, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, 141)
    assert stderr == b""


@pytest.mark.parametrize(("source", "destination"), [("parquet", "leaf"), ("leaf", "arrow"), ("arrow", "pq")])
def test_convert_is_lossless_between_binary_formats(tmp_path, table, source, destination):
    src = tmp_path / f"in.{source}"
    {"parquet": pq.write_table, "leaf": looseleaf.write_table, "arrow": _write_ipc}[source](table, src)
    dst = tmp_path / f"out.{destination}"
    done = run("convert", str(src), str(dst))
    assert f"{ROWS:,} rows" in done.stdout.decode()
    assert _read(dst).equals(table)


def test_convert_round_trips_through_every_format(tmp_path, table):
    """parquet -> leaf -> arrow -> csv -> leaf: the flat columns come back; nested and binary
    ones as their text."""
    pq.write_table(table, tmp_path / "a.parquet")
    steps = ["a.parquet", "b.leaf", "c.arrow", "d.csv", "e.leaf"]
    for src, dst in itertools.pairwise(steps):
        run("convert", str(tmp_path / src), str(tmp_path / dst))
    assert looseleaf.open(tmp_path / "b.leaf").to_table().equals(table)
    assert _read(tmp_path / "c.arrow").equals(table)
    back = looseleaf.open(tmp_path / "e.leaf").to_table()
    assert back.select(FLAT).cast(table.select(FLAT).schema).equals(table.select(FLAT))
    assert back["meta"].to_pylist()[:40] == [
        None if v is None else json.dumps(v) for v in table["meta"].to_pylist()[:40]
    ]


def test_convert_with_explicit_formats(tmp_path, table):
    src = tmp_path / "data.bin"
    pq.write_table(table, src)
    out = tmp_path / "out.stream"
    run("convert", str(src), str(out), "--from", "parquet", "--format", "arrow")
    assert _read(out).equals(table)
    # The streaming IPC format, by its extension, both ways.
    run("convert", str(out), str(tmp_path / "s.arrows"), "--from", "arrow")
    with pytest.raises(pa.ArrowInvalid):
        ipc.open_file(tmp_path / "s.arrows")
    run("convert", str(tmp_path / "s.arrows"), str(tmp_path / "s.leaf"))
    assert looseleaf.open(tmp_path / "s.leaf").to_table().equals(table)


def test_inspect_lists_every_column(leaf, table):
    metadata = looseleaf.open(leaf).metadata
    out = run("inspect", leaf, "--pages").stdout.decode()
    assert f"{ROWS:,} rows" in out
    lines = out.splitlines()
    fields = {c["field"] for c in metadata["columns"]}
    assert {"tags.item", "meta.k", "meta.v"} <= fields
    listed = {line.split()[0] for line in lines if line.split() and line.split()[0] in fields}
    assert listed == fields
    total = next(line for line in lines if line.startswith("(total)")).split()
    assert int(total[2].replace(",", "")) == sum(c["bytes"] for c in metadata["columns"])
    # Measured by reading: every column has an Arrow size and a ratio.
    assert "measured" in out
    assert total[3] != "-"
    assert total[4].endswith("x")
    estimate = run("inspect", leaf, "--arrow-size", "estimate").stdout.decode()
    assert "estimated" in estimate
    as_json = json.loads(run("inspect", leaf, "--json").stdout)
    assert as_json["columns"][0] == metadata["columns"][0]
    assert [c["bytes"] for c in as_json["columns"]] == [c["bytes"] for c in metadata["columns"]]


def _assert_one_line_error(done: subprocess.CompletedProcess, *words: str) -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith("looseleaf: error: ")
    assert stderr.count("\n") == 1, stderr
    for word in words:
        assert word in stderr
    return stderr


def test_errors_are_one_line(tmp_path, leaf):
    missing = str(tmp_path / "missing.leaf")
    for command in (
        ["head", missing],
        ["cat", missing],
        ["inspect", missing],
        ["convert", missing, "x.parquet"],
    ):
        _assert_one_line_error(run(*command, check=False), "missing.leaf")
    _assert_one_line_error(run("head", str(tmp_path / "missing.parquet"), check=False), "missing.parquet")

    with open(leaf, "rb") as f:
        data = f.read()
    truncated = tmp_path / "truncated.leaf"
    truncated.write_bytes(data[: len(data) // 2])
    _assert_one_line_error(run("head", str(truncated), check=False), "truncated.leaf")
    damaged = tmp_path / "damaged.leaf"
    damaged.write_bytes(data[:100] + bytes(200) + data[300:])
    _assert_one_line_error(run("cat", str(damaged), check=False), "damaged.leaf")
    not_parquet = tmp_path / "garbage.parquet"
    not_parquet.write_bytes(b"not parquet at all")
    _assert_one_line_error(run("convert", str(not_parquet), str(tmp_path / "o.leaf"), check=False))
    assert not (tmp_path / "o.leaf").exists()

    _assert_one_line_error(run("convert", leaf, str(tmp_path / "out.txt"), check=False), "out.txt", "--to")
    _assert_one_line_error(run("head", leaf, "--columns", "nope", check=False), "nope")
    _assert_one_line_error(run("head", leaf, "--filter", '[["day", "<", "soon"]]', check=False), "soon")
    usage = run("head", leaf, "-n", "-3", check=False)
    assert usage.returncode == 2
    assert b"Traceback" not in usage.stderr


def test_failed_conversion_leaves_no_file(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text("a,b\n1,2\n" + "3,4\n" * 10 + "x,y,z\n")
    dst = tmp_path / "out.parquet"
    _assert_one_line_error(run("convert", str(src), str(dst), check=False), "CSV")
    assert not dst.exists()


def _run_on_terminal(args: list[str]) -> tuple[int, str]:
    """Runs ``python -m looseleaf ARGS`` with stderr on a pseudo-terminal; its exit code and
    what it wrote there."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "looseleaf", *args], stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            process.kill()
            raise AssertionError("no output from the pseudo-terminal in 60 s")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_progress_bar_on_a_terminal_only(tmp_path, table):
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=2000)
    code, terminal = _run_on_terminal(["convert", str(src), str(tmp_path / "tty.leaf")])
    assert code == 0, terminal
    assert f"/{ROWS:,} rows" in terminal
    assert "%" in terminal
    assert "MB/s" in terminal
    piped = run("convert", str(src), str(tmp_path / "piped.leaf"))
    assert piped.stderr == b""
    assert "rows" not in piped.stderr.decode()


def test_trace_without_matplotlib_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    assert cli.main(["trace", "never-read.leaf", "-o", str(tmp_path / "t.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("looseleaf: error: looseleaf trace draws with matplotlib")
    assert err.count("\n") == 1


def test_ctrl_c_exits_130_quietly(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_demo", interrupted)
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == ""


def test_a_directory_is_read_as_a_dataset(tmp_path):
    """``head``, ``cat`` and ``convert`` of a partitioned directory read it with
    ``looseleaf.dataset``: partition directories are columns, a filter on them is applied."""
    table = pa.table(
        {"id": pa.array(range(40), pa.int64()), "k": pa.array([i % 4 for i in range(40)], pa.int32())}
    )
    looseleaf.write_dataset(table, tmp_path / "ds", partitioning=["k"], max_rows_per_file=3)
    done = run("head", str(tmp_path / "ds"), "-n", "3", "--format", "jsonl", "--filter", '[["k", "==", 2]]')
    assert [json.loads(line) for line in done.stdout.splitlines()] == [{"id": i, "k": 2} for i in (2, 6, 10)]
    run("convert", str(tmp_path / "ds"), str(tmp_path / "all.parquet"))
    assert pq.read_table(tmp_path / "all.parquet").sort_by("id").equals(table)


def test_parquet_on_an_object_store(tmp_path, table):
    """``--storage-option`` reaches pyarrow's S3 filesystem for Parquet, as looseleaf's store.

    The Parquet file is uploaded with boto3: pyarrow's multipart uploads fail against moto 5.2
    (its CompleteMultipartUpload answer is an error to the AWS SDK pyarrow bundles), so writing
    Parquet to S3 is not tested here."""
    pytest.importorskip("moto")
    from s3_server import start_moto

    server = start_moto()
    try:
        server.create_bucket("cli-tests")
        flags = [f"--storage-option={k}={v}" for k, v in server.storage_options().items()]
        pq.write_table(table, tmp_path / "in.parquet")
        server.client().upload_file(str(tmp_path / "in.parquet"), "cli-tests", "t.parquet")
        run("convert", "s3://cli-tests/t.parquet", "s3://cli-tests/t.leaf", *flags)
        run("convert", "s3://cli-tests/t.leaf", str(tmp_path / "back.arrow"), *flags)
        assert _read(tmp_path / "back.arrow").equals(table)
        out = run(
            "head", "s3://cli-tests/t.parquet", "-n", "2", "--format", "jsonl", "--columns", "id", *flags
        )
        assert out.stdout.decode().splitlines() == ['{"id": 0}', '{"id": 1}']
        bad = run("head", "s3://cli-tests/t.parquet", "--storage-option", "nonsense=1", check=False)
        _assert_one_line_error(bad, "nonsense")
    finally:
        server.stop()


def _write_ipc(table: pa.Table, path) -> None:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)


def _read(path) -> pa.Table:
    path = str(path)
    if path.endswith((".parquet", ".pq")):
        return pq.read_table(path)
    if path.endswith(".leaf"):
        return looseleaf.open(path).to_table()
    try:
        return ipc.open_file(path).read_all()
    except pa.ArrowInvalid:
        return ipc.open_stream(path).read_all()
