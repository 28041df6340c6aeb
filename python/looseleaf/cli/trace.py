"""``looseleaf trace FILE -o trace.png``: reads a looseleaf file with a :class:`looseleaf.Trace`
and draws it (the scheduling loop, the storage reads in flight, decoding, the batches handed out
and the I/O buffer over time); ``--json`` writes the Chrome trace JSON too, for Perfetto.

The read is a scan, a range of rows (``--range A:B``) or a take of random rows (``--take N``,
seeded by ``--seed``), of every column or of ``--columns``, with the read's own options
(``--io-buffer``, ``--io-depth``, ``--batch-size``). matplotlib draws the picture (``pip install
'looseleaf[trace]'``): without it the command says so before it reads anything.
"""

from __future__ import annotations

import importlib.util
import os
import random
from typing import Any

import pyarrow as pa

import looseleaf

from ..trace import Trace, format_size
from ._common import CliError


def run_trace(
    path: str,
    *,
    output: str,
    columns: list[str] | None,
    take: int | None,
    row_range: tuple[int, int] | None,
    seed: int,
    chrome_json: str | None,
    title: str | None,
    io_buffer: str | None,
    io_depth: int | str | None,
    batch_size: int | None,
    storage_options: dict[str, str],
) -> int:
    """Reads ``path`` with a trace, draws it to ``output`` and prints a summary; see the module
    docs."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CliError("looseleaf trace draws with matplotlib: pip install 'looseleaf[trace]'")
    options: dict[str, Any] = {}
    if io_buffer is not None:
        options["io_buffer_bytes"] = io_buffer
    if io_depth is not None:
        options["io_depth"] = io_depth
    if batch_size is not None:
        options["batch_size"] = batch_size
    reader = looseleaf.open(path, storage_options=storage_options or None)
    trace = Trace()
    if take is not None:
        rng = random.Random(seed)
        n = reader.num_rows
        indices = rng.sample(range(n), take) if take <= n else rng.choices(range(n), k=take)
        reader.take(indices, columns, trace=trace, **options)
        what = f"take of {take:,} random rows"
    else:
        start, num_rows, what = None, None, "scan"
        if row_range is not None:
            start, end = row_range
            num_rows = end - start
            what = f"rows {start:,}:{end:,}"
        stream = reader.stream(columns, start=start, num_rows=num_rows, trace=trace, **options)
        for _ in pa.RecordBatchReader.from_stream(stream):
            pass
    names = {c["column"]: c["field"] for c in reader.metadata["columns"]}
    if title is None:
        title = f"{os.path.basename(reader.path.rstrip('/'))}: {what}"
        title += f" of {', '.join(columns)}" if columns else ""
    trace.to_png(output, title=title, column_names=names)
    if chrome_json:
        trace.to_chrome_json(chrome_json)
    s = trace.summary()
    print(
        f"{output}: {s['rows']:,} rows, {format_size(s['bytes_read'])} in {s['reads']} reads "
        f"({s['bypassed_reads']} past the budget), {s['duration_ms']:.1f} ms"
        + (f"; {chrome_json} opens in https://ui.perfetto.dev" if chrome_json else "")
    )
    return 0
