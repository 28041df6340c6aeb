//! Conversion between Arrow schemas and the footer's schema, and the mapping of fields to
//! columns.
//!
//! Columns are numbered depth-first over the schema. Every field that stores data of its own
//! gets one column ([`Layout`] says which): a primitive, string or binary field its values; a
//! fixed-size list of fixed-width values (an embedding) its values too, in one column; a list or
//! map its offsets and validity; a nullable struct or a nullable fixed-size list of other types
//! its validity. Children follow their parent, so struct fields are shredded into columns of
//! their own and a projection reads only the columns it names. [`FieldColumns`] is the
//! resulting tree, which both the writer (to split batches into columns) and the reader (to
//! build schedulers and decoders) walk.

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
    /// Column trees of the Arrow children (struct fields, the item of a list or fixed-size list,
    /// the entries of a map), whether or not they have columns of their own.
    pub children: Vec<FieldColumns>,
}

/// How a field is laid out in columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One column of values, children included (flat types, fixed-size lists of fixed-width
    /// values).
    Leaf,
    /// A validity column if the struct is nullable, then one tree per child.
    Struct,
    /// A column of offsets and validity, then the tree of the items (lists, large lists, maps).
    List,
    /// A validity column if the list is nullable, then the tree of its `rows × size` items.
    FixedSizeList,
}

impl Layout {
    /// The layout of `data_type`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for types looseleaf does not store.
    pub fn of(data_type: &DataType) -> Result<Self> {
        Ok(match data_type {
            DataType::Struct(_) => Layout::Struct,
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => Layout::List,
            DataType::FixedSizeList(_, _) if is_fixed_width_list(data_type) => Layout::Leaf,
            DataType::FixedSizeList(_, _) => Layout::FixedSizeList,
            DataType::Null => Layout::Leaf,
            DataType::Dictionary(key, value)
                if key.is_dictionary_key_type() && (fixed_width_bits(value).is_some() || is_variable_width(value)) =>
            {
                Layout::Leaf
            }
            other if fixed_width_bits(other).is_some() || is_variable_width(other) => Layout::Leaf,
            other => bail!(unsupported, "type {other}"),
        })
    }

    /// Whether a field of this layout has a column of its own.
    pub fn has_column(self, nullable: bool) -> bool {
        match self {
            Layout::Leaf | Layout::List => true,
            Layout::Struct | Layout::FixedSizeList => nullable,
        }
    }
}

/// Whether `data_type` is a fixed-size list (of fixed-size lists...) of fixed-width values, which
/// is stored as one column of contiguous values.
pub fn is_fixed_width_list(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(item, size) if *size > 0 => {
            fixed_width_bits(item.data_type()).is_some_and(|b| b > 0) || is_fixed_width_list(item.data_type())
        }
        _ => false,
    }
}

/// The child fields of a nested type, in the order their trees appear.
pub fn child_fields(data_type: &DataType) -> Vec<FieldRef> {
    match data_type {
        DataType::Struct(fields) => fields.iter().cloned().collect(),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::Map(item, _) => {
            vec![item.clone()]
        }
        _ => vec![],
    }
}

/// A column and the field that owns it.
#[derive(Debug, Clone, Copy)]
pub struct ColumnOwner<'a> {
    /// The column.
    pub column: u32,
    /// The tree of the field owning the column.
    pub tree: &'a FieldColumns,
}

impl FieldColumns {
    /// Every column of `fields`, in column order, with the dotted path of the field owning it:
    /// `meta.score`, `points.item.x`, `attrs.entries.key`, and `meta` for a struct's validity
    /// column. The one walk over field paths: the writer's encoding policies, the reader's
    /// summaries and plans all name columns this way.
    pub fn column_paths(fields: &[FieldColumns]) -> Vec<(String, ColumnOwner<'_>)> {
        fn walk<'a>(tree: &'a FieldColumns, prefix: &str, out: &mut Vec<(String, ColumnOwner<'a>)>) {
            let name = tree.field.name();
            let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
            for child in &tree.children {
                walk(child, &path, out);
            }
            if let Some(column) = tree.column {
                out.push((path, ColumnOwner { column, tree }));
            }
        }
        let mut out = Vec::new();
        for tree in fields {
            walk(tree, "", &mut out);
        }
        out.sort_by_key(|(_, owner)| owner.column);
        out
    }

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

/// Width in bits of one row of a fixed-width type, fixed-size lists of them included.
pub fn row_bits(data_type: &DataType) -> Option<u64> {
    match data_type {
        DataType::FixedSizeList(item, size) => row_bits(item.data_type()).map(|b| b * (*size).max(0) as u64),
        other => fixed_width_bits(other),
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
    let value_type = match data_type {
        DataType::Dictionary(_, value) => value.as_ref(),
        other => other,
    };
    ensure!(
        fixed_width_bits(value_type) != Some(0),
        unsupported,
        "field {:?} has type {data_type}, whose values of zero bytes looseleaf cannot store",
        field.name()
    );
    let layout = Layout::of(data_type).map_err(|_| {
        Error::unsupported(format!("field {:?} has type {data_type}, which looseleaf cannot store", field.name()))
    })?;
    if let DataType::Map(entries, _) = data_type {
        ensure!(
            matches!(entries.data_type(), DataType::Struct(f) if f.len() == 2),
            unsupported,
            "map field {:?} has entries of type {}, not a struct of key and value",
            field.name(),
            entries.data_type()
        );
    }
    let column = if layout.has_column(field.is_nullable()) {
        let column = *next;
        *next = next.checked_add(1).ok_or_else(|| Error::unsupported("more than 2^32 columns"))?;
        Some(column)
    } else {
        None
    };
    let children = child_fields(data_type)
        .iter()
        .map(|child| if layout == Layout::Leaf { unassigned(child) } else { assign_field(child, next) })
        .collect::<Result<Vec<_>>>()?;
    Ok(FieldColumns { field: field.clone(), column, children })
}

/// The tree of a field stored inside its parent's column (the items of a fixed-width list).
fn unassigned(field: &FieldRef) -> Result<FieldColumns> {
    let children = child_fields(field.data_type()).iter().map(unassigned).collect::<Result<_>>()?;
    Ok(FieldColumns { field: field.clone(), column: None, children })
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
        DataType::Struct(_) => TypeKind::Struct,
        DataType::List(_) => TypeKind::List,
        DataType::LargeList(_) => TypeKind::LargeList,
        DataType::FixedSizeList(_, n) => {
            out.fixed_size = u32::try_from(*n).map_err(|_| Error::Schema(format!("field {name:?}: negative size")))?;
            TypeKind::FixedSizeList
        }
        DataType::Map(_, sorted) => {
            out.keys_sorted = *sorted;
            TypeKind::Map
        }
        DataType::Dictionary(key, value) => {
            out.key = Some(Box::new(type_to_proto(key, name)?));
            out.value = Some(Box::new(type_to_proto(value, name)?));
            TypeKind::Dictionary
        }
        other => bail!(unsupported, "field {name:?} has type {other}, which looseleaf cannot store"),
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
    let trees = fields.iter().map(|f| field_from_proto(f, &mut seen, false)).collect::<Result<Vec<_>>>()?;
    ensure!(seen.iter().all(|s| *s), corrupt, "the schema does not use every column of the file");
    let schema = Schema::new(trees.iter().map(|t| t.field.clone()).collect::<Vec<_>>()).with_metadata(metadata.clone());
    Ok((Arc::new(schema), trees))
}

fn field_from_proto(field: &proto::Field, seen: &mut [bool], in_parent_column: bool) -> Result<FieldColumns> {
    // The layout of a field depends on its children's types (a fixed-size list of fixed-width
    // values is one column, of anything else a validity column and its items' columns), so the
    // whole Arrow field is converted first, and its columns checked against it afterwards.
    let arrow_field = arrow_field_from_proto(field)?;
    columns_from_proto(field, &arrow_field, seen, in_parent_column)
}

/// The Arrow field of a footer field, children included, without looking at columns.
fn arrow_field_from_proto(field: &proto::Field) -> Result<FieldRef> {
    let name = &field.name;
    let Some(t) = &field.data_type else { bail!(corrupt, "field {name:?} has no type") };
    let kind = TypeKind::try_from(t.kind).unwrap_or(TypeKind::Unknown);
    let expected_children = match kind {
        TypeKind::Struct => None,
        TypeKind::List | TypeKind::LargeList | TypeKind::FixedSizeList | TypeKind::Map => Some(1),
        _ => Some(0),
    };
    ensure!(
        expected_children.is_none_or(|n| n == field.children.len()),
        corrupt,
        "field {name:?} of type {kind:?} has {} children",
        field.children.len()
    );
    let children = field.children.iter().map(arrow_field_from_proto).collect::<Result<Vec<_>>>()?;
    let data_type = type_from_proto(field, &children)?;
    Ok(Arc::new(Field::new(name, data_type, field.nullable).with_metadata(field.metadata.clone())))
}

/// Checks that `field` (converted to `arrow_field`) and its children have exactly the columns
/// their layout gives them (none inside a parent stored in one column), each column used once,
/// and returns the field's column tree.
fn columns_from_proto(
    field: &proto::Field,
    arrow_field: &FieldRef,
    seen: &mut [bool],
    in_parent_column: bool,
) -> Result<FieldColumns> {
    let name = &field.name;
    let data_type = arrow_field.data_type();
    let layout = Layout::of(data_type).map_err(|e| Error::corrupt(format!("field {name:?}: {e}")))?;
    let wants_column = !in_parent_column && layout.has_column(field.nullable);
    ensure!(
        field.column.is_some() == wants_column,
        corrupt,
        "field {name:?} of type {data_type} {} a column of its own",
        if wants_column { "lacks" } else { "has" }
    );
    if let Some(c) = field.column {
        let slot = seen.get_mut(c as usize);
        ensure!(
            matches!(slot, Some(false)),
            corrupt,
            "field {name:?} refers to column {c}, which is out of range or used twice"
        );
        if let Some(slot) = slot {
            *slot = true;
        }
    }
    let children_in_column = in_parent_column || layout == Layout::Leaf;
    // `type_from_proto` made one Arrow child of each footer child, in order.
    let children = field
        .children
        .iter()
        .zip(child_fields(data_type))
        .map(|(child, arrow_child)| columns_from_proto(child, &arrow_child, seen, children_in_column))
        .collect::<Result<Vec<_>>>()?;
    Ok(FieldColumns { field: arrow_field.clone(), column: field.column, children })
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

fn type_from_proto(field: &proto::Field, children: &[FieldRef]) -> Result<DataType> {
    let name = field.name.as_str();
    let Some(t) = &field.data_type else { bail!(corrupt, "field {name:?} has no type") };
    type_from_parts(t, children, name)
}

fn type_from_parts(t: &proto::DataType, children: &[FieldRef], name: &str) -> Result<DataType> {
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
            let n = i32::try_from(t.fixed_size).map_err(|_| Error::corrupt("fixed size binary width too large"))?;
            DataType::FixedSizeBinary(n)
        }
        TypeKind::Struct => DataType::Struct(children.to_vec().into()),
        TypeKind::List => DataType::List(only_child(children, name)?),
        TypeKind::LargeList => DataType::LargeList(only_child(children, name)?),
        TypeKind::FixedSizeList => {
            let n = i32::try_from(t.fixed_size).map_err(|_| Error::corrupt("fixed size list size too large"))?;
            DataType::FixedSizeList(only_child(children, name)?, n)
        }
        TypeKind::Map => {
            let entries = only_child(children, name)?;
            ensure!(
                matches!(entries.data_type(), DataType::Struct(f) if f.len() == 2) && !entries.is_nullable(),
                corrupt,
                "map field {name:?} has entries that are not a non-nullable struct of key and value"
            );
            DataType::Map(entries, t.keys_sorted)
        }
        TypeKind::Dictionary => {
            let (Some(key), Some(value)) = (t.key.as_deref(), t.value.as_deref()) else {
                bail!(corrupt, "dictionary field {name:?} lacks its key or value type")
            };
            let (key, value) = (type_from_parts(key, &[], name)?, type_from_parts(value, &[], name)?);
            let dictionary = DataType::Dictionary(Box::new(key), Box::new(value));
            ensure!(
                Layout::of(&dictionary).is_ok(),
                corrupt,
                "field {name:?} has an invalid dictionary type {dictionary}"
            );
            dictionary
        }
        other => bail!(unsupported, "field {name:?} has type {other:?}, which this reader cannot read"),
    })
}

fn only_child(children: &[FieldRef], name: &str) -> Result<FieldRef> {
    match children {
        [child] => Ok(child.clone()),
        _ => bail!(corrupt, "field {name:?} needs exactly one child, has {}", children.len()),
    }
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

    #[test]
    fn nested_schema_round_trip_and_columns() {
        let point = DataType::Struct(
            vec![Field::new("x", DataType::Float64, false), Field::new("tag", DataType::Utf8, true)].into(),
        );
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("meta", point.clone(), true),
            Field::new("points", DataType::List(Arc::new(Field::new("item", point, true))), true),
            Field::new(
                "embedding",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, false)), 4),
                true,
            ),
            Field::new("words", DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Utf8, true)), 2), false),
            Field::new_map(
                "attrs",
                "entries",
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Int32, true),
                false,
                true,
            ),
        ]);
        let fields = schema_to_proto(&schema).unwrap();
        let (back, trees) = schema_from_proto(&fields, &BTreeMap::new(), 13).unwrap();
        assert_eq!(back.as_ref(), &schema);
        let columns: Vec<Vec<u32>> = trees.iter().map(|t| t.columns()).collect();
        // id | meta validity, x, tag | points offsets, item validity, x, tag | embedding |
        // words (not nullable: no validity), items | attrs offsets, key, value
        assert_eq!(columns, vec![vec![0], vec![1, 2, 3], vec![4, 5, 6, 7], vec![8], vec![9], vec![10, 11, 12]]);
        assert!(schema_from_proto(&fields, &BTreeMap::new(), 12).is_err());
    }

    #[test]
    fn fixed_size_lists_with_a_validity_column_and_items_without_one_round_trip() {
        // The list has a column (its validity) and its item none (a struct that is not
        // nullable), like a fixed-size list of fixed-width values stored in one column: the
        // layout follows from the item's type, not from which fields have columns.
        let item = DataType::Struct(vec![Field::new("a", DataType::Int32, true)].into());
        let empty = DataType::Struct(Vec::<Field>::new().into());
        let schema = Schema::new(vec![
            Field::new("pairs", DataType::FixedSizeList(Arc::new(Field::new("item", item, false)), 2), true),
            Field::new("none", DataType::FixedSizeList(Arc::new(Field::new("item", empty, false)), 3), true),
            Field::new(
                "vectors",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Int8, false)), 3),
                true,
            ),
        ]);
        let fields = schema_to_proto(&schema).unwrap();
        let (back, trees) = schema_from_proto(&fields, &BTreeMap::new(), 4).unwrap();
        assert_eq!(back.as_ref(), &schema);
        let columns: Vec<Vec<u32>> = trees.iter().map(|t| t.columns()).collect();
        assert_eq!(columns, vec![vec![0, 1], vec![2], vec![3]]);
    }
}
