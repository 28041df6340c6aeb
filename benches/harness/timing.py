"""Wall times of calls, and the medians the reports give."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[T, float]:
    """What ``action()`` returned, kept past the clock, and how many seconds it took."""
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def seconds(action: Callable[[], object]) -> float:
    """How many seconds ``action()`` took, freeing what it returned included: a loop of reads
    that keeps no result pays for freeing each one."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def repeated(action: Callable[[], object], times: int) -> list[float]:
    """The :func:`seconds` of ``times`` calls of ``action``, one after the other."""
    return [seconds(action) for _ in range(times)]


def median_or_none(values: Iterable[float]) -> float | None:
    """The median of ``values``, or None when there are none."""
    values = list(values)
    return statistics.median(values) if values else None
