//! Conversion between Arrow schemas and the footer's schema, and the mapping of fields to
//! columns.
//!
//! Columns are numbered depth-first over the schema. Every field that stores data of its own
//! gets one column: a primitive, string or binary field its values, (later) a struct its
//! validity and a list its offsets. [`FieldColumns`] is the resulting tree, which both the
//! writer (to split batches into columns) and the reader (to build schedulers and decoders)
//! walk.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, IntervalUnit, Schema, TimeUnit};

use super::proto::{self, TypeKind};
use crate::error::{Error, Result, bail, ensure};

/// A field together with the columns that store it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldColumns {
    /// The Arrow field.
    pub field: FieldRef,
    /// The column holding the field's own data, if it has one.
    pub column: Option<u32>,
    /// Column trees of the children of nested fields.
    pub children: Vec<FieldColumns>,
}

impl FieldColumns {
    /// All columns of this field, depth first.
    pub fn columns(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns(&self, out: &mut Vec<u32>) {
        out.extend(self.column);
        for child in &self.children {
            child.collect_columns(out);
        }
    }
}

/// Whether the type is stored in a single column of fixed-width values.
pub fn fixed_width_bits(data_type: &DataType) -> Option<u64> {
    match data_type {
        DataType::Boolean => Some(1),
        DataType::FixedSizeBinary(n) => u64::try_from(*n).ok().map(|n| n * 8),
        other => other.primitive_width().map(|w| w as u64 * 8),
    }
}

/// Whether the type is stored as offsets and data bytes.
pub fn is_variable_width(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

/// Assigns columns to the fields of `schema`.
///
/// # Errors
/// [`Error::Unsupported`] naming the field for types the format cannot store.
pub fn assign_columns(schema: &Schema) -> Result<Vec<FieldColumns>> {
    let mut next = 0u32;
    schema.fields().iter().map(|f| assign_field(f, &mut next)).collect()
}

fn assign_field(field: &FieldRef, next: &mut u32) -> Result<FieldColumns> {
    let data_type = field.data_type();
    // Plain values are one bit or a positive number of bytes wide: a fixed-size binary of width
    // 0 would make pages no reader accepts.
    ensure!(
        fixed_width_bits(data_type) != Some(0),
        unsupported,
        "field {:?} has type {data_type}, whose values of zero bytes looseleaf cannot store",
        field.name()
    );
    if matches!(data_type, DataType::Null) || fixed_width_bits(data_type).is_some() || is_variable_width(data_type) {
        let column = *next;
        *next = next.checked_add(1).ok_or_else(|| Error::Unsupported("more than 2^32 columns".into()))?;
        return Ok(FieldColumns { field: field.clone(), column: Some(column), children: vec![] });
    }
    bail!(unsupported, "field {:?} has type {data_type}, which looseleaf cannot store yet", field.name())
}

/// Converts an Arrow schema to the footer's fields, assigning columns.
pub fn schema_to_proto(schema: &Schema) -> Result<Vec<proto::Field>> {
    let trees = assign_columns(schema)?;
    trees.iter().map(field_to_proto).collect()
}

fn field_to_proto(tree: &FieldColumns) -> Result<proto::Field> {
    let field = &tree.field;
    Ok(proto::Field {
        name: field.name().clone(),
        data_type: Some(type_to_proto(field.data_type(), field.name())?),
        nullable: field.is_nullable(),
        children: tree.children.iter().map(field_to_proto).collect::<Result<_>>()?,
        metadata: field.metadata().clone().into(),
        column: tree.column,
    })
}

fn unit_to_proto(unit: &TimeUnit) -> proto::TimeUnit {
    match unit {
        TimeUnit::Second => proto::TimeUnit::Second,
        TimeUnit::Millisecond => proto::TimeUnit::Millisecond,
        TimeUnit::Microsecond => proto::TimeUnit::Microsecond,
        TimeUnit::Nanosecond => proto::TimeUnit::Nanosecond,
    }
}

fn type_to_proto(data_type: &DataType, name: &str) -> Result<proto::DataType> {
    let mut out = proto::DataType::default();
    let kind = match data_type {
        DataType::Null => TypeKind::Null,
        DataType::Boolean => TypeKind::Boolean,
        DataType::Int8 => TypeKind::Int8,
        DataType::Int16 => TypeKind::Int16,
        DataType::Int32 => TypeKind::Int32,
        DataType::Int64 => TypeKind::Int64,
        DataType::UInt8 => TypeKind::UInt8,
        DataType::UInt16 => TypeKind::UInt16,
        DataType::UInt32 => TypeKind::UInt32,
        DataType::UInt64 => TypeKind::UInt64,
        DataType::Float16 => TypeKind::Float16,
        DataType::Float32 => TypeKind::Float32,
        DataType::Float64 => TypeKind::Float64,
        DataType::Date32 => TypeKind::Date32,
        DataType::Date64 => TypeKind::Date64,
        DataType::Time32(unit @ (TimeUnit::Second | TimeUnit::Millisecond)) => {
            out.unit = unit_to_proto(unit) as i32;
            TypeKind::Time32
        }
        DataType::Time64(unit @ (TimeUnit::Microsecond | TimeUnit::Nanosecond)) => {
            out.unit = unit_to_proto(unit) as i32;
            TypeKind::Time64
        }
        DataType::Timestamp(unit, tz) => {
            out.unit = unit_to_proto(unit) as i32;
            out.timezone = tz.as_ref().map(|tz| tz.to_string());
            TypeKind::Timestamp
        }
        DataType::Duration(unit) => {
            out.unit = unit_to_proto(unit) as i32;
            TypeKind::Duration
        }
        DataType::Interval(IntervalUnit::YearMonth) => TypeKind::IntervalYearMonth,
        DataType::Interval(IntervalUnit::DayTime) => TypeKind::IntervalDayTime,
        DataType::Interval(IntervalUnit::MonthDayNano) => TypeKind::IntervalMonthDayNano,
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => {
            out.precision = *p as u32;
            out.scale = *s as i32;
            match data_type {
                DataType::Decimal32(..) => TypeKind::Decimal32,
                DataType::Decimal64(..) => TypeKind::Decimal64,
                DataType::Decimal128(..) => TypeKind::Decimal128,
                _ => TypeKind::Decimal256,
            }
        }
        DataType::Utf8 => TypeKind::Utf8,
        DataType::LargeUtf8 => TypeKind::LargeUtf8,
        DataType::Utf8View => TypeKind::Utf8View,
        DataType::Binary => TypeKind::Binary,
        DataType::LargeBinary => TypeKind::LargeBinary,
        DataType::BinaryView => TypeKind::BinaryView,
        DataType::FixedSizeBinary(n) => {
            out.fixed_size = u32::try_from(*n).map_err(|_| Error::Schema(format!("field {name:?}: negative width")))?;
            TypeKind::FixedSizeBinary
        }
        other => bail!(unsupported, "field {name:?} has type {other}, which looseleaf cannot store yet"),
    };
    out.kind = kind as i32;
    Ok(out)
}

/// Converts the footer's fields back to an Arrow schema and its column trees, checking that
/// every column number is in range and used exactly once.
pub fn schema_from_proto(
    fields: &[proto::Field],
    metadata: &BTreeMap<String, String>,
    num_columns: u32,
) -> Result<(Arc<Schema>, Vec<FieldColumns>)> {
    let mut seen = vec![false; num_columns as usize];
    let trees = fields.iter().map(|f| field_from_proto(f, &mut seen)).collect::<Result<Vec<_>>>()?;
    ensure!(seen.iter().all(|s| *s), corrupt, "the schema does not use every column of the file");
    let schema = Schema::new(trees.iter().map(|t| t.field.clone()).collect::<Vec<_>>()).with_metadata(metadata.clone());
    Ok((Arc::new(schema), trees))
}

fn field_from_proto(field: &proto::Field, seen: &mut [bool]) -> Result<FieldColumns> {
    let data_type = type_from_proto(field)?;
    let column = match field.column {
        Some(c) => {
            let slot = seen.get_mut(c as usize);
            ensure!(
                matches!(slot, Some(false)),
                corrupt,
                "field {:?} refers to column {c}, which is out of range or used twice",
                field.name
            );
            if let Some(slot) = slot {
                *slot = true;
            }
            Some(c)
        }
        None => None,
    };
    ensure!(field.children.is_empty(), corrupt, "field {:?} of a flat type has children", field.name);
    ensure!(column.is_some(), corrupt, "field {:?} has no column", field.name);
    let arrow_field = Field::new(&field.name, data_type, field.nullable).with_metadata(field.metadata.clone());
    Ok(FieldColumns { field: Arc::new(arrow_field), column, children: vec![] })
}

fn unit_from_proto(unit: i32, name: &str) -> Result<TimeUnit> {
    Ok(match proto::TimeUnit::try_from(unit) {
        Ok(proto::TimeUnit::Second) => TimeUnit::Second,
        Ok(proto::TimeUnit::Millisecond) => TimeUnit::Millisecond,
        Ok(proto::TimeUnit::Microsecond) => TimeUnit::Microsecond,
        Ok(proto::TimeUnit::Nanosecond) => TimeUnit::Nanosecond,
        Err(_) => bail!(corrupt, "field {name:?} has an unknown time unit {unit}"),
    })
}

fn type_from_proto(field: &proto::Field) -> Result<DataType> {
    let name = field.name.as_str();
    let Some(t) = &field.data_type else { bail!(corrupt, "field {name:?} has no type") };
    let kind = TypeKind::try_from(t.kind).unwrap_or(TypeKind::Unknown);
    let decimal = |make: fn(u8, i8) -> DataType, max_precision: u32| -> Result<DataType> {
        ensure!(
            (1..=max_precision).contains(&t.precision) && t.scale.unsigned_abs() <= max_precision,
            corrupt,
            "field {name:?} has an invalid decimal precision/scale {}/{}",
            t.precision,
            t.scale
        );
        Ok(make(t.precision as u8, t.scale as i8))
    };
    Ok(match kind {
        TypeKind::Null => DataType::Null,
        TypeKind::Boolean => DataType::Boolean,
        TypeKind::Int8 => DataType::Int8,
        TypeKind::Int16 => DataType::Int16,
        TypeKind::Int32 => DataType::Int32,
        TypeKind::Int64 => DataType::Int64,
        TypeKind::UInt8 => DataType::UInt8,
        TypeKind::UInt16 => DataType::UInt16,
        TypeKind::UInt32 => DataType::UInt32,
        TypeKind::UInt64 => DataType::UInt64,
        TypeKind::Float16 => DataType::Float16,
        TypeKind::Float32 => DataType::Float32,
        TypeKind::Float64 => DataType::Float64,
        TypeKind::Date32 => DataType::Date32,
        TypeKind::Date64 => DataType::Date64,
        // Arrow has 32-bit times of seconds and milliseconds, 64-bit times of micro- and
        // nanoseconds, and no others (building an array of another one panics).
        TypeKind::Time32 => match unit_from_proto(t.unit, name)? {
            unit @ (TimeUnit::Second | TimeUnit::Millisecond) => DataType::Time32(unit),
            unit => bail!(corrupt, "field {name:?} is a 32-bit time of unit {unit:?}, which Arrow does not have"),
        },
        TypeKind::Time64 => match unit_from_proto(t.unit, name)? {
            unit @ (TimeUnit::Microsecond | TimeUnit::Nanosecond) => DataType::Time64(unit),
            unit => bail!(corrupt, "field {name:?} is a 64-bit time of unit {unit:?}, which Arrow does not have"),
        },
        TypeKind::Timestamp => {
            DataType::Timestamp(unit_from_proto(t.unit, name)?, t.timezone.as_deref().map(Arc::from))
        }
        TypeKind::Duration => DataType::Duration(unit_from_proto(t.unit, name)?),
        TypeKind::IntervalYearMonth => DataType::Interval(IntervalUnit::YearMonth),
        TypeKind::IntervalDayTime => DataType::Interval(IntervalUnit::DayTime),
        TypeKind::IntervalMonthDayNano => DataType::Interval(IntervalUnit::MonthDayNano),
        TypeKind::Decimal32 => decimal(DataType::Decimal32, 9)?,
        TypeKind::Decimal64 => decimal(DataType::Decimal64, 18)?,
        TypeKind::Decimal128 => decimal(DataType::Decimal128, 38)?,
        TypeKind::Decimal256 => decimal(DataType::Decimal256, 76)?,
        TypeKind::Utf8 => DataType::Utf8,
        TypeKind::LargeUtf8 => DataType::LargeUtf8,
        TypeKind::Utf8View => DataType::Utf8View,
        TypeKind::Binary => DataType::Binary,
        TypeKind::LargeBinary => DataType::LargeBinary,
        TypeKind::BinaryView => DataType::BinaryView,
        TypeKind::FixedSizeBinary => {
            let n = i32::try_from(t.fixed_size).map_err(|_| Error::corrupt("", "fixed size binary width too large"))?;
            DataType::FixedSizeBinary(n)
        }
        other => bail!(unsupported, "field {name:?} has type {other:?}, which this reader cannot read"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_schema_round_trip() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
            Field::new("d", DataType::Decimal256(50, -3), true),
            Field::new("s", DataType::Utf8View, true),
            Field::new("f", DataType::FixedSizeBinary(3), true),
            Field::new("n", DataType::Null, true),
        ])
        .with_metadata(BTreeMap::from([("k".to_string(), "v".to_string())]));
        let fields = schema_to_proto(&schema).unwrap();
        let (back, trees) = schema_from_proto(&fields, &schema.metadata().clone().into(), 6).unwrap();
        assert_eq!(back.as_ref(), &schema);
        assert_eq!(trees.iter().flat_map(|t| t.columns()).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
        assert!(schema_from_proto(&fields, &schema.metadata().clone().into(), 7).is_err());
        assert!(schema_from_proto(&fields, &schema.metadata().clone().into(), 5).is_err());
    }
}
