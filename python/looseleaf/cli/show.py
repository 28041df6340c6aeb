"""``looseleaf head`` and ``looseleaf cat``: rows as a table, CSV or JSON lines on stdout.

``head`` prints the first rows (10 by default) as a table; ``cat`` prints every row (or
``--limit``) as CSV. Both stream batch by batch and flush each one, so ``cat`` runs in constant
memory and ``head`` of a looseleaf file reads only the rows it prints (``read_range``; with a
filter, the read stops once enough rows matched).

The table fits the terminal's width when stdout is a terminal or ``COLUMNS`` is set
(``shutil.get_terminal_size``); otherwise only cells are cut, not the table.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from ._common import CliError
from .formats import open_source
from .text import CsvOutput, JsonLinesOutput, TableOutput

#: Output formats of ``head`` and ``cat``.
OUTPUTS = ("table", "csv", "jsonl")


def run_show(
    path: str,
    *,
    fmt: str,
    output: str,
    columns: Sequence[str] | None,
    filter: Any,
    limit: int | None,
    storage_options: dict[str, str],
) -> int:
    """Prints the rows of ``path`` (format ``fmt``) in ``output`` format; see the module docs."""
    out = sys.stdout.buffer
    if output == "table":
        writer: Any = TableOutput(out, _table_width())
    elif output == "csv":
        writer = CsvOutput(out)
    elif output == "jsonl":
        writer = JsonLinesOutput(out)
    else:
        raise CliError(f"unknown output format {output!r} (one of {', '.join(OUTPUTS)})")
    source = open_source(
        path, fmt, columns=columns, filter=filter, limit=limit, storage_options=storage_options
    )
    try:
        for batch in source.batches:
            if batch.num_rows:
                writer.write(batch)
        writer.close(source.schema)
    finally:
        source.close()
    return 0


def _table_width() -> int | None:
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return shutil.get_terminal_size().columns
    return None
