"""Arrow ⇄ Spark types, and the cast of batches to the exact Arrow form Spark expects.

Reading: :func:`arrow_to_spark_schema` maps a file's Arrow schema to the Spark schema the data
source declares, and :func:`cast_batch` casts every batch read to the Arrow form of that Spark
schema (:func:`spark_to_arrow_schema`). Spark compares the two exactly (``large_string`` is not
``string``), so the cast is not optional.

Writing: Spark hands over batches in its own Arrow form (time zone of the session, large or
small strings depending on its configuration); :func:`cast_batch` brings them to one canonical
form (UTC timestamps, plain ``string``/``binary``/``list``) so that every file of a dataset has
the same schema.

What cannot be mapped losslessly raises :class:`~looseleaf.UnsupportedError` naming the column.
Upcasts are lossless (``uint32`` → ``bigint``, ``uint64`` → ``decimal(20,0)`` as Spark's own
Parquet reader does, ``float16`` → ``float``). Casts that are lossless only for some values
(nanoseconds to Spark's microseconds, ``date64`` to days) are checked value by value: a value
that would lose precision fails the read with an error naming the column, instead of being
silently truncated.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from ..exceptions import SchemaMismatchError, UnsupportedError

try:  # Spark 4.1+
    from pyspark.sql.types import TimeType as _TimeType
except ImportError:  # pragma: no cover - older PySpark
    _TimeType = None

#: Largest precision of Spark's ``DecimalType``.
MAX_DECIMAL_PRECISION = 38

#: Time zone of the Arrow form of Spark's ``TimestampType`` in data source reads and in files.
UTC = "UTC"


def arrow_to_spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of an Arrow schema. Every field is nullable, as in Spark's own file
    sources: a file may declare a column non-null, but the files of a dataset need not agree."""
    return T.StructType([T.StructField(f.name, arrow_to_spark_type(f.type, f.name), True) for f in schema])


def arrow_to_spark_type(data_type: pa.DataType, column: str = "value") -> T.DataType:
    """The Spark type of an Arrow type; ``column`` (a dotted path) names the column in errors."""
    t = data_type
    if pa.types.is_dictionary(t):
        return arrow_to_spark_type(t.value_type, column)
    if isinstance(t, pa.ExtensionType):
        return arrow_to_spark_type(t.storage_type, column)
    simple = _simple_type(t)
    if simple is not None:
        return simple
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise _unsupported(column, t, f"Spark decimals hold at most {MAX_DECIMAL_PRECISION} digits")
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_time(t):
        if _TimeType is None:
            raise _unsupported(column, t, "this PySpark has no TIME type (Spark 4.1+ has)")
        return _TimeType(6)
    if pa.types.is_duration(t):
        return T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        element = arrow_to_spark_type(t.value_type, f"{column}.{t.value_field.name}")
        return T.ArrayType(element, containsNull=True)
    if pa.types.is_map(t):
        key = arrow_to_spark_type(t.key_type, f"{column}.key")
        value = arrow_to_spark_type(t.item_type, f"{column}.value")
        return T.MapType(key, value, valueContainsNull=True)
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return T.StructType(
            [T.StructField(f.name, arrow_to_spark_type(f.type, f"{column}.{f.name}"), True) for f in fields]
        )
    if pa.types.is_interval(t):
        raise _unsupported(column, t, "Arrow calendar intervals have no Spark equivalent in Arrow exchange")
    raise _unsupported(column, t, "no Spark type holds it")


def _simple_type(t: pa.DataType) -> T.DataType | None:
    if pa.types.is_null(t):
        return T.NullType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_integer(t):
        signed = {8: T.ByteType(), 16: T.ShortType(), 32: T.IntegerType(), 64: T.LongType()}
        # Unsigned integers go to the next wider signed type; uint64 to decimal(20, 0), the
        # mapping of Spark's Parquet reader for UINT_64.
        unsigned = {8: T.ShortType(), 16: T.IntegerType(), 32: T.LongType(), 64: T.DecimalType(20, 0)}
        return (signed if pa.types.is_signed_integer(t) else unsigned)[t.bit_width]
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return T.BinaryType()
    if pa.types.is_date(t):
        return T.DateType()
    return None


def _unsupported(column: str, t: pa.DataType, why: str) -> UnsupportedError:
    return UnsupportedError(f"column {column!r} has Arrow type {t}, which cannot be read into Spark: {why}")


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
    """Casts ``batch`` to exactly ``schema``: columns taken by name (in the order of ``schema``),
    struct fields by name, list, map and field names and nullability made those of ``schema``.

    Raises :class:`~looseleaf.SchemaMismatchError` naming the column (and ``source``, a file
    name, if given) when a column is missing, a non-nullable column holds nulls, or a value
    cannot be cast without loss."""
    if batch.schema.equals(schema):
        return batch
    names = batch.schema.names
    arrays = []
    for field in schema:
        if field.name not in names:
            raise SchemaMismatchError(
                f"{_where(source)}column {field.name!r} is missing (the batch has {names})"
            )
        arrays.append(_cast_field(batch.column(names.index(field.name)), field, field.name, source))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _where(source: str) -> str:
    return f"{source}: " if source else ""


def _cast_field(array: pa.Array, field: pa.Field, column: str, source: str) -> pa.Array:
    out = cast_array(array, field.type, column=column, source=source)
    if not field.nullable and out.null_count:
        raise SchemaMismatchError(f"{_where(source)}column {column!r} is declared non-null but holds nulls")
    return out


def cast_array(array: pa.Array, target: pa.DataType, *, column: str = "value", source: str = "") -> pa.Array:
    """Casts one array to exactly ``target`` (see :func:`cast_batch`)."""
    if _identical(array.type, target):
        return array
    t = array.type
    if pa.types.is_dictionary(t):
        return cast_array(array.dictionary_decode(), target, column=column, source=source)
    if isinstance(t, pa.ExtensionType):
        return cast_array(array.storage, target, column=column, source=source)
    try:
        if pa.types.is_struct(target):
            return _cast_struct(array, target, column, source)
        if pa.types.is_list(target):
            return _cast_list(array, target, column, source)
        if pa.types.is_map(target):
            return _cast_map(array, target, column, source)
        return array.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError) as e:
        raise SchemaMismatchError(
            f"{_where(source)}column {column!r}: cannot cast {t} to {target}: {e}"
        ) from e


def _identical(a: pa.DataType, b: pa.DataType) -> bool:
    # Arrow's equality ignores list field names; PyArrow then "views" children under the other
    # name when building lists, which goes wrong for some children (null-type ones). So names
    # count here (the string form spells them, and the nullability of nested fields).
    return a.equals(b) and str(a) == str(b)


def _mask(array: pa.Array) -> pa.Array | None:
    return pc.is_null(array) if array.null_count else None


def _cast_struct(array: pa.Array, target: pa.StructType, column: str, source: str) -> pa.Array:
    if not pa.types.is_struct(array.type):
        raise SchemaMismatchError(f"{_where(source)}column {column!r}: expected a struct, found {array.type}")
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    children, fields = [], []
    for i in range(target.num_fields):
        field = target.field(i)
        if field.name not in names:
            raise SchemaMismatchError(f"{_where(source)}column {column!r} has no field {field.name!r}")
        child = array.field(names.index(field.name))  # sliced like the parent
        children.append(_cast_field(child, field, f"{column}.{field.name}", source))
        fields.append(field)
    return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(array))


def _list_parts(array: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets (int32, starting at 0) and the values they index, of a list, large list,
    fixed-size list or map array, honouring the array's own offset."""
    t = array.type
    if pa.types.is_fixed_size_list(t):
        # Built here, not by Arrow's cast (PyArrow 26 builds invalid arrays casting fixed-size
        # lists of lists of nulls).
        size, n = t.list_size, len(array)
        values = array.values.slice(array.offset * size, n * size)
        offsets = pa.array(range(0, (n + 1) * size, size) if size else [0] * (n + 1), pa.int32())
        return offsets, values
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)):
        raise pa.ArrowTypeError(f"expected a list, found {t}")
    offsets = array.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    values = array.values.slice(first, last - first)  # a map's values are its entries
    # Always a new array: rebased to 0, and not a slice (PyArrow refuses a validity mask with
    # sliced offsets).
    offsets = pc.subtract(offsets, pa.scalar(first, offsets.type))
    return offsets.cast(pa.int32(), safe=True), values


def _cast_list(array: pa.Array, target: pa.ListType, column: str, source: str) -> pa.Array:
    offsets, values = _list_parts(array)
    item = target.value_field
    values = _cast_field(values, item, f"{column}.{item.name}", source)
    return pa.ListArray.from_arrays(offsets, values, type=target, mask=_mask(array))


def _cast_map(array: pa.Array, target: pa.MapType, column: str, source: str) -> pa.Array:
    if not pa.types.is_map(array.type):
        raise SchemaMismatchError(f"{_where(source)}column {column!r}: expected a map, found {array.type}")
    offsets, entries = _list_parts(array)
    keys = _cast_field(entries.field(0), target.key_field, f"{column}.key", source)
    items = _cast_field(entries.field(1), target.item_field, f"{column}.value", source)
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(array))
