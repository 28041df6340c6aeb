"""``looseleaf convert SRC DST``: between looseleaf, Parquet, Arrow IPC and CSV, in any direction.

Formats come from the extensions (:data:`looseleaf.cli.formats.EXTENSIONS`; a source with
another extension is read as looseleaf) or from ``--from``/``--to``. The data streams batch by
batch, so memory stays around a batch whatever the size. A progress bar is drawn on stderr when
it is a terminal, never when it is a pipe or a file; the summary (rows, bytes, time, MB/s of
Arrow data) goes to stdout.

The destination appears only when the conversion succeeds: a looseleaf writer leaves nothing
behind when aborted; for the other formats the partial file is deleted.
"""

from __future__ import annotations

import time

from ._common import Progress, human_bytes
from .formats import open_sink, open_source


def run_convert(
    source: str,
    destination: str,
    *,
    source_format: str,
    destination_format: str,
    page_size: int | None,
    storage_options: dict[str, str],
) -> int:
    """Converts ``source`` (format ``source_format``) to ``destination``
    (``destination_format``); see the module docs."""
    reader = open_source(source, source_format, storage_options=storage_options)
    try:
        sink = open_sink(
            destination,
            destination_format,
            reader.schema,
            page_size=page_size,
            storage_options=storage_options,
        )
        progress = Progress(reader.num_rows)
        rows = nbytes = 0
        try:
            for batch in reader.batches:
                sink.write(batch)
                rows += batch.num_rows
                nbytes += batch.nbytes
                progress.update(rows, nbytes, reader.fraction())
            written = sink.close()
        except BaseException:
            progress.finish()
            sink.abort()
            raise
        progress.finish()
    finally:
        reader.close()
    seconds = time.perf_counter() - progress.started
    size = f", {human_bytes(written)}" if written is not None else ""
    print(
        f"wrote {destination}: {rows:,} rows{size} in {seconds:.2f} s "
        f"({nbytes / max(seconds, 1e-9) / 1e6:,.1f} MB/s of Arrow data)"
    )
    return 0
