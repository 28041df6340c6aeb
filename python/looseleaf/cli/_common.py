"""What every command shares: the one-line error, sizes, the progress bar, datasets.

Nothing here reads or writes data; the commands call :mod:`looseleaf` for that.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

import looseleaf


class CliError(Exception):
    """A problem the command reports as ``looseleaf: error: <message>`` (exit code 1)."""


def human_bytes(n: float) -> str:
    """``n`` bytes in decimal units: ``"512 B"``, ``"1.5 kB"``, ``"12.3 MB"``, ``"4.00 GB"``."""
    if n < 1000:
        return f"{int(n)} B"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n < scale * 1000:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e12:.2f} TB"


def is_dataset_path(path: str) -> bool:
    """Whether ``path`` names a dataset (a directory of files) rather than one file: it ends in
    ``/`` or is a local directory."""
    return path.endswith("/") or os.path.isdir(path)


def open_dataset(path: str, storage_options: dict[str, str]) -> Any:
    """``looseleaf.dataset(path)``, or a :class:`CliError` if this version of looseleaf has no
    datasets."""
    dataset = getattr(looseleaf, "dataset", None)
    if dataset is None:
        raise CliError(f"{path} is a directory: this version of looseleaf reads single files only")
    return dataset(path, storage_options=storage_options or None)


class Progress:
    """A one-line progress bar on a terminal; does nothing when ``stream`` is not one.

    :meth:`update` redraws at most ten times a second; :meth:`finish` erases the line, so the
    summary printed after it starts on a clean line. The bar shows a percentage when the total
    rows (or, failing that, a fraction of the input read) is known, and always the rows done
    and the rate of Arrow data in MB/s.
    """

    WIDTH = 24

    def __init__(self, total_rows: int | None, stream: IO[str] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self._stream)
        self.total_rows = total_rows
        self.started = time.perf_counter()
        self._drawn_at = 0.0
        self._drawn = False

    def update(self, rows: int, nbytes: int, fraction: float | None = None) -> None:
        """Shows ``rows`` rows (``nbytes`` of Arrow data) done; ``fraction`` of the input when
        the total rows are unknown."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._drawn_at < 0.1:
            return
        self._drawn_at = now
        if self.total_rows:
            fraction = rows / self.total_rows
        rate = nbytes / max(now - self.started, 1e-9) / 1e6
        counts = f"{rows:,} rows" if not self.total_rows else f"{rows:,}/{self.total_rows:,} rows"
        if fraction is None:
            line = f"{counts}  {rate:,.1f} MB/s"
        else:
            fraction = min(max(fraction, 0.0), 1.0)
            filled = int(self.WIDTH * fraction)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            line = f"[{bar}] {fraction * 100:3.0f}%  {counts}  {rate:,.1f} MB/s"
        self._stream.write("\r" + line + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """Erases the bar (if one was drawn)."""
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
