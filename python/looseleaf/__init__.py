"""looseleaf: a columnar file format without row groups, and a fast scheduled reader for it.

Write Arrow data with :func:`write_table` or :class:`FileWriter`; read it back with
:func:`open`, which returns a :class:`FileReader` (scan, projection, row ranges, ``take`` of any
rows, and the I/O plan of a read without doing it). Data crosses between Python and the Rust
engine without copies, through the Arrow PyCapsule interface. Directories of many files (with
Hive-style ``key=value`` partitions) are read with :func:`dataset` and written with
:func:`write_dataset`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._looseleaf import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PAGE_SIZE,
    IoBudget,
    __version__,
    get_io_budget,
    set_io_budget,
)
from .datasets import Dataset, dataset, write_dataset
from .exceptions import (
    CorruptFileError,
    InvalidArgumentError,
    LooseleafError,
    LooseleafIOError,
    NotFoundError,
    ObjectChangedError,
    OutOfMemoryError,
    PermissionDeniedError,
    SchemaMismatchError,
    UnsupportedError,
)
from .reader import FileReader, ReadOptions, open
from .writer import FileWriter, write_table

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PAGE_SIZE",
    "CorruptFileError",
    "Dataset",
    "FileReader",
    "FileWriter",
    "InvalidArgumentError",
    "IoBudget",
    "LooseleafError",
    "LooseleafIOError",
    "NotFoundError",
    "ObjectChangedError",
    "OutOfMemoryError",
    "PermissionDeniedError",
    "ReadOptions",
    "SchemaMismatchError",
    "Trace",
    "UnsupportedError",
    "__version__",
    "dataset",
    "get_io_budget",
    "open",
    "scan_polars",
    "set_io_budget",
    "write_dataset",
    "write_table",
]


if TYPE_CHECKING:
    from .polars_scan import scan_polars
    from .trace import Trace


def __getattr__(name: str) -> Any:
    # `Trace` lives in `looseleaf.trace`, imported on first use, so that `import looseleaf`
    # stays as quick as it was.
    if name == "Trace":
        from .trace import Trace

        return Trace
    # Polars (and pyarrow.dataset) import with `looseleaf.polars_scan`, on first use.
    if name == "scan_polars":
        from .polars_scan import scan_polars

        return scan_polars
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
