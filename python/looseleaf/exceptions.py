"""Exceptions raised by looseleaf.

Every error names the file and what is wrong with it. The classes also derive from the built-in
exception a Python user would expect (``ValueError`` for bad arguments, ``OSError`` for storage
failures, ``FileNotFoundError`` for a missing file), so existing ``except`` clauses keep working.
"""

from __future__ import annotations


class LooseleafError(Exception):
    """Base class of every looseleaf error."""


class LooseleafIOError(LooseleafError, OSError):
    """The storage failed (permission denied, network error, ...)."""


class NotFoundError(LooseleafIOError, FileNotFoundError):
    """The file does not exist."""


class PermissionDeniedError(LooseleafIOError, PermissionError):
    """The storage refused access (missing or wrong credentials, no permission)."""


class ObjectChangedError(LooseleafIOError):
    """The file or object changed since it was opened (overwritten, truncated or rewritten in
    place): reading on would mix bytes of two versions. Open it again to read the new one."""


class CorruptFileError(LooseleafError):
    """The file is not a looseleaf file, was not finished by its writer, or is damaged."""


class UnsupportedError(LooseleafError):
    """A type, encoding or storage this version does not support."""


class InvalidArgumentError(LooseleafError, ValueError):
    """An argument cannot be honoured (unknown column, row out of range, ...)."""


class SchemaMismatchError(LooseleafError, ValueError):
    """Data given to a writer does not match its schema."""


class OutOfMemoryError(LooseleafError, MemoryError):
    """A read's result (a ``take``, a table) would need more memory than the process can get:
    refused before it is built, saying how much it needed. Stream it (``read_all``) instead."""


__all__ = [
    "CorruptFileError",
    "InvalidArgumentError",
    "LooseleafError",
    "LooseleafIOError",
    "NotFoundError",
    "ObjectChangedError",
    "OutOfMemoryError",
    "PermissionDeniedError",
    "SchemaMismatchError",
    "UnsupportedError",
]
