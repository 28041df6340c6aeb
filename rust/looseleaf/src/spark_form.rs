//! The Arrow form Spark reads: for any Arrow type a file may hold, the type Spark's Arrow
//! mapping (`ArrowUtils.fromArrowSchema`) and column readers take, and exact casts of arrays to
//! it.
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
//! microsecond timestamps and durations, lists) and are refused otherwise (intervals, times,
//! unions, wider decimals) with an error naming the column. A value that cannot be cast without
//! loss fails the read, naming the column, instead of being truncated.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, Float16Type, Int16Type,
    Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, Decimal128Array, DurationMicrosecondArray, Float32Array, LargeListArray, ListArray,
    MapArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};

/// Most digits of a Spark decimal.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// The schema Spark reads for `schema` (every field nullable).
///
/// # Errors
/// [`Error::Unsupported`] naming the first column Spark cannot hold.
pub fn schema(schema: &Schema) -> Result<SchemaRef> {
    let fields: Vec<FieldRef> = schema.fields().iter().map(|f| field(f, f.name())).collect::<Result<_>>()?;
    Ok(Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

fn field(f: &Field, path: &str) -> Result<FieldRef> {
    Ok(Arc::new(Field::new(f.name(), data_type(f.data_type(), path)?, true)))
}

/// The type Spark reads for `data_type`; `path` names the column in errors.
///
/// # Errors
/// [`Error::Unsupported`] if Spark has no type for it.
pub fn data_type(from: &DataType, path: &str) -> Result<DataType> {
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
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::Date32 => from.clone(),
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
        DataType::Timestamp(_, zone) => DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        DataType::Duration(_) => DataType::Duration(TimeUnit::Microsecond),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            DataType::List(field(item, &format!("{path}.{}", item.name()))?)
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(children) = entries.data_type() else {
                return refuse("a map whose entries are not a struct");
            };
            let [key, value] = children.iter().collect::<Vec<_>>()[..] else {
                return refuse("a map whose entries are not a key and a value");
            };
            let key = Field::new(key.name(), data_type(key.data_type(), &format!("{path}.key"))?, false);
            let value = field(value, &format!("{path}.value"))?;
            let entries = Field::new(entries.name(), DataType::Struct(Fields::from(vec![Arc::new(key), value])), false);
            DataType::Map(Arc::new(entries), false)
        }
        DataType::Struct(children) => DataType::Struct(
            children.iter().map(|c| field(c, &format!("{path}.{}", c.name()))).collect::<Result<Fields>>()?,
        ),
        DataType::Dictionary(_, values) => data_type(values, path)?,
        DataType::Time32(_) | DataType::Time64(_) => return refuse("times are not read into Spark yet"),
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

/// `batch` in the form of `target` (from [`schema`] of the batch's schema), columns by position.
///
/// # Errors
/// [`Error::Unsupported`] naming the column of a value that cannot be cast without loss.
pub fn batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == target.fields() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(target.fields())
        .map(|(column, field)| array(column, field.data_type(), field.name()))
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
        (DataType::Utf8View, _) => Arc::new(values.as_string_view().iter().collect::<StringArray>()),
        (DataType::BinaryView, _) => Arc::new(values.as_binary_view().iter().collect::<BinaryArray>()),
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
        (DataType::Timestamp(unit, zone), _) => {
            let micros = to_micros(values, *unit).map_err(|()| lossy("a timestamp that is not a whole microsecond"))?;
            Arc::new(TimestampMicrosecondArray::new(micros, nulls).with_timezone_opt(zone.clone()))
        }
        (DataType::Duration(unit), _) => {
            let micros = to_micros(values, *unit).map_err(|()| lossy("a duration that is not a whole microsecond"))?;
            Arc::new(DurationMicrosecondArray::new(micros, nulls))
        }
        (DataType::List(_), DataType::List(item)) => {
            let list = values.as_list::<i32>();
            let items = array(list.values(), item.data_type(), &format!("{path}.{}", item.name()))?;
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
            let items = array(list.values(), item.data_type(), &format!("{path}.{}", item.name()))?;
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
            let items = array(list.values(), item.data_type(), &format!("{path}.{}", item.name()))?;
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
                .map(|(c, t)| array(c, t.data_type(), &format!("{path}.{}", t.name())))
                .collect::<Result<Vec<_>>>()?;
            let entries_array = StructArray::try_new(targets.clone(), children, None).map_err(arrow)?;
            Arc::new(
                MapArray::try_new(entries.clone(), map.offsets().clone(), entries_array, nulls, *sorted)
                    .map_err(arrow)?,
            )
        }
        (DataType::Struct(_), DataType::Struct(targets)) => {
            let values = values.as_struct();
            let children = values
                .columns()
                .iter()
                .zip(targets)
                .map(|(c, t)| array(c, t.data_type(), &format!("{path}.{}", t.name())))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(targets.clone(), children, nulls).map_err(arrow)?)
        }
        (from, to) => {
            return Err(Error::internal(format!("column {path:?}: no Spark cast from {from} to {to}")));
        }
    })
}

fn arrow(e: arrow_schema::ArrowError) -> Error {
    Error::Arrow(Arc::new(e))
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
