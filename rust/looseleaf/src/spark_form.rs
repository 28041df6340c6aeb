//! The Arrow form Spark reads: for any Arrow type a file may hold, the type Spark's Arrow
//! mapping takes, and exact casts of arrays to it. There are two such forms ([`Flavor`]): what
//! the JVM's `ArrowUtils.fromArrowSchema` and column readers take (the JVM connector), and
//! exactly what PySpark's `to_arrow_schema(schema, timezone="UTC")` makes (the Python data
//! source, whose workers compare each batch's schema with it).
//!
//! | in the file | read as |
//! |---|---|
//! | `uint8`, `uint16`, `uint32` | the next wider signed integer |
//! | `uint64` | `decimal128(20, 0)` (what Spark's Parquet reader does for `UINT_64`) |
//! | `float16` | `float32` |
//! | `utf8_view`; `binary_view`, `fixed_size_binary` | `utf8`; `binary` |
//! | `date64` | `date32`, each value checked to be a whole day |
//! | `decimal32`, `decimal64`; `decimal256` of at most 38 digits | `decimal128` of the same precision and scale |
//! | timestamps and durations in seconds, milliseconds, nanoseconds | microseconds, nanoseconds checked to be whole microseconds |
//! | large lists, fixed-size lists | lists (items nullable) |
//! | dictionaries | their values |
//! | maps, structs | the same, children mapped, nullable |
//!
//! Other types pass unchanged when Spark reads them (signed integers, floats, booleans, strings
//! and binaries and their large forms, `decimal128` of at most 38 digits, `date32`,
//! microsecond timestamps and durations, lists) and are refused otherwise (intervals, unions,
//! wider decimals; times in the JVM form) with an error naming the column. A value that cannot
//! be cast without loss fails the read, naming the column, instead of being truncated.
//!
//! PySpark's form differs in names and widths only: large strings and binaries become plain
//! ones, every zoned timestamp is in `UTC` (the instants are the same), list items are named
//! `element`, map entries `entries` of `key` and `value`, and times are `time64` nanoseconds.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, Float16Type, Int16Type,
    Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, Decimal128Array, DurationMicrosecondArray, Float32Array, LargeListArray, ListArray,
    MapArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray, StructArray, Time64NanosecondArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::ArrowNativeType;
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};

/// Most digits of a Spark decimal.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// The time zone of every zoned timestamp in PySpark's form.
pub const PYSPARK_TIME_ZONE: &str = "UTC";

/// Which of Spark's Arrow forms (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// What the JVM's `ArrowUtils.fromArrowSchema` reads.
    Jvm,
    /// Exactly what PySpark's `to_arrow_schema(schema, timezone="UTC")` makes.
    PySpark,
}

/// The schema Spark's JVM reads for `schema` (every field nullable).
///
/// # Errors
/// [`Error::Unsupported`] naming the first column Spark cannot hold.
pub fn schema(schema: &Schema) -> Result<SchemaRef> {
    schema_in(schema, Flavor::Jvm)
}

/// The schema in Spark's `flavor` of Arrow for `schema` (every field nullable).
///
/// # Errors
/// [`Error::Unsupported`] naming the first column Spark cannot hold.
pub fn schema_in(schema: &Schema, flavor: Flavor) -> Result<SchemaRef> {
    let fields: Vec<FieldRef> = schema.fields().iter().map(|f| field(f, f.name(), flavor)).collect::<Result<_>>()?;
    Ok(Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

fn field(f: &Field, path: &str, flavor: Flavor) -> Result<FieldRef> {
    Ok(Arc::new(Field::new(f.name(), data_type_in(f.data_type(), path, flavor)?, true)))
}

/// The type Spark's JVM reads for `data_type`; `path` names the column in errors.
///
/// # Errors
/// [`Error::Unsupported`] if Spark has no type for it.
pub fn data_type(from: &DataType, path: &str) -> Result<DataType> {
    data_type_in(from, path, Flavor::Jvm)
}

/// The type in Spark's `flavor` of Arrow for `data_type`; `path` names the column in errors.
///
/// # Errors
/// [`Error::Unsupported`] if Spark has no type for it.
pub fn data_type_in(from: &DataType, path: &str, flavor: Flavor) -> Result<DataType> {
    let pyspark = flavor == Flavor::PySpark;
    let refuse = |why: &str| {
        Err(Error::unsupported(format!("column {path:?} has Arrow type {from}, which Spark cannot hold: {why}")))
    };
    Ok(match from {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::Binary
        | DataType::Date32 => from.clone(),
        DataType::LargeUtf8 if pyspark => DataType::Utf8,
        DataType::LargeBinary if pyspark => DataType::Binary,
        DataType::LargeUtf8 | DataType::LargeBinary => from.clone(),
        DataType::UInt8 => DataType::Int16,
        DataType::UInt16 => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => DataType::Decimal128(20, 0),
        DataType::Float16 => DataType::Float32,
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView | DataType::FixedSizeBinary(_) => DataType::Binary,
        DataType::Date64 => DataType::Date32,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) if *p <= MAX_DECIMAL_PRECISION => {
            DataType::Decimal128(*p, *s)
        }
        DataType::Decimal128(..) | DataType::Decimal256(..) => {
            return refuse(&format!("Spark decimals hold at most {MAX_DECIMAL_PRECISION} digits"));
        }
        DataType::Timestamp(_, Some(_)) if pyspark => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(PYSPARK_TIME_ZONE.into()))
        }
        DataType::Timestamp(_, zone) => DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        DataType::Duration(_) => DataType::Duration(TimeUnit::Microsecond),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            let item = field(item, &format!("{path}.{}", item.name()), flavor)?;
            if pyspark {
                DataType::List(Arc::new(Field::new("element", item.data_type().clone(), true)))
            } else {
                DataType::List(item)
            }
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(children) = entries.data_type() else {
                return refuse("a map whose entries are not a struct");
            };
            let [key, value] = children.iter().collect::<Vec<_>>()[..] else {
                return refuse("a map whose entries are not a key and a value");
            };
            let key_type = data_type_in(key.data_type(), &format!("{path}.key"), flavor)?;
            let value_type = data_type_in(value.data_type(), &format!("{path}.value"), flavor)?;
            let (entries, key, value) = if pyspark {
                ("entries", "key", "value")
            } else {
                (entries.name().as_str(), key.name().as_str(), value.name().as_str())
            };
            let children = vec![Field::new(key, key_type, false), Field::new(value, value_type, true)];
            DataType::Map(Arc::new(Field::new(entries, DataType::Struct(Fields::from(children)), false)), false)
        }
        DataType::Struct(children) => DataType::Struct(
            children.iter().map(|c| field(c, &format!("{path}.{}", c.name()), flavor)).collect::<Result<Fields>>()?,
        ),
        DataType::Dictionary(_, values) => data_type_in(values, path, flavor)?,
        DataType::Time32(_) | DataType::Time64(_) if pyspark => DataType::Time64(TimeUnit::Nanosecond),
        DataType::Time32(_) | DataType::Time64(_) => return refuse("times are not read into Spark's JVM yet"),
        _ => return refuse("no Spark type holds it"),
    })
}

/// Whether Spark sees two schemas in its form (from [`schema`]) as the same: the same column
/// names and types, whatever the names of list items and map entries, string and binary
/// offset widths and timestamp zones (any zone is Spark's `TimestampType`).
pub fn same_spark_schema(a: &Schema, b: &Schema) -> bool {
    same_fields(a.fields(), b.fields())
}

fn same_fields(a: &Fields, b: &Fields) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|(x, y)| x.name() == y.name() && same_type(x.data_type(), y.data_type()))
}

fn same_type(a: &DataType, b: &DataType) -> bool {
    use DataType::{Binary, LargeBinary, LargeUtf8, List, Map, Struct, Timestamp, Utf8};
    match (a, b) {
        (Utf8 | LargeUtf8, Utf8 | LargeUtf8) | (Binary | LargeBinary, Binary | LargeBinary) => true,
        (Timestamp(x, zx), Timestamp(y, zy)) => x == y && zx.is_some() == zy.is_some(),
        (List(x), List(y)) => same_type(x.data_type(), y.data_type()),
        (Map(x, _), Map(y, _)) => match (x.data_type(), y.data_type()) {
            (Struct(x), Struct(y)) => {
                x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| same_type(x.data_type(), y.data_type()))
            }
            _ => false,
        },
        (Struct(x), Struct(y)) => same_fields(x, y),
        _ => a == b,
    }
}

/// `batch` in the form of `target` (a Spark form of the batch's schema, [`schema_in`], or of a
/// schema Spark sees as the same, nullability aside), columns by position.
///
/// # Errors
/// [`Error::Unsupported`] naming the column of a value that cannot be cast without loss;
/// [`Error::Schema`] naming a column `target` declares non-null that holds nulls, or a struct
/// field `target` has and the batch has not.
pub fn batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == target.fields() {
        return Ok(batch.clone());
    }
    if batch.num_columns() != target.fields().len() {
        return Err(Error::Schema(format!(
            "a batch of {} columns where {} were expected",
            batch.num_columns(),
            target.fields().len()
        )));
    }
    let columns = batch
        .columns()
        .iter()
        .zip(target.fields())
        .map(|(column, field)| {
            let out = array(column, field.data_type(), field.name())?;
            check_non_null(&out, field, field.name())?;
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(target.clone(), columns, &options).map_err(|e| Error::Arrow(Arc::new(e)))
}

/// `values` cast to `target` (from [`data_type`] of its type), exactly; `path` names the
/// column in errors.
///
/// # Errors
/// [`Error::Unsupported`] if a value cannot be cast without loss.
pub fn array(values: &ArrayRef, target: &DataType, path: &str) -> Result<ArrayRef> {
    if values.data_type() == target {
        return Ok(values.clone());
    }
    let lossy = |what: &str| Error::unsupported(format!("column {path:?}: {what} cannot be read into Spark exactly"));
    let too_long = || lossy("more than 2 GiB of strings or binaries in one batch");
    let nulls = values.nulls().cloned();
    Ok(match (values.data_type(), target) {
        (DataType::Dictionary(..), _) => {
            let dictionary = values.as_any_dictionary();
            let decoded = arrow_select::take::take(dictionary.values().as_ref(), dictionary.keys(), None)
                .map_err(|e| Error::Arrow(Arc::new(e)))?;
            array(&decoded, target, path)?
        }
        (DataType::UInt8, _) => {
            Arc::new(values.as_primitive::<UInt8Type>().unary::<_, Int16Type>(i16::from)) as ArrayRef
        }
        (DataType::UInt16, _) => Arc::new(values.as_primitive::<UInt16Type>().unary::<_, Int32Type>(i32::from)),
        (DataType::UInt32, _) => Arc::new(values.as_primitive::<UInt32Type>().unary::<_, Int64Type>(i64::from)),
        (DataType::UInt64, _) => Arc::new(
            values
                .as_primitive::<UInt64Type>()
                .unary::<_, Decimal128Type>(i128::from)
                .with_precision_and_scale(20, 0)
                .map_err(|e| Error::Arrow(Arc::new(e)))?,
        ),
        (DataType::Float16, _) => Arc::new(Float32Array::new(
            values.as_primitive::<Float16Type>().values().iter().map(|v| v.to_f32()).collect(),
            nulls,
        )),
        (DataType::Utf8View, _) => {
            let views = values.as_string_view();
            let offsets = narrow_offsets(views.iter().map(|v| v.map_or(0, str::len))).map_err(|()| too_long())?;
            let bytes: Vec<u8> = views.iter().flatten().flat_map(str::as_bytes).copied().collect();
            Arc::new(StringArray::try_new(offsets, bytes.into(), nulls).map_err(arrow)?)
        }
        (DataType::BinaryView, _) => {
            let views = values.as_binary_view();
            let offsets = narrow_offsets(views.iter().map(|v| v.map_or(0, <[u8]>::len))).map_err(|()| too_long())?;
            let bytes: Vec<u8> = views.iter().flatten().flatten().copied().collect();
            Arc::new(BinaryArray::try_new(offsets, bytes.into(), nulls).map_err(arrow)?)
        }
        (DataType::LargeUtf8, DataType::Utf8) => {
            let large = values.as_string::<i64>();
            let offsets = narrow_offsets(large.offsets().lengths()).map_err(|()| too_long())?;
            let first = large.value_offsets()[0].as_usize();
            let bytes = large.values().slice_with_length(first, offsets.last().as_usize());
            Arc::new(StringArray::try_new(offsets, bytes, nulls).map_err(arrow)?)
        }
        (DataType::LargeBinary, DataType::Binary) => {
            let large = values.as_binary::<i64>();
            let offsets = narrow_offsets(large.offsets().lengths()).map_err(|()| too_long())?;
            let first = large.value_offsets()[0].as_usize();
            let bytes = large.values().slice_with_length(first, offsets.last().as_usize());
            Arc::new(BinaryArray::try_new(offsets, bytes, nulls).map_err(arrow)?)
        }
        (DataType::FixedSizeBinary(_), _) => Arc::new(values.as_fixed_size_binary().iter().collect::<BinaryArray>()),
        (DataType::Date64, _) => {
            const DAY: i64 = 86_400_000;
            let days = values.as_primitive::<Date64Type>().try_unary::<_, Date32Type, _>(|ms| {
                (ms % DAY == 0).then(|| i32::try_from(ms / DAY).ok()).flatten().ok_or(())
            });
            Arc::new(days.map_err(|()| lossy("a date64 that is not a whole day"))?) as ArrayRef
        }
        (DataType::Decimal32(p, s), _) => {
            Arc::new(decimal(values.as_primitive::<Decimal32Type>().unary(i128::from), *p, *s)?)
        }
        (DataType::Decimal64(p, s), _) => {
            Arc::new(decimal(values.as_primitive::<Decimal64Type>().unary(i128::from), *p, *s)?)
        }
        (DataType::Decimal256(p, s), _) => {
            let narrow = values.as_primitive::<Decimal256Type>().try_unary(|v| v.to_i128().ok_or(()));
            Arc::new(decimal(narrow.map_err(|()| lossy("a decimal256 wider than 128 bits"))?, *p, *s)?)
        }
        (DataType::Timestamp(unit, _), DataType::Timestamp(_, zone)) => {
            // The same instants in another zone's name: zoned values are UTC-based.
            let micros = to_micros(values, *unit).map_err(|()| lossy("a timestamp that is not a whole microsecond"))?;
            Arc::new(TimestampMicrosecondArray::new(micros, nulls).with_timezone_opt(zone.clone()))
        }
        (DataType::Time32(unit) | DataType::Time64(unit), DataType::Time64(TimeUnit::Nanosecond)) => {
            let nanos = to_nanos(values, *unit).map_err(|()| lossy("a time out of range"))?;
            Arc::new(Time64NanosecondArray::new(nanos, nulls))
        }
        (DataType::Duration(unit), _) => {
            let micros = to_micros(values, *unit).map_err(|()| lossy("a duration that is not a whole microsecond"))?;
            Arc::new(DurationMicrosecondArray::new(micros, nulls))
        }
        (DataType::List(_), DataType::List(item)) => {
            let list = values.as_list::<i32>();
            let items = list_items(list.values(), item, path)?;
            Arc::new(ListArray::try_new(item.clone(), list.offsets().clone(), items, nulls).map_err(arrow)?)
        }
        (DataType::LargeList(_), DataType::List(item)) => {
            let list: &LargeListArray = values.as_list::<i64>();
            let offsets: Vec<i32> = list
                .offsets()
                .iter()
                .map(|o| i32::try_from(*o))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| lossy("a large list of more than 2^31 items in one batch"))?;
            let items = list_items(list.values(), item, path)?;
            Arc::new(
                ListArray::try_new(item.clone(), OffsetBuffer::new(ScalarBuffer::from(offsets)), items, nulls)
                    .map_err(arrow)?,
            )
        }
        (DataType::FixedSizeList(_, size), DataType::List(item)) => {
            let list = values.as_fixed_size_list();
            let size = usize::try_from(*size).map_err(|_| lossy("a negative list size"))?;
            let offsets = (0..=list.len())
                .map(|i| i32::try_from(i * size))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| lossy("a fixed-size list of more than 2^31 items in one batch"))?;
            let items = list_items(list.values(), item, path)?;
            Arc::new(
                ListArray::try_new(item.clone(), OffsetBuffer::new(ScalarBuffer::from(offsets)), items, nulls)
                    .map_err(arrow)?,
            )
        }
        (DataType::Map(..), DataType::Map(entries, sorted)) => {
            let map: &MapArray = values.as_map();
            let DataType::Struct(targets) = entries.data_type() else {
                return Err(Error::internal("a map's Spark form without entries"));
            };
            let children = map
                .entries()
                .columns()
                .iter()
                .zip(targets)
                .map(|(c, t)| {
                    let child_path = format!("{path}.{}", t.name());
                    let out = array(c, t.data_type(), &child_path)?;
                    check_non_null(&out, t, &child_path)?;
                    Ok(out)
                })
                .collect::<Result<Vec<_>>>()?;
            let entries_array = StructArray::try_new(targets.clone(), children, None).map_err(arrow)?;
            Arc::new(
                MapArray::try_new(entries.clone(), map.offsets().clone(), entries_array, nulls, *sorted)
                    .map_err(arrow)?,
            )
        }
        (DataType::Struct(_), DataType::Struct(targets)) => {
            let children = struct_children(values.as_struct(), targets, path)?;
            Arc::new(StructArray::try_new(targets.clone(), children, nulls).map_err(arrow)?)
        }
        (from, to) => {
            return Err(Error::Schema(format!("column {path:?} holds {from} where {to} is expected")));
        }
    })
}

fn arrow(e: arrow_schema::ArrowError) -> Error {
    Error::Arrow(Arc::new(e))
}

/// Refuses nulls in a column `field` declares non-null (nulls its parent masks aside, which
/// the caller has already excluded by passing the child as its parent sees it).
fn check_non_null(values: &ArrayRef, field: &Field, path: &str) -> Result<()> {
    if !field.is_nullable() && values.logical_null_count() > 0 {
        return Err(Error::Schema(format!("column {path:?} is declared non-null but holds nulls")));
    }
    Ok(())
}

/// The children of a struct, by the names of `targets`, cast to them; a child declared non-null
/// may be null only where the struct is.
fn struct_children(values: &StructArray, targets: &Fields, path: &str) -> Result<Vec<ArrayRef>> {
    let names = values.column_names();
    targets
        .iter()
        .map(|t| {
            let child_path = format!("{path}.{}", t.name());
            let index = names.iter().position(|n| *n == t.name().as_str()).ok_or_else(|| {
                Error::Schema(format!("column {path:?} has no field {:?} (it has {names:?})", t.name()))
            })?;
            let child = array(values.column(index), t.data_type(), &child_path)?;
            if !t.is_nullable() {
                let visible = match (values.nulls(), child.logical_nulls()) {
                    (Some(parent), Some(own)) => {
                        // A null under a null parent is not a value: count only the others.
                        (0..child.len()).filter(|&i| parent.is_valid(i) && own.is_null(i)).count()
                    }
                    (None, Some(own)) => own.null_count(),
                    (_, None) => 0,
                };
                if visible > 0 {
                    return Err(Error::Schema(format!("column {child_path:?} is declared non-null but holds nulls")));
                }
            }
            Ok(child)
        })
        .collect()
}

/// The items of a list cast to its `item` field, refused if that is non-null and they hold nulls.
fn list_items(items: &ArrayRef, item: &FieldRef, path: &str) -> Result<ArrayRef> {
    let item_path = format!("{path}.{}", item.name());
    let out = array(items, item.data_type(), &item_path)?;
    check_non_null(&out, item, &item_path)?;
    Ok(out)
}

/// Plain string or binary offsets for the values of a large or view array, `Err` past 2^31
/// bytes in one batch.
fn narrow_offsets<'a>(lengths: impl Iterator<Item = usize> + 'a) -> std::result::Result<OffsetBuffer<i32>, ()> {
    let mut offsets = vec![0i32];
    let mut end = 0i32;
    for length in lengths {
        end = i32::try_from(length).ok().and_then(|l| end.checked_add(l)).ok_or(())?;
        offsets.push(end);
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(offsets)))
}

fn decimal(values: PrimitiveArray<Decimal128Type>, precision: u8, scale: i8) -> Result<Decimal128Array> {
    values.with_precision_and_scale(precision, scale).map_err(arrow)
}

/// The values of a timestamp or duration array of `unit`, in microseconds; `Err` if one is
/// not a whole microsecond or overflows.
fn to_micros(values: &ArrayRef, unit: TimeUnit) -> std::result::Result<ScalarBuffer<i64>, ()> {
    // Timestamps and durations are 64-bit integers: read them as such (checked, never a panic).
    let data = values.to_data().into_builder().data_type(DataType::Int64).build().map_err(|_| ())?;
    let ints = PrimitiveArray::<Int64Type>::from(data);
    let convert = |(i, v): (usize, &i64)| -> std::result::Result<i64, ()> {
        if ints.is_null(i) {
            return Ok(0);
        }
        match unit {
            TimeUnit::Second => v.checked_mul(1_000_000).ok_or(()),
            TimeUnit::Millisecond => v.checked_mul(1_000).ok_or(()),
            TimeUnit::Microsecond => Ok(*v),
            TimeUnit::Nanosecond => (v % 1_000 == 0).then_some(v / 1_000).ok_or(()),
        }
    };
    ints.values().iter().enumerate().map(convert).collect::<std::result::Result<Vec<_>, _>>().map(ScalarBuffer::from)
}

/// The values of a time array of `unit`, in nanoseconds; `Err` if one overflows.
fn to_nanos(values: &ArrayRef, unit: TimeUnit) -> std::result::Result<ScalarBuffer<i64>, ()> {
    let scale: i64 = match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    };
    let wide: Vec<i64> = match values.data_type() {
        DataType::Time32(_) => {
            let data = values.to_data().into_builder().data_type(DataType::Int32).build().map_err(|_| ())?;
            PrimitiveArray::<Int32Type>::from(data).values().iter().map(|v| i64::from(*v)).collect()
        }
        _ => {
            let data = values.to_data().into_builder().data_type(DataType::Int64).build().map_err(|_| ())?;
            PrimitiveArray::<Int64Type>::from(data).values().to_vec()
        }
    };
    wide.iter()
        .map(|v| v.checked_mul(scale).ok_or(()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(ScalarBuffer::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date64Array, TimestampNanosecondArray, UInt64Array};

    fn cast(values: ArrayRef) -> Result<ArrayRef> {
        let target = data_type(values.data_type(), "c")?;
        array(&values, &target, "c")
    }

    #[test]
    fn exact_casts_keep_values_and_nulls() {
        let out = cast(Arc::new(UInt64Array::from(vec![Some(u64::MAX), None, Some(0)]))).unwrap();
        let out = out.as_primitive::<Decimal128Type>();
        assert_eq!(out.data_type(), &DataType::Decimal128(20, 0));
        assert_eq!(out.iter().collect::<Vec<_>>(), vec![Some(i128::from(u64::MAX)), None, Some(0)]);
        let out =
            cast(Arc::new(TimestampNanosecondArray::from(vec![Some(-3_000), None]).with_timezone("UTC"))).unwrap();
        assert_eq!(out.data_type(), &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())));
        assert_eq!(
            out.as_primitive::<arrow_array::types::TimestampMicrosecondType>().iter().collect::<Vec<_>>(),
            vec![Some(-3), None]
        );
        let out = cast(Arc::new(Date64Array::from(vec![Some(-86_400_000), None]))).unwrap();
        assert_eq!(out.as_primitive::<Date32Type>().iter().collect::<Vec<_>>(), vec![Some(-1), None]);
    }

    #[test]
    fn the_pyspark_form_renames_narrows_and_moves_zones_to_utc() {
        let item = Arc::new(Field::new("item", DataType::LargeUtf8, true));
        let entries = Field::new(
            "pairs",
            DataType::Struct(Fields::from(vec![
                Field::new("k", DataType::Utf8, false),
                Field::new("v", DataType::Timestamp(TimeUnit::Nanosecond, Some("Asia/Tokyo".into())), true),
            ])),
            false,
        );
        let file = Schema::new(vec![
            Field::new("l", DataType::LargeList(item), false),
            Field::new("m", DataType::Map(Arc::new(entries), false), true),
            Field::new("t", DataType::Time32(TimeUnit::Millisecond), true),
        ]);
        let py = schema_in(&file, Flavor::PySpark).unwrap();
        let element = Arc::new(Field::new("element", DataType::Utf8, true));
        assert_eq!(py.field(0), &Field::new("l", DataType::List(element), true));
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let pairs = Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", utc, true)]);
        let map = DataType::Map(Arc::new(Field::new("entries", DataType::Struct(pairs), false)), false);
        assert_eq!(py.field(1).data_type(), &map);
        assert_eq!(py.field(2).data_type(), &DataType::Time64(TimeUnit::Nanosecond));
        // The JVM form keeps names, widths and zones, and refuses times.
        let jvm_item = data_type(&DataType::LargeList(Arc::new(Field::new("x", DataType::LargeUtf8, true))), "l");
        assert_eq!(jvm_item.unwrap(), DataType::List(Arc::new(Field::new("x", DataType::LargeUtf8, true))));
        assert!(schema(&file).is_err());

        let strings = arrow_array::LargeStringArray::from(vec![Some("a"), None, Some("bcd")]).slice(1, 2);
        let out = array(&(Arc::new(strings) as ArrayRef), &DataType::Utf8, "s").unwrap();
        assert_eq!(out.as_string::<i32>().iter().collect::<Vec<_>>(), vec![None, Some("bcd")]);
        let times = Arc::new(arrow_array::Time32MillisecondArray::from(vec![Some(1_500), None])) as ArrayRef;
        let out = array(&times, &DataType::Time64(TimeUnit::Nanosecond), "t").unwrap();
        assert_eq!(out.as_primitive::<arrow_array::types::Time64NanosecondType>().value(0), 1_500_000_000);
    }

    #[test]
    fn non_null_targets_refuse_nulls_but_not_under_a_null_parent() {
        let inner = Fields::from(vec![Field::new("y", DataType::Int32, false)]);
        let target: SchemaRef = Arc::new(Schema::new(vec![Field::new("x", DataType::Struct(inner), true)]));
        let nullable = Fields::from(vec![Field::new("y", DataType::Int32, true)]);
        let make = |parent: Option<Vec<bool>>| {
            let ys = Arc::new(arrow_array::Int32Array::from(vec![Some(1), None])) as ArrayRef;
            let x = StructArray::try_new(nullable.clone(), vec![ys], parent.map(Into::into)).unwrap();
            let schema = Arc::new(Schema::new(vec![Field::new("x", x.data_type().clone(), true)]));
            RecordBatch::try_new(schema, vec![Arc::new(x)]).unwrap()
        };
        let e = batch(&make(None), &target).unwrap_err();
        assert!(matches!(e, Error::Schema(_)) && e.to_string().contains("\"x.y\" is declared non-null"), "{e}");
        let masked = batch(&make(Some(vec![true, false])), &target).unwrap();
        assert_eq!(masked.column(0).null_count(), 1);
    }

    #[test]
    fn lossy_values_and_types_without_a_spark_form_are_errors_naming_the_column() {
        for values in
            [Arc::new(TimestampNanosecondArray::from(vec![1_001])) as ArrayRef, Arc::new(Date64Array::from(vec![1]))]
        {
            let e = cast(values).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("column \"c\""), "{e}");
        }
        for t in [DataType::Time64(TimeUnit::Microsecond), DataType::Decimal256(40, 2)] {
            let e = data_type(&t, "c").unwrap_err();
            assert!(e.to_string().contains("column \"c\""), "{e}");
        }
    }
}
