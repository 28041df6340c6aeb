//! Random Arrow types and schemas: every flat type the writer supports ([`all_flat_types`], or
//! one drawn at random with random parameters), and nested types (structs, lists, large lists,
//! fixed-size lists, maps) bounded by [`NestedLimits`] so that a random schema stays a size a
//! test can write and read many times.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, IntervalUnit, Schema, SchemaRef, TimeUnit};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

/// Every flat type the writer supports, with representative parameters (each time unit, with
/// and without a time zone, each interval unit, each decimal width, each string/binary layout).
pub fn all_flat_types() -> Vec<DataType> {
    use DataType::*;
    let mut out = vec![
        Null,
        Boolean,
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Float16,
        Float32,
        Float64,
        Date32,
        Date64,
        Time32(TimeUnit::Second),
        Time32(TimeUnit::Millisecond),
        Time64(TimeUnit::Microsecond),
        Time64(TimeUnit::Nanosecond),
    ];
    for unit in [TimeUnit::Second, TimeUnit::Millisecond, TimeUnit::Microsecond, TimeUnit::Nanosecond] {
        out.push(Timestamp(unit, None));
        out.push(Timestamp(unit, Some("UTC".into())));
        out.push(Duration(unit));
    }
    out.push(Timestamp(TimeUnit::Microsecond, Some("+05:30".into())));
    out.extend([
        Interval(IntervalUnit::YearMonth),
        Interval(IntervalUnit::DayTime),
        Interval(IntervalUnit::MonthDayNano),
        Decimal32(9, 2),
        Decimal64(18, 0),
        Decimal128(38, 10),
        Decimal256(76, -5),
        Decimal128(5, 5),
        Utf8,
        LargeUtf8,
        Utf8View,
        Binary,
        LargeBinary,
        BinaryView,
        FixedSizeBinary(1),
        FixedSizeBinary(3),
        FixedSizeBinary(16),
        FixedSizeBinary(37),
    ]);
    out
}

/// A random flat type, with random parameters where the type has some.
pub fn random_data_type(rng: &mut StdRng) -> DataType {
    use DataType::*;
    let unit =
        *[TimeUnit::Second, TimeUnit::Millisecond, TimeUnit::Microsecond, TimeUnit::Nanosecond].choose(rng).unwrap();
    match rng.random_range(0..36) {
        0 => Null,
        1 => Boolean,
        2 => Int8,
        3 => Int16,
        4 => Int32,
        5 => Int64,
        6 => UInt8,
        7 => UInt16,
        8 => UInt32,
        9 => UInt64,
        10 => Float16,
        11 => Float32,
        12 => Float64,
        13 => Date32,
        14 => Date64,
        15 => Time32(*[TimeUnit::Second, TimeUnit::Millisecond].choose(rng).unwrap()),
        16 => Time64(*[TimeUnit::Microsecond, TimeUnit::Nanosecond].choose(rng).unwrap()),
        17 => {
            let tz: Option<Arc<str>> =
                [None, Some("UTC"), Some("Europe/Paris"), Some("-03:00")].choose(rng).unwrap().map(Arc::from);
            Timestamp(unit, tz)
        }
        18 => Duration(unit),
        19 => Interval(IntervalUnit::YearMonth),
        20 => Interval(IntervalUnit::DayTime),
        21 => Interval(IntervalUnit::MonthDayNano),
        22 => {
            let p = rng.random_range(1..=9);
            Decimal32(p, rng.random_range(0..=p as i8))
        }
        23 => {
            let p = rng.random_range(1..=18);
            Decimal64(p, rng.random_range(-2..=p as i8))
        }
        24 => {
            let p = rng.random_range(1..=38);
            Decimal128(p, rng.random_range(0..=p as i8))
        }
        25 => {
            let p = rng.random_range(1..=76);
            Decimal256(p, rng.random_range(-10..=p.min(70) as i8))
        }
        26 | 27 => Utf8,
        28 => LargeUtf8,
        29 => Utf8View,
        30 | 31 => Binary,
        32 => LargeBinary,
        33 => BinaryView,
        _ => FixedSizeBinary(rng.random_range(1..=40)),
    }
}

/// A random schema of `1..=max_columns` columns named `c0`, `c1`...: random types, random
/// nullability (the null type is always nullable), sometimes field and schema metadata.
pub fn random_schema(rng: &mut StdRng, max_columns: usize) -> SchemaRef {
    let num_columns = rng.random_range(1..=max_columns);
    let fields: Vec<Field> = (0..num_columns)
        .map(|i| {
            let data_type = random_data_type(rng);
            let nullable = matches!(data_type, DataType::Null) || rng.random_bool(0.6);
            let field = Field::new(format!("c{i}"), data_type, nullable);
            if rng.random_bool(0.2) {
                field.with_metadata(HashMap::from([("origin".to_string(), format!("column {i}"))]))
            } else {
                field
            }
        })
        .collect();
    let schema = Schema::new(fields);
    let schema = if rng.random_bool(0.5) {
        schema.with_metadata(HashMap::from([("writer".to_string(), "round trip test".to_string())]))
    } else {
        schema
    };
    Arc::new(schema)
}

/// Limits of the nested type generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NestedLimits {
    /// Levels of nesting below a top-level field (0: flat types only).
    pub max_depth: usize,
    /// Leaves (flat fields and empty structs) of one top-level field, at most: bounds its
    /// number of columns.
    pub max_leaves: usize,
    /// Product of the widths of the lists (counted as 2, about their mean length) and
    /// fixed-size lists along a path, at most: keeps the item count of the deepest fields
    /// near `rows × max_fanout`.
    pub max_fanout: u64,
}

impl Default for NestedLimits {
    fn default() -> Self {
        Self { max_depth: 4, max_leaves: 8, max_fanout: 16 }
    }
}

/// Whether `data_type` is stored in one column of fixed-width values (looseleaf stores a
/// fixed-size list of such values in one column too, so nested paths cannot go into it).
pub fn is_fixed_width(data_type: &DataType) -> bool {
    match data_type {
        DataType::Boolean => true,
        DataType::FixedSizeBinary(n) => *n > 0,
        DataType::FixedSizeList(item, n) => *n > 0 && is_fixed_width(item.data_type()),
        other => other.primitive_width().is_some(),
    }
}

/// A random flat type of fixed width (the items of embeddings).
pub fn random_fixed_width_type(rng: &mut StdRng) -> DataType {
    loop {
        let data_type = random_data_type(rng);
        if is_fixed_width(&data_type) {
            return data_type;
        }
    }
}

/// A random nested type: structs (some without fields), lists, large lists, fixed-size lists
/// (of fixed-width values, of strings, of anything; dimension 0 to 5) and maps with string keys,
/// nested up to `limits.max_depth` levels over the flat types of [`random_data_type`].
pub fn random_nested_type(rng: &mut StdRng, limits: NestedLimits) -> DataType {
    let mut leaves = limits.max_leaves;
    nested_type(rng, limits.max_depth, 1, &mut leaves, limits)
}

/// A random nested field (see [`random_nested_type`]), nullable or not, sometimes with
/// metadata.
pub fn random_nested_field(rng: &mut StdRng, name: &str, limits: NestedLimits) -> Field {
    let mut leaves = limits.max_leaves;
    nested_field(rng, name, limits.max_depth, 1, &mut leaves, limits)
}

fn nested_field(
    rng: &mut StdRng,
    name: &str,
    depth: usize,
    fanout: u64,
    leaves: &mut usize,
    limits: NestedLimits,
) -> Field {
    let data_type = nested_type(rng, depth, fanout, leaves, limits);
    let nullable = matches!(data_type, DataType::Null) || rng.random_bool(0.55);
    let field = Field::new(name, data_type, nullable);
    if rng.random_bool(0.1) {
        field.with_metadata(HashMap::from([("path".to_string(), name.to_string())]))
    } else {
        field
    }
}

fn nested_type(rng: &mut StdRng, depth: usize, fanout: u64, leaves: &mut usize, limits: NestedLimits) -> DataType {
    if depth == 0 || *leaves <= 1 || rng.random_bool(0.2) {
        *leaves = leaves.saturating_sub(1);
        return random_data_type(rng);
    }
    let lists_fit = fanout * 2 <= limits.max_fanout;
    loop {
        match rng.random_range(0..100) {
            0..30 => {
                let num_fields = if rng.random_bool(0.12) { 0 } else { rng.random_range(1..=3) };
                if num_fields == 0 {
                    *leaves = leaves.saturating_sub(1);
                }
                let fields: Vec<Field> = (0..num_fields)
                    .map(|i| nested_field(rng, &format!("f{i}"), depth - 1, fanout, leaves, limits))
                    .collect();
                return DataType::Struct(fields.into());
            }
            30..45 if lists_fit => {
                let name = *["item", "element"].choose(rng).unwrap();
                return DataType::List(Arc::new(nested_field(rng, name, depth - 1, fanout * 2, leaves, limits)));
            }
            45..55 if lists_fit => {
                let name = *["item", "element"].choose(rng).unwrap();
                return DataType::LargeList(Arc::new(nested_field(rng, name, depth - 1, fanout * 2, leaves, limits)));
            }
            55..78 => {
                let mut dimension: u64 = if rng.random_bool(0.1) { 0 } else { rng.random_range(1..=5) };
                while dimension > 1 && fanout * dimension > limits.max_fanout {
                    dimension -= 1;
                }
                let inner = fanout * dimension.max(1);
                let item = match rng.random_range(0..100) {
                    0..35 => {
                        *leaves = leaves.saturating_sub(1);
                        Field::new("item", random_fixed_width_type(rng), rng.random_bool(0.5))
                    }
                    35..50 => {
                        *leaves = leaves.saturating_sub(1);
                        let data_type = [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View, DataType::Binary]
                            .choose(rng)
                            .unwrap()
                            .clone();
                        Field::new("item", data_type, rng.random_bool(0.5))
                    }
                    _ => nested_field(rng, "item", depth - 1, inner, leaves, limits),
                };
                return DataType::FixedSizeList(Arc::new(item), dimension as i32);
            }
            78..100 if lists_fit => {
                *leaves = leaves.saturating_sub(1);
                let key = Field::new(*["key", "keys"].choose(rng).unwrap(), DataType::Utf8, false);
                let name = *["value", "values"].choose(rng).unwrap();
                let value = nested_field(rng, name, depth - 1, fanout * 2, leaves, limits);
                let entries = Field::new("entries", DataType::Struct(vec![key, value].into()), false);
                return DataType::Map(Arc::new(entries), rng.random_bool(0.3));
            }
            _ => {}
        }
    }
}

/// A random schema of `1..=max_columns` nested columns named `c0`, `c1`...
pub fn random_nested_schema(rng: &mut StdRng, max_columns: usize, limits: NestedLimits) -> SchemaRef {
    let num_columns = rng.random_range(1..=max_columns);
    let fields: Vec<Field> = (0..num_columns).map(|i| random_nested_field(rng, &format!("c{i}"), limits)).collect();
    Arc::new(Schema::new(fields))
}
