"""Filter pushdown: Spark's filters turned into column predicates, kept for page skipping.

Spark 4.1+ hands a Python data source its filters (``DataSourceReader.pushFilters``, enabled by
``spark.sql.python.filterPushdown.enabled``). Filters a source reports as pushed are *not*
evaluated by Spark again, so a source may only claim those it applies exactly, row by row.

So:

1. :func:`to_predicate` translates each Spark filter it understands into a
   :class:`ColumnPredicate` on a column path;
2. :meth:`FilterPlan.expression` makes the conjunction of those the engine evaluates as Spark
   does a ``filter=`` of the reads: the driver drops the row ranges whose zone maps rule every
   row out, and each task's read skips zones and returns only matching rows;
3. the reader still returns **every** filter to Spark (nothing is claimed as pushed), so Spark's
   own evaluation stays the reference.

Comparisons on float and double columns are left to Spark: Spark orders NaN above every number
and equal to itself, where the engine (like Arrow) compares IEEE 754 values. Null-safe equality
(``<=>``) is left to Spark too. Nothing here imports PySpark's filter classes: they exist only
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


class FilterPlan:
    """The filters of one read: all returned to Spark, those the engine could use kept."""

    def __init__(self) -> None:
        self.predicates: list[ColumnPredicate] = []

    def push(self, filters: Sequence[object]) -> list[object]:
        """Records what the engine could use; returns every filter (none is applied exactly by
        the reader, so Spark must still evaluate them all)."""
        for spark_filter in filters:
            predicate = to_predicate(spark_filter)
            if predicate is not None:
                self.predicates.append(predicate)
        return list(filters)

    def __bool__(self) -> bool:
        return bool(self.predicates)

    def expression(
        self,
        float_columns: set[tuple[str, ...]],
        *,
        within: set[str] | None = None,
        without: set[str] | None = None,
    ) -> Any:
        """The conjunction of the predicates the engine evaluates as Spark does (none on the
        columns of ``float_columns``, no null-safe equality), as a ``pyarrow.compute``
        expression; ``None`` if there are none. ``within`` keeps only the predicates on those
        top-level columns, ``without`` leaves those out (partition columns go to the dataset's
        file pruning, the others to the files' reads)."""
        import pyarrow.compute as pc

        parts = []
        for p in self.predicates:
            if p.column in float_columns or p.op == "<=>":
                continue
            if within is not None and p.column[0] not in within:
                continue
            if without is not None and p.column[0] in without:
                continue
            field = pc.field(*p.column)
            if p.op == "is_null":
                parts.append(field.is_null())
            elif p.op == "is_not_null":
                parts.append(field.is_valid())
            elif p.op == "in":
                parts.append(field.isin(list(p.value)))
            else:
                parts.append(_COMPARE[p.op](field, p.value))
        if not parts:
            return None
        out = parts[0]
        for part in parts[1:]:
            out = out & part
        return out


_COMPARE = {
    "==": lambda f, v: f == v,
    ">": lambda f, v: f > v,
    ">=": lambda f, v: f >= v,
    "<": lambda f, v: f < v,
    "<=": lambda f, v: f <= v,
}
