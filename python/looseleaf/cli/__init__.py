"""The ``looseleaf`` command: ``head``, ``cat``, ``inspect``, ``convert``, ``demo`` and ``trace``.

Each command lives in its own module (:mod:`.show` for ``head`` and ``cat``, :mod:`.inspect`,
:mod:`.convert`, :mod:`.demo`, :mod:`.trace`); this one parses the arguments and turns failures
into exit codes:

- 0 on success; 1 with one line ``looseleaf: error: <cause>`` on stderr for any error (a missing
  or corrupt file, a bad format, a pyarrow error, ...), never a traceback unless ``--traceback``
  is given; 2 for usage errors (argparse's message); 130 on Ctrl-C, quietly; 141 (the
  convention for SIGPIPE) when stdout is closed early, as in ``looseleaf cat f.leaf | head``,
  quietly.
- Paths are anything :func:`looseleaf.open` takes (object store URLs included); each
  ``--storage-option KEY=VALUE`` (repeatable, on every command that takes a path) configures
  the store.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .. import __version__
from ..exceptions import LooseleafError
from ._common import CliError
from .demo import run_demo, sample_table
from .formats import FORMATS, guess_format

__all__ = ["main", "sample_table"]

#: Exit codes besides 0, 1 and argparse's 2.
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``) and returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in argv[: _command_index(argv)]
    try:
        return _run(argv)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as e:
        if show_traceback:
            raise
        print(f"looseleaf: error: {_one_line(e)}", file=sys.stderr)
        return 1


def _run(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(args.rows, args.dir)
    if args.command == "spark-jar":
        # Not through looseleaf.spark, which imports PySpark.
        from .._connector import jar_path

        print(jar_path())
        return 0
    storage_options = _storage_options(parser, args.storage_option)
    if args.command == "inspect":
        from .inspect import run_inspect

        return run_inspect(
            args.path,
            pages=args.pages,
            as_json=args.json,
            arrow_size=args.arrow_size,
            storage_options=storage_options,
        )
    if args.command == "convert":
        from .convert import run_convert

        return run_convert(
            args.source,
            args.destination,
            source_format=args.from_format or guess_format(args.source, default="leaf"),
            destination_format=args.to_format or guess_format(args.destination),
            page_size=args.page_size,
            storage_options=storage_options,
        )
    if args.command == "trace":
        from .trace import run_trace

        return run_trace(
            args.path,
            output=args.output,
            columns=_columns(parser, args.columns),
            take=args.take,
            row_range=args.range,
            seed=args.seed,
            chrome_json=args.json,
            title=args.title,
            io_buffer=args.io_buffer,
            io_depth=args.io_depth,
            batch_size=args.batch_size,
            storage_options=storage_options,
        )
    from .show import run_show

    return run_show(
        args.path,
        fmt=args.from_format or guess_format(args.path, default="leaf"),
        output=args.format or ("table" if args.command == "head" else "csv"),
        columns=_columns(parser, args.columns),
        filter=_filter(parser, args.filter),
        limit=args.limit,
        storage_options=storage_options,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="looseleaf",
        description="Read, inspect and convert looseleaf columnar files.",
        epilog="Errors are one line on stderr with exit code 1 (2 for usage errors).",
    )
    parser.add_argument("--version", action="version", version=f"looseleaf {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", help="show the Python traceback of an error (for bug reports)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    storage = argparse.ArgumentParser(add_help=False)
    storage.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="configure the object store (object_store keys: aws_endpoint, aws_region, ...); repeatable",
    )

    rows = argparse.ArgumentParser(add_help=False, parents=[storage])
    rows.add_argument("path", help="a file, URL, or (with looseleaf.dataset) a directory ending in /")
    rows.add_argument("--columns", help="comma-separated columns to print; nested fields as parent.child")
    rows.add_argument(
        "--filter",
        metavar="JSON",
        help="looseleaf only: rows to keep, as pyarrow.parquet filter tuples in JSON, e.g. "
        '\'[["qty", "<", 24], ["kind", "in", ["a", "b"]]]\' (a list of lists is an OR); '
        "strings compared with dates, timestamps or decimals are cast to the column's type",
    )
    rows.add_argument(
        "--from", dest="from_format", choices=FORMATS, help="the file's format (default: from its extension)"
    )

    head = commands.add_parser(
        "head",
        parents=[rows],
        help="print the first rows (a table by default)",
        description="Print the first rows; reads only those rows of a looseleaf file.",
    )
    head.add_argument("-n", "--limit", type=_non_negative, default=10, help="rows to print (default 10)")
    head.add_argument("--format", choices=("table", "csv", "jsonl"), help="output format (default table)")

    cat = commands.add_parser(
        "cat",
        parents=[rows],
        help="print every row (CSV by default), streaming",
        description="Print every row, batch by batch, in constant memory.",
    )
    cat.add_argument("-n", "--limit", type=_non_negative, default=None, help="print at most this many rows")
    cat.add_argument("--format", choices=("table", "csv", "jsonl"), help="output format (default csv)")

    inspect = commands.add_parser(
        "inspect",
        parents=[storage],
        help="print a file's summary and, per column, type, encodings, pages, bytes and Arrow size",
    )
    inspect.add_argument("path")
    inspect.add_argument("--pages", action="store_true", help="also list every page")
    inspect.add_argument("--json", action="store_true", help="print the metadata as JSON")
    inspect.add_argument(
        "--arrow-size",
        choices=("auto", "read", "estimate"),
        default="auto",
        help="how to get the Arrow (in-memory) size: 'read' reads the file once to measure it; "
        "'estimate' uses the metadata only (fixed-width columns; strings show -); "
        "'auto' (default) reads files of at most 64 MB of data and estimates larger ones",
    )

    convert = commands.add_parser(
        "convert",
        parents=[storage],
        help="convert between looseleaf, Parquet, Arrow IPC and CSV, streaming",
        description="Convert between looseleaf (.leaf), Parquet (.parquet, .pq), Arrow IPC "
        "(.arrow, .feather, .ipc, .arrows) and CSV (.csv), at any location. A progress bar is "
        "drawn when stderr is a terminal.",
    )
    convert.add_argument("source")
    convert.add_argument("destination")
    convert.add_argument(
        "--from", dest="from_format", choices=FORMATS, help="the source's format (default: its extension)"
    )
    convert.add_argument(
        "--to",
        "--format",
        dest="to_format",
        choices=FORMATS,
        help="the destination's format (default: its extension)",
    )
    convert.add_argument(
        "--page-size", type=int, default=None, help="target page size in bytes (looseleaf destinations)"
    )

    demo = commands.add_parser("demo", help="write a sample table and read it back by scan, range and take")
    demo.add_argument(
        "--rows", type=int, default=2_000_000, help="rows of the sample table (default 2,000,000)"
    )
    demo.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")

    commands.add_parser(
        "spark-jar",
        help="print the path of the JVM Spark connector's jar (for spark-submit --jars, spark.jars)",
        description="Print the path of this installation's looseleaf-spark.jar: the JVM Spark "
        "connector with its native library, for spark-submit --jars, spark.jars in "
        "spark-defaults.conf or a cluster manager.",
    )

    trace = commands.add_parser(
        "trace",
        parents=[storage],
        help="read a file with a trace and draw it: reads in flight, decoding, the I/O buffer",
        description="Read a looseleaf file with a trace and draw it: the scheduling loop, the "
        "storage reads in flight, decoding, the batches handed out and the I/O buffer over time.",
    )
    trace.add_argument("path", help="a path or URL (s3://, gs://, az://, http(s)://, memory://)")
    trace.add_argument("-o", "--output", required=True, help="the PNG to write")
    trace.add_argument("--columns", help="comma-separated columns to read (default: all)")
    which = trace.add_mutually_exclusive_group()
    which.add_argument(
        "--take", type=_non_negative, metavar="N", help="take N random rows (seeded by --seed)"
    )
    which.add_argument("--range", type=_row_range, metavar="A:B", help="read rows A to B (B excluded)")
    trace.add_argument("--seed", type=int, default=0, help="seed of the rows --take picks (default 0)")
    trace.add_argument("--json", metavar="OUT.json", help="also write the Chrome trace JSON (Perfetto)")
    trace.add_argument(
        "--io-buffer", metavar="SIZE", help="the I/O buffer, e.g. 8MiB (default: the storage's)"
    )
    trace.add_argument("--io-depth", type=_io_depth, metavar="N", help="reads in flight, or auto")
    trace.add_argument("--batch-size", type=int, metavar="ROWS", help="rows per batch")
    trace.add_argument("--title", help="the picture's title (default: the file's name and the read)")
    return parser


def _command_index(argv: list[str]) -> int:
    """The index of the command in ``argv``: the first argument that is not a global flag."""
    for i, arg in enumerate(argv):
        if arg != "--traceback":
            return i
    return len(argv)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of rows: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _row_range(text: str) -> tuple[int, int]:
    """``--range A:B``: rows A (included) to B (excluded)."""
    first, sep, last = text.partition(":")
    try:
        start, end = int(first), int(last)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not A:B (two row numbers): {text!r}") from None
    if not sep or start < 0 or end < start:
        raise argparse.ArgumentTypeError(f"must be A:B with 0 <= A <= B, got {text!r}")
    return start, end


def _io_depth(text: str) -> int | str:
    """``--io-depth``: reads in flight, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of reads or auto: {text!r}") from None


def _storage_options(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--storage-option takes KEY=VALUE, got {pair!r}")
        options[key] = value
    return options


def _columns(parser: argparse.ArgumentParser, text: str | None) -> list[str] | None:
    if text is None:
        return None
    columns = [c.strip() for c in text.split(",")]
    if not all(columns):
        parser.error(f"--columns takes comma-separated names, got {text!r}")
    return columns


def _filter(parser: argparse.ArgumentParser, text: str | None) -> Any:
    """``--filter``'s JSON as ``pyarrow.parquet``'s filter: tuples, in a list (AND) or a list
    of lists (OR of ANDs)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        parser.error(f"--filter is not JSON ({e}): {text!r}")

    def predicate(node: Any) -> Any:
        if isinstance(node, list) and len(node) == 3 and all(isinstance(x, str) for x in node[:2]):
            return (node[0], node[1], node[2])
        if isinstance(node, list) and node:
            return [predicate(x) for x in node]
        parser.error(f'--filter takes [column, op, value] lists, e.g. [["qty", "<", 24]], got {text!r}')

    converted = predicate(value)
    return [converted] if isinstance(converted, tuple) else converted


def _one_line(error: BaseException) -> str:
    """``error`` as one line: its message (with the exception's type when the message alone is
    unclear), and its cause's when that adds something."""
    message = " ".join(str(error).split()) or type(error).__name__
    if not isinstance(error, LooseleafError | CliError | OSError | pa.ArrowException):
        message = f"{type(error).__name__}: {message}"
    cause = error.__cause__
    if cause is not None and not isinstance(error, CliError):
        reason = " ".join(str(cause).split())
        if reason and reason not in message:
            message = f"{message} (caused by: {reason})"
    return message


def _silence_stdout() -> None:
    """Points stdout at /dev/null, so the interpreter's last flush of a closed pipe is quiet."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
