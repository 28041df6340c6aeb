"""looseleaf: a columnar file format without row groups, and a fast scheduled reader for it.

Write Arrow data with :func:`write_table` or :class:`FileWriter`; read it back with
:func:`open`, which returns a :class:`FileReader` (scan, projection, row ranges, ``take`` of any
rows, and the I/O plan of a read without doing it). Data crosses between Python and the Rust
engine without copies, through the Arrow PyCapsule interface.
"""

from __future__ import annotations

from ._looseleaf import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PAGE_SIZE,
    IoBudget,
    __version__,
    get_io_budget,
    set_io_budget,
)
from .exceptions import (
    CorruptFileError,
    InvalidArgumentError,
    LooseleafError,
    LooseleafIOError,
    NotFoundError,
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
    "FileReader",
    "FileWriter",
    "InvalidArgumentError",
    "IoBudget",
    "LooseleafError",
    "LooseleafIOError",
    "NotFoundError",
    "PermissionDeniedError",
    "ReadOptions",
    "SchemaMismatchError",
    "UnsupportedError",
    "__version__",
    "get_io_budget",
    "open",
    "set_io_budget",
    "write_table",
]
