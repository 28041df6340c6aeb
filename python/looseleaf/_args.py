"""Checks of user arguments shared by the reader and the writer, so that a wrong type gives a
clear ``InvalidArgumentError`` instead of a conversion error from the bindings."""

from __future__ import annotations

from collections.abc import Sequence

from .exceptions import InvalidArgumentError


def columns_arg(columns: Sequence[str] | None) -> list[str] | None:
    """A projection: ``None`` (all columns) or a list of column names."""
    if columns is None:
        return None
    if isinstance(columns, str | bytes) or not all(isinstance(c, str) for c in columns):
        raise InvalidArgumentError(f"columns must be a list of column names, got {columns!r}")
    return list(columns)


def count_arg(name: str, value: int | None, *, minimum: int = 0) -> int | None:
    """An optional whole number of at least ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {value}")
    return value
