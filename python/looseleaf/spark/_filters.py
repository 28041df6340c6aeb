"""Filter pushdown: Spark's filters turned into column predicates, kept for page skipping.

Spark 4.1+ hands a Python data source its filters (``DataSourceReader.pushFilters``, enabled by
``spark.sql.python.filterPushdown.enabled``). Filters a source reports as pushed are *not*
evaluated by Spark again, so a source may only claim those it applies exactly, row by row.

looseleaf skips at page granularity (per-page min/max statistics): that narrows the rows read
but is not an exact filter. So the plan is, and stays:

1. :func:`to_predicate` translates each Spark filter it understands into a
   :class:`ColumnPredicate` on a column path;
2. the reader keeps them and returns **every** filter to Spark (nothing is claimed as pushed);
3. once page statistics are used, :func:`may_match` decides from a page's min/max whether any
   of its rows can pass, and partition planning drops the row ranges no predicate can match.

Today step 3 keeps every range. Nothing here imports PySpark's filter classes: they exist only
from PySpark 4.1, and are recognised by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Comparison operators a predicate may hold, by the Spark filter class each comes from.
_COMPARISONS = {
    "EqualTo": "==",
    "EqualNullSafe": "<=>",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "In": "in",
}
_UNARY = {"IsNull": "is_null", "IsNotNull": "is_not_null"}


@dataclass(frozen=True)
class ColumnPredicate:
    """``column <op> value`` on one column, ``column`` a tuple path such as ``("meta", "score")``."""

    column: tuple[str, ...]
    op: str
    value: Any = None

    @property
    def path(self) -> str:
        """The looseleaf column path (``meta.score``)."""
        return ".".join(self.column)


@dataclass(frozen=True)
class PageStatistics:
    """What a page may tell about its values."""

    null_count: int | None = None
    num_values: int | None = None
    min: Any = None
    max: Any = None


def to_predicate(spark_filter: object) -> ColumnPredicate | None:
    """The predicate of a Spark filter, or ``None`` if it has no use for page skipping (string
    pattern filters, negations)."""
    kind = type(spark_filter).__name__
    column = tuple(getattr(spark_filter, "attribute", ()) or ())
    if not column:
        return None
    if kind in _COMPARISONS:
        value = spark_filter.value  # type: ignore[attr-defined]
        return ColumnPredicate(column, _COMPARISONS[kind], tuple(value) if kind == "In" else value)
    if kind in _UNARY:
        return ColumnPredicate(column, _UNARY[kind])
    return None


def may_match(predicate: ColumnPredicate, stats: PageStatistics | None) -> bool:
    """Whether a page with ``stats`` may hold a row satisfying ``predicate``. Conservative: any
    doubt (no statistics, values that do not compare) answers ``True``."""
    if stats is None:
        return True
    try:
        return _may_match(predicate, stats)
    except TypeError:
        return True


def _may_match(predicate: ColumnPredicate, stats: PageStatistics) -> bool:
    op, v = predicate.op, predicate.value
    if op == "is_null":
        return stats.null_count is None or stats.null_count > 0
    if op == "is_not_null":
        return stats.null_count is None or stats.num_values is None or stats.null_count < stats.num_values
    low, high = stats.min, stats.max
    if low is None or high is None or v is None:
        return True
    checks = {
        "==": lambda: low <= v <= high,
        "<=>": lambda: low <= v <= high,
        ">": lambda: high > v,
        ">=": lambda: high >= v,
        "<": lambda: low < v,
        "<=": lambda: low <= v,
        "in": lambda: any(x is not None and low <= x <= high for x in v),
    }
    check = checks.get(op)
    return True if check is None else bool(check())


class FilterPlan:
    """The filters of one read: all returned to Spark, those usable for skipping kept."""

    def __init__(self) -> None:
        self.predicates: list[ColumnPredicate] = []

    def push(self, filters: Sequence[object]) -> list[object]:
        """Records what can be used for page skipping; returns every filter (none is applied
        exactly by the reader, so Spark must still evaluate them all)."""
        for spark_filter in filters:
            predicate = to_predicate(spark_filter)
            if predicate is not None:
                self.predicates.append(predicate)
        return list(filters)

    def __bool__(self) -> bool:
        return bool(self.predicates)
