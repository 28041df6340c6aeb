"""Arrow ⇄ Spark types, and the cast of batches to the exact Arrow form Spark expects.

Reading: :func:`arrow_to_spark_schema` maps a file's Arrow schema to the Spark schema the data
source declares, and :func:`cast_batch` casts every batch read to the Arrow form of that Spark
schema (:func:`spark_to_arrow_schema`). Spark compares the two exactly (``large_string`` is not
``string``), so the cast is not optional.

Writing: Spark hands over batches in its own Arrow form (time zone of the session, large or
small strings depending on its configuration); :func:`cast_batch` brings them to one canonical
form (UTC timestamps, plain ``string``/``binary``/``list``) so that every file of a dataset has
the same schema.

The mapping and the casts are the core's (``looseleaf::spark_form``, in PySpark's flavor; the
JVM connector uses its JVM flavor): this module only hands them PySpark's own conversions.
What cannot be mapped losslessly raises :class:`~looseleaf.UnsupportedError` naming the column.
Upcasts are lossless (``uint32`` → ``bigint``, ``uint64`` → ``decimal(20,0)`` as Spark's own
Parquet reader does, ``float16`` → ``float``). Casts that are lossless only for some values
(nanoseconds to Spark's microseconds, ``date64`` to days) are checked value by value: a value
that would lose precision fails the read with an error naming the column, instead of being
silently truncated.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from .. import _looseleaf
from ..exceptions import SchemaMismatchError, UnsupportedError

#: Time zone of the Arrow form of Spark's ``TimestampType`` in data source reads and in files.
UTC = "UTC"


def arrow_to_spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of an Arrow schema. Every field is nullable, as in Spark's own file
    sources: a file may declare a column non-null, but the files of a dataset need not agree.

    The mapping is the core's (``looseleaf::spark_form``, shared with the JVM connector): it
    gives PySpark's Arrow form of the schema, which PySpark's own ``from_arrow_schema`` names."""
    from pyspark.sql.pandas.types import from_arrow_schema

    spark_form = pa.schema(_looseleaf.pyspark_schema(schema))
    try:
        return from_arrow_schema(spark_form, prefer_timestamp_ntz=True)
    except (TypeError, NotImplementedError) as e:  # pragma: no cover - PySpark without TIME
        raise UnsupportedError(f"PySpark {_pyspark_version()} cannot hold this schema: {e}") from e


def arrow_to_spark_type(data_type: pa.DataType, column: str = "value") -> T.DataType:
    """The Spark type of an Arrow type; ``column`` (a dotted path) names the column in errors."""
    return arrow_to_spark_schema(pa.schema([pa.field(column, data_type)])).fields[0].dataType


def _pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


def spark_to_arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow form of a Spark schema: what a Python data source must yield for it, and the
    canonical schema of the files the Spark writer produces (``TimestampType`` as UTC
    microseconds; plain ``string``, ``binary`` and ``list``)."""
    return pa.schema([_spark_field_to_arrow(f) for f in schema.fields])


def _spark_field_to_arrow(field: T.StructField) -> pa.Field:
    # PySpark's own conversion, so that the result is exactly what its workers check against.
    from pyspark.sql.pandas.types import to_arrow_schema

    _check_writable(field.dataType, field.name)
    try:
        return to_arrow_schema(T.StructType([field]), timezone=UTC).field(0)
    except Exception as e:
        spark_type = field.dataType.simpleString()
        raise UnsupportedError(
            f"column {field.name!r}: Spark type {spark_type} has no Arrow form: {e}"
        ) from e


def _check_writable(t: T.DataType, column: str) -> None:
    """Rejects Spark types whose Arrow form would not come back as the same Spark type."""
    rejected: tuple[type, ...] = (T.VariantType, T.CalendarIntervalType, T.YearMonthIntervalType)
    rejected += tuple(c for c in (getattr(T, "GeometryType", None), getattr(T, "GeographyType", None)) if c)
    if isinstance(t, rejected):
        raise UnsupportedError(
            f"column {column!r}: Spark type {t.simpleString()} cannot be stored in looseleaf"
        )
    if isinstance(t, T.ArrayType):
        _check_writable(t.elementType, f"{column}.element")
    elif isinstance(t, T.MapType):
        _check_writable(t.keyType, f"{column}.key")
        _check_writable(t.valueType, f"{column}.value")
    elif isinstance(t, T.StructType):
        for f in t.fields:
            _check_writable(f.dataType, f"{column}.{f.name}")


def as_nullable(schema: T.StructType) -> T.StructType:
    """``schema`` with every field, array element and map value nullable."""
    return arrow_to_spark_schema(spark_to_arrow_schema(schema)) if schema.fields else schema


def cast_batch(batch: pa.RecordBatch, schema: pa.Schema, *, source: str = "") -> pa.RecordBatch:
    """Casts ``batch`` to exactly ``schema``, a PySpark form (:func:`spark_to_arrow_schema`):
    columns taken by name (in the order of ``schema``), struct fields by name, list, map and
    field names and nullability made those of ``schema``. The cast is the core's
    (``looseleaf::spark_form``). Raises :class:`~looseleaf.SchemaMismatchError` naming the column
    (and ``source``, a file name, if given) when a column is missing or a non-nullable column
    holds nulls, and :class:`~looseleaf.UnsupportedError` when a value cannot be cast without
    loss."""
    if batch.schema.equals(schema):
        return batch
    names = batch.schema.names
    missing = [name for name in schema.names if name not in names]
    if missing:
        raise SchemaMismatchError(f"{_where(source)}column {missing[0]!r} is missing (the batch has {names})")
    if names != schema.names:
        batch = batch.select(schema.names)
    cast = _looseleaf.cast_to_spark(batch, schema, source=source or None)
    return pa.RecordBatchReader.from_stream(cast).read_next_batch()


def _where(source: str) -> str:
    return f"{source}: " if source else ""
