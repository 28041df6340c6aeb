//! Helpers shared by the integration tests: random flat data of every type the writer supports,
//! writing it to files, reading it back, range readers that record or serve from memory, and an
//! independent parse of a file's page layout.
//!
//! Every test compares what the reader returns with the arrays that were written (or with
//! `arrow_select` applied to them), never with another output of the reader.

// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod alloc;
pub mod reads;

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::types::{
    Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryViewArray, BooleanArray, FixedSizeListArray, GenericBinaryArray, GenericListArray,
    GenericStringArray, MapArray, NullArray, OffsetSizeTrait, PrimitiveArray, RecordBatch, RecordBatchOptions,
    StringViewArray, StructArray, make_array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer, i256};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field, FieldRef, Fields, IntervalUnit, Schema, SchemaRef, TimeUnit};
use bytes::Bytes;
use futures::TryStreamExt;
use futures::future::BoxFuture;
use looseleaf::format::proto::{ColumnMetadata, encoding::Kind};
use looseleaf::format::{ColumnEntry, FileTail, TAIL_LEN, decode_checked};
use looseleaf::io::IoDepth;
use looseleaf::io::{CoalesceOptions, LocalFileReader, RangeReader};
use looseleaf::{ByteCount, FileWriter, FinishedFile, IoOptions, IoStats, ReadBuilder, WriterOptions};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------------
// Runtime

/// One multi-threaded runtime for the synchronous (proptest) tests of a test binary.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
    })
}

/// A non-zero count for the read options (tests pass literals and small computed values).
pub fn nz(n: usize) -> std::num::NonZeroUsize {
    std::num::NonZeroUsize::new(n).expect("a count of at least 1")
}

/// A deterministic random generator.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

// ---------------------------------------------------------------------------------------------
// Types

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

// ---------------------------------------------------------------------------------------------
// Arrays

/// How the values of a column are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueMode {
    /// Uniformly random (all bit patterns for integers and floats, NaNs included).
    Random,
    /// A few small values, repeated (what run-length or dictionary encodings would like).
    Small,
    /// The same value in every row.
    Constant,
}

/// How a column is generated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnGen {
    /// Probability of a null in each row (0 for non-nullable fields; 1 gives an all-null column).
    pub null_probability: f64,
    /// How values are drawn.
    pub mode: ValueMode,
}

impl ColumnGen {
    /// A random generator for a field: null probability among 0, 1 %, 50 % and 100 % (0 if the
    /// field is not nullable), random value mode.
    pub fn random(rng: &mut StdRng, nullable: bool) -> Self {
        let null_probability = if nullable { *[0.0, 0.01, 0.5, 1.0].choose(rng).unwrap() } else { 0.0 };
        let mode = match rng.random_range(0..10) {
            0..=5 => ValueMode::Random,
            6..=8 => ValueMode::Small,
            _ => ValueMode::Constant,
        };
        Self { null_probability, mode }
    }
}

/// A random validity buffer of `len` rows, `None` when no null was drawn.
fn random_nulls(rng: &mut StdRng, len: usize, null_probability: f64) -> Option<NullBuffer> {
    if null_probability <= 0.0 {
        return None;
    }
    let valid: Vec<bool> = (0..len).map(|_| !rng.random_bool(null_probability)).collect();
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}

/// `len` values of `width` bytes each, drawn according to `mode`.
fn random_fixed_bytes(rng: &mut StdRng, len: usize, width: usize, mode: ValueMode) -> Vec<u8> {
    let mut out = vec![0u8; len * width];
    match mode {
        ValueMode::Random => rng.fill(out.as_mut_slice()),
        ValueMode::Small => {
            for value in out.chunks_exact_mut(width.max(1)) {
                value[0] = rng.random_range(0..4);
            }
        }
        ValueMode::Constant => {
            let mut value = vec![0u8; width];
            rng.fill(value.as_mut_slice());
            for chunk in out.chunks_exact_mut(width.max(1)) {
                chunk.copy_from_slice(&value);
            }
        }
    }
    out
}

/// `len` integers in `range`, drawn according to `mode`.
fn random_ints<T>(rng: &mut StdRng, len: usize, range: Range<i128>, mode: ValueMode) -> Vec<T>
where
    T: TryFrom<i128>,
    <T as TryFrom<i128>>::Error: std::fmt::Debug,
{
    let constant = rng.random_range(range.clone());
    (0..len)
        .map(|_| {
            let v = match mode {
                ValueMode::Random => rng.random_range(range.clone()),
                ValueMode::Small => {
                    range.start.max(0) + rng.random_range(0..4i128).min(range.end - 1 - range.start.max(0))
                }
                ValueMode::Constant => constant,
            };
            T::try_from(v).unwrap()
        })
        .collect()
}

/// A random string of roughly `len` bytes, with multi-byte characters.
fn random_string(rng: &mut StdRng, len: usize) -> String {
    const PIECES: &[&str] = &["a", "b", "z", "Q", "0", "7", " ", "-", "é", "ß", "日本", "🦀", "\u{0}", "\n"];
    let mut out = String::with_capacity(len + 4);
    while out.len() < len {
        out.push_str(PIECES.choose(rng).unwrap());
    }
    out
}

/// A random length for a string or binary value: empty, short (inline in a view), longer than
/// 12 bytes, or long.
fn random_len(rng: &mut StdRng) -> usize {
    match rng.random_range(0..100) {
        0..=9 => 0,
        10..=59 => rng.random_range(1..=12),
        60..=94 => rng.random_range(13..=40),
        _ => rng.random_range(41..=300),
    }
}

fn random_bytes(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    rng.fill(out.as_mut_slice());
    // Make sure non-UTF-8 bytes show up in short values too.
    if let Some(first) = out.first_mut()
        && rng.random_bool(0.3)
    {
        *first = 0xff;
    }
    out
}

/// `len` optional values produced by `make`, following `mode`, with nulls from `nulls`.
fn values_with_mode<T: Clone>(
    rng: &mut StdRng,
    len: usize,
    mode: ValueMode,
    nulls: Option<&NullBuffer>,
    mut make: impl FnMut(&mut StdRng) -> T,
) -> Vec<Option<T>> {
    let pool: Vec<T> = match mode {
        ValueMode::Random => vec![],
        ValueMode::Small => (0..4).map(|_| make(rng)).collect(),
        ValueMode::Constant => vec![make(rng)],
    };
    (0..len)
        .map(|i| {
            let value = if pool.is_empty() { make(rng) } else { pool.choose(rng).unwrap().clone() };
            nulls.is_none_or(|n| n.is_valid(i)).then_some(value)
        })
        .collect()
}

fn with_nulls<T: arrow_array::ArrowPrimitiveType>(
    values: Vec<T::Native>,
    nulls: Option<NullBuffer>,
) -> PrimitiveArray<T> {
    PrimitiveArray::<T>::new(values.into(), nulls)
}

/// A random array of `data_type` with `len` rows generated as `column` says.
pub fn random_array(rng: &mut StdRng, data_type: &DataType, len: usize, column: ColumnGen) -> ArrayRef {
    let nulls = random_nulls(rng, len, column.null_probability);
    let mode = column.mode;
    let pow10 = |p: u8| 10i128.pow(p as u32);
    match data_type {
        DataType::Null => Arc::new(NullArray::new(len)),
        DataType::Boolean => {
            let constant = rng.random_bool(0.5);
            let values: Vec<bool> = (0..len)
                .map(|_| match mode {
                    ValueMode::Random => rng.random_bool(0.5),
                    ValueMode::Small => rng.random_bool(0.95),
                    ValueMode::Constant => constant,
                })
                .collect();
            Arc::new(BooleanArray::new(values.into(), nulls))
        }
        DataType::Time32(TimeUnit::Second) => {
            Arc::new(with_nulls::<Time32SecondType>(random_ints(rng, len, 0..86_400, mode), nulls))
        }
        DataType::Time32(TimeUnit::Millisecond) => {
            Arc::new(with_nulls::<Time32MillisecondType>(random_ints(rng, len, 0..86_400_000, mode), nulls))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            Arc::new(with_nulls::<Time64MicrosecondType>(random_ints(rng, len, 0..86_400_000_000, mode), nulls))
        }
        DataType::Time64(TimeUnit::Nanosecond) => {
            Arc::new(with_nulls::<Time64NanosecondType>(random_ints(rng, len, 0..86_400_000_000_000, mode), nulls))
        }
        DataType::Decimal32(p, s) => {
            let max = pow10(*p);
            let values = random_ints(rng, len, -max + 1..max, mode);
            Arc::new(with_nulls::<Decimal32Type>(values, nulls).with_precision_and_scale(*p, *s).unwrap())
        }
        DataType::Decimal64(p, s) => {
            let max = pow10(*p);
            let values = random_ints(rng, len, -max + 1..max, mode);
            Arc::new(with_nulls::<Decimal64Type>(values, nulls).with_precision_and_scale(*p, *s).unwrap())
        }
        DataType::Decimal128(p, s) => {
            let max = pow10(*p);
            let values = random_ints(rng, len, -max + 1..max, mode);
            Arc::new(with_nulls::<Decimal128Type>(values, nulls).with_precision_and_scale(*p, *s).unwrap())
        }
        DataType::Decimal256(p, s) => {
            // value = high * 10^38 + low with |high| < 10^(p - 38) and |low| < 10^38, so
            // |value| <= (10^(p - 38) - 1) * 10^38 + 10^38 - 1 = 10^p - 1.
            let low_max = pow10((*p).min(38));
            let high_max = if *p > 38 { pow10(*p - 38) } else { 1 };
            let low: Vec<i128> = random_ints(rng, len, -low_max + 1..low_max, mode);
            let high: Vec<i128> = random_ints(rng, len, -high_max + 1..high_max, mode);
            let values: Vec<i256> = low
                .iter()
                .zip(&high)
                .map(|(l, h)| {
                    i256::from_i128(*h).wrapping_mul(i256::from_i128(pow10(38))).wrapping_add(i256::from_i128(*l))
                })
                .collect();
            Arc::new(with_nulls::<Decimal256Type>(values, nulls).with_precision_and_scale(*p, *s).unwrap())
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let values = values_with_mode(rng, len, mode, nulls.as_ref(), |rng| {
                let n = random_len(rng);
                random_string(rng, n)
            });
            match data_type {
                DataType::Utf8 => Arc::new(GenericStringArray::<i32>::from(values)),
                DataType::LargeUtf8 => Arc::new(GenericStringArray::<i64>::from(values)),
                _ => Arc::new(StringViewArray::from_iter(values)),
            }
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let values = values_with_mode(rng, len, mode, nulls.as_ref(), |rng| {
                let n = random_len(rng);
                random_bytes(rng, n)
            });
            let refs: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
            match data_type {
                DataType::Binary => Arc::new(GenericBinaryArray::<i32>::from(refs)),
                DataType::LargeBinary => Arc::new(GenericBinaryArray::<i64>::from(refs)),
                _ => Arc::new(BinaryViewArray::from_iter(refs)),
            }
        }
        DataType::FixedSizeBinary(width) => {
            let bytes = random_fixed_bytes(rng, len, *width as usize, mode);
            fixed_width_array(data_type, len, bytes, nulls)
        }
        other => {
            // Integers, floats, dates, timestamps, durations, intervals: any bit pattern is a
            // valid value.
            let width = other.primitive_width().unwrap_or_else(|| panic!("no generator for {other}"));
            let bytes = random_fixed_bytes(rng, len, width, mode);
            fixed_width_array(other, len, bytes, nulls)
        }
    }
}

fn fixed_width_array(data_type: &DataType, len: usize, bytes: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
    let data = ArrayDataBuilder::new(data_type.clone())
        .len(len)
        .add_buffer(Buffer::from_slice_ref(&bytes))
        .nulls(nulls)
        .build()
        .unwrap();
    make_array(data)
}

/// A random table of `num_rows` rows of `schema`, each column with its own null probability
/// and value mode.
pub fn random_table(rng: &mut StdRng, schema: &SchemaRef, num_rows: usize) -> RecordBatch {
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let column = ColumnGen::random(rng, field.is_nullable());
            random_array(rng, field.data_type(), num_rows, column)
        })
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).unwrap()
}

/// Cuts `table` into consecutive slices of random sizes in `0..=max_batch` (mostly non-empty;
/// an empty batch now and then).
pub fn split_randomly(rng: &mut StdRng, table: &RecordBatch, max_batch: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < table.num_rows() {
        let len = if rng.random_bool(0.05) { 0 } else { rng.random_range(1..=max_batch.max(1)) };
        let len = len.min(table.num_rows() - offset);
        out.push(table.slice(offset, len));
        offset += len;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Nested types and arrays

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

/// A random table of `num_rows` rows of a (nested) schema.
pub fn random_nested_table(rng: &mut StdRng, schema: &SchemaRef, num_rows: usize) -> RecordBatch {
    let columns = schema.fields().iter().map(|field| random_nested_array(rng, field, num_rows, None)).collect();
    let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).unwrap()
}

/// A random array of `field`'s type with `len` rows, following Arrow's validity rules: a
/// nullable field has random nulls (none, a few, many, all); a non-nullable one may have nulls
/// only where `parent_nulls` (its struct's, or its fixed-size list's expanded) has them, and
/// sometimes does; list and map items have no parent nulls. Children under null parents hold
/// random values; null lists sometimes span items; list offsets sometimes start past zero; and
/// now and then the array is a slice of a longer one. Built with Arrow's checked constructors.
pub fn random_nested_array(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> ArrayRef {
    if len > 0 && rng.random_bool(0.15) {
        let (before, after) = (rng.random_range(0..=3), rng.random_range(0..=3));
        // The padding rows have valid parents, so a non-nullable field has no nulls there.
        let padded = parent_nulls.map(|nulls| {
            let valid: Vec<bool> =
                (0..before).map(|_| true).chain(nulls.iter()).chain((0..after).map(|_| true)).collect();
            NullBuffer::from(valid)
        });
        let array = nested_array(rng, field, before + len + after, padded.as_ref());
        return array.slice(before, len);
    }
    nested_array(rng, field, len, parent_nulls)
}

fn nested_nulls(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> Option<NullBuffer> {
    if matches!(field.data_type(), DataType::Null) {
        return None;
    }
    if field.is_nullable() {
        let probability = *[0.0, 0.0, 0.05, 0.3, 0.7, 1.0].choose(rng).unwrap();
        return random_nulls(rng, len, probability);
    }
    let parent = parent_nulls.filter(|_| rng.random_bool(0.6))?;
    // Arrow lets a non-nullable child hold nulls where its parent is null.
    let valid: Vec<bool> = (0..len).map(|i| parent.is_valid(i) || rng.random_bool(0.5)).collect();
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}

/// The length of a random list: often empty or short, now and then long; a null list is
/// usually empty but may span items.
fn random_list_len(rng: &mut StdRng, null: bool) -> usize {
    if null && rng.random_bool(0.7) {
        return 0;
    }
    match rng.random_range(0..100) {
        0..30 => 0,
        30..85 => rng.random_range(1..=3),
        85..98 => rng.random_range(4..=8),
        _ => rng.random_range(9..=24),
    }
}

/// Random list offsets for `len` lists (starting past zero now and then) and the number of
/// items they need (with some unused items after the last list now and then).
fn random_list_offsets<O: OffsetSizeTrait>(
    rng: &mut StdRng,
    len: usize,
    nulls: Option<&NullBuffer>,
) -> (OffsetBuffer<O>, usize) {
    let mut offset = if rng.random_bool(0.2) { rng.random_range(1..=3) } else { 0 };
    let mut offsets = Vec::with_capacity(len + 1);
    offsets.push(O::usize_as(offset));
    for i in 0..len {
        offset += random_list_len(rng, nulls.is_some_and(|n| n.is_null(i)));
        offsets.push(O::usize_as(offset));
    }
    let total = offset + if rng.random_bool(0.2) { rng.random_range(1..=3) } else { 0 };
    (OffsetBuffer::new(ScalarBuffer::from(offsets)), total)
}

fn nested_array(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> ArrayRef {
    let nulls = nested_nulls(rng, field, len, parent_nulls);
    match field.data_type() {
        DataType::Struct(fields) => {
            let children = fields.iter().map(|child| random_nested_array(rng, child, len, nulls.as_ref())).collect();
            Arc::new(StructArray::try_new_with_length(fields.clone(), children, nulls, len).unwrap())
        }
        DataType::List(item) => {
            let (offsets, total) = random_list_offsets::<i32>(rng, len, nulls.as_ref());
            let values = random_nested_array(rng, item, total, None);
            Arc::new(GenericListArray::<i32>::try_new(item.clone(), offsets, values, nulls).unwrap())
        }
        DataType::LargeList(item) => {
            let (offsets, total) = random_list_offsets::<i64>(rng, len, nulls.as_ref());
            let values = random_nested_array(rng, item, total, None);
            Arc::new(GenericListArray::<i64>::try_new(item.clone(), offsets, values, nulls).unwrap())
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(pair) = entries.data_type() else {
                panic!("map entries of type {}", entries.data_type())
            };
            let (offsets, total) = random_list_offsets::<i32>(rng, len, nulls.as_ref());
            let keys = random_nested_array(rng, &pair[0], total, None);
            let values = random_nested_array(rng, &pair[1], total, None);
            let entries_array = StructArray::try_new(pair.clone(), vec![keys, values], None).unwrap();
            Arc::new(MapArray::try_new(entries.clone(), offsets, entries_array, nulls, *sorted).unwrap())
        }
        DataType::FixedSizeList(item, dimension) => {
            let d = *dimension as usize;
            let expanded = nulls.as_ref().map(|n| n.expand(d));
            let values = random_nested_array(rng, item, len * d, expanded.as_ref());
            Arc::new(FixedSizeListArray::try_new_with_length(item.clone(), *dimension, values, nulls, len).unwrap())
        }
        data_type => {
            let mode = ColumnGen::random(rng, false).mode;
            let array = random_array(rng, data_type, len, ColumnGen { null_probability: 0.0, mode });
            match nulls {
                Some(nulls) => make_array(array.to_data().into_builder().nulls(Some(nulls)).build().unwrap()),
                None => array,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Nested projections, computed from the original arrays

/// What a projection keeps of a field: all of it, or some children (by index), each narrowed.
#[derive(Debug, Clone, PartialEq)]
pub enum Narrowing {
    /// The whole field.
    All,
    /// Some children, in the file's order.
    Children(std::collections::BTreeMap<usize, Narrowing>),
}

impl Narrowing {
    /// Adds the child chain of one path (an empty chain selects the whole field).
    pub fn merge(&mut self, chain: &[usize]) {
        let Narrowing::Children(children) = self else { return };
        match chain.split_first() {
            None => *self = Narrowing::All,
            Some((first, rest)) => {
                children.entry(*first).or_insert_with(|| Narrowing::Children(Default::default())).merge(rest)
            }
        }
    }
}

/// The dotted paths into `field` a projection may name (through struct children and the items
/// of lists, fixed-size lists and maps, never into values stored in one column), each with the
/// chain of child indices it selects. `name` is the field's own path. Items are named (`l.item.x`)
/// or skipped (`l.x`) at random.
pub fn nested_paths(rng: &mut StdRng, field: &Field, name: &str) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    collect_paths(rng, field, name, &[], &mut out);
    out
}

fn collect_paths(rng: &mut StdRng, field: &Field, path: &str, chain: &[usize], out: &mut Vec<(String, Vec<usize>)>) {
    let data_type = field.data_type();
    if is_fixed_width(data_type) {
        return;
    }
    let children: Vec<FieldRef> = match data_type {
        DataType::Struct(fields) => fields.iter().cloned().collect(),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::Map(item, _) => {
            vec![item.clone()]
        }
        _ => return,
    };
    let through_items = !matches!(data_type, DataType::Struct(_));
    for (index, child) in children.iter().enumerate() {
        let mut child_chain = chain.to_vec();
        child_chain.push(index);
        let named = format!("{path}.{}", child.name());
        out.push((named.clone(), child_chain.clone()));
        // `l.x` is `l.item.x`: the item's own name may be skipped.
        let child_path = if through_items && rng.random_bool(0.5) { path.to_string() } else { named };
        collect_paths(rng, child, &child_path, &child_chain, out);
    }
}

/// `array` (of `field`) narrowed to `narrowing`: what a projection of those paths returns,
/// built from the original array. Maps are returned whole (their entries are always a key and
/// a value).
pub fn narrow(field: &FieldRef, array: &ArrayRef, narrowing: &Narrowing) -> (FieldRef, ArrayRef) {
    let Narrowing::Children(chosen) = narrowing else { return (field.clone(), array.clone()) };
    let rebuild = |data_type: DataType| {
        Arc::new(Field::new(field.name(), data_type, field.is_nullable()).with_metadata(field.metadata().clone()))
    };
    match field.data_type() {
        DataType::Struct(fields) => {
            let array = array.as_any().downcast_ref::<StructArray>().unwrap();
            let (children, columns): (Vec<FieldRef>, Vec<ArrayRef>) =
                chosen.iter().map(|(i, sub)| narrow(&fields[*i], array.column(*i), sub)).unzip();
            let fields = Fields::from(children);
            let out =
                StructArray::try_new_with_length(fields.clone(), columns, array.nulls().cloned(), array.len()).unwrap();
            (rebuild(DataType::Struct(fields)), Arc::new(out))
        }
        DataType::List(item) => {
            let array = array.as_any().downcast_ref::<GenericListArray<i32>>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out =
                GenericListArray::<i32>::try_new(item.clone(), array.offsets().clone(), values, array.nulls().cloned())
                    .unwrap();
            (rebuild(DataType::List(item)), Arc::new(out))
        }
        DataType::LargeList(item) => {
            let array = array.as_any().downcast_ref::<GenericListArray<i64>>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out =
                GenericListArray::<i64>::try_new(item.clone(), array.offsets().clone(), values, array.nulls().cloned())
                    .unwrap();
            (rebuild(DataType::LargeList(item)), Arc::new(out))
        }
        DataType::FixedSizeList(item, size) => {
            let array = array.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out = FixedSizeListArray::try_new_with_length(
                item.clone(),
                *size,
                values,
                array.nulls().cloned(),
                array.len(),
            )
            .unwrap();
            (rebuild(DataType::FixedSizeList(item, *size)), Arc::new(out))
        }
        DataType::Map(..) => (field.clone(), array.clone()),
        other => panic!("cannot narrow a {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing and reading

/// Writes `batches` to `path` with the given page size.
pub async fn write_file(path: &Path, schema: &SchemaRef, batches: &[RecordBatch], page_size: u64) -> FinishedFile {
    write_file_with(path, schema, batches, WriterOptions::default().with_page_size(page_size)).await
}

/// Writes `batches` with plain values only, for tests that reason about the byte layout.
pub async fn write_file_plain(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    page_size: u64,
) -> FinishedFile {
    let options = WriterOptions::default()
        .with_page_size(page_size)
        .with_default_encoding_policy(looseleaf::EncodingPolicy::plain_only());
    write_file_with(path, schema, batches, options).await
}

/// Writes `batches` with `options`.
pub async fn write_file_with(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) -> FinishedFile {
    let mut writer = FileWriter::create_path(path, schema.clone(), options).await.unwrap();
    for batch in batches {
        writer.write(batch).await.unwrap();
    }
    writer.finish().await.unwrap()
}

/// The output of a read: its schema, its batches and its I/O counters at the end.
#[derive(Debug)]
pub struct ReadOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub stats: IoStats,
}

impl ReadOutput {
    /// The batches concatenated.
    pub fn concat(&self) -> RecordBatch {
        arrow_select::concat::concat_batches(&self.schema, &self.batches).unwrap()
    }
}

/// Runs a read to the end.
pub async fn read_to_end(read: ReadBuilder) -> looseleaf::Result<ReadOutput> {
    within_deadline("a read to the end", HANG, async {
        let mut stream = read.stream().await?;
        let schema = stream.schema().clone();
        let batches: Vec<RecordBatch> = (&mut stream).try_collect().await?;
        Ok(ReadOutput { schema, batches, stats: stream.io_stats() })
    })
    .await
}

/// Longer than any read of a test takes on a loaded 2-core machine, by far: a read still
/// running after it hung.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(120);

/// `future`'s output, or a panic naming `what` if `deadline` passes first.
///
/// The deadline is looked at *before* the future is polled again: a read that lost a wake-up
/// moves only when the timer wakes its thread, and `tokio::time::timeout` (which polls the
/// future first) would let it finish late and pass. Needs a runtime with a time driver.
pub async fn within_deadline<T>(what: &str, deadline: std::time::Duration, future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut timer = std::pin::pin!(tokio::time::sleep(deadline));
    std::future::poll_fn(|cx| {
        if timer.as_mut().poll(cx).is_ready() {
            panic!("{what}: still running after {deadline:?}, hung");
        }
        future.as_mut().poll(cx)
    })
    .await
}

/// Checks that `batches` are all `batch_size` rows except the last, which holds the rest, and
/// that they hold `total` rows.
pub fn assert_batch_sizes(batches: &[RecordBatch], batch_size: usize, total: usize, what: &str) {
    let sizes: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
    let expected_count = total.div_ceil(batch_size.max(1));
    assert_eq!(
        sizes.len(),
        expected_count,
        "{what}: batch sizes {sizes:?} for {total} rows in batches of {batch_size}"
    );
    for (i, size) in sizes.iter().enumerate() {
        let expected = if i + 1 == expected_count { total - i * batch_size } else { batch_size };
        assert_eq!(*size, expected, "{what}: batch {i} of {sizes:?} (batch size {batch_size}, {total} rows)");
    }
}

/// Compares a batch read back with the expected one, naming the first differing column and row.
pub fn assert_batches_equal(actual: &RecordBatch, expected: &RecordBatch, what: &str) {
    assert_eq!(actual.schema(), expected.schema(), "{what}: schemas differ");
    assert_eq!(actual.num_rows(), expected.num_rows(), "{what}: row counts differ");
    for (i, field) in expected.schema().fields().iter().enumerate() {
        assert_arrays_equal(
            actual.column(i),
            expected.column(i),
            &format!("{what}, column {:?} ({})", field.name(), field.data_type()),
        );
    }
}

/// Compares two arrays, naming the first differing row.
pub fn assert_arrays_equal(actual: &ArrayRef, expected: &ArrayRef, what: &str) {
    if actual.as_ref() == expected.as_ref() {
        return;
    }
    assert_eq!(actual.data_type(), expected.data_type(), "{what}: types differ");
    assert_eq!(actual.len(), expected.len(), "{what}: lengths differ");
    let row = (0..expected.len())
        .find(|i| actual.slice(*i, 1).as_ref() != expected.slice(*i, 1).as_ref())
        .unwrap_or(usize::MAX);
    if row == usize::MAX {
        panic!("{what}: arrays differ but no single row does (actual {actual:?}, expected {expected:?})");
    }
    panic!("{what}: row {row} differs: got {:?}, expected {:?}", actual.slice(row, 1), expected.slice(row, 1));
}

/// A random I/O configuration: the storage defaults, an I/O depth of one, a budget of one byte
/// (every read goes through the bypass), tiny split reads, or wide coalescing.
pub fn random_io(rng: &mut StdRng) -> Option<IoOptions> {
    let local = IoOptions::LOCAL;
    match rng.random_range(0..6) {
        0 => None,
        1 => Some(IoOptions { depth: IoDepth::Fixed(nz(1)), ..local }),
        2 => Some(IoOptions { depth: IoDepth::Fixed(nz(1)), buffer: ByteCount(1), ..local }),
        3 => Some(IoOptions { depth: IoDepth::Fixed(nz(4)), buffer: ByteCount(1), ..local }),
        4 => Some(IoOptions {
            depth: IoDepth::Fixed(nz(3)),
            buffer: ByteCount(4096),
            coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(rng.random_range(16..=200)) },
            ..local
        }),
        _ => Some(IoOptions {
            coalesce: CoalesceOptions { gap: ByteCount(1 << 20), max_read: ByteCount(1 << 30) },
            ..local
        }),
    }
}

/// Applies random I/O options and decode parallelism to a read.
pub fn with_random_settings(rng: &mut StdRng, read: ReadBuilder) -> ReadBuilder {
    let read = match random_io(rng) {
        Some(io) => read.with_io_options(io),
        None => read,
    };
    match rng.random_range(0..3) {
        0 => read,
        n => read.with_decode_parallelism(nz(n)),
    }
}

// ---------------------------------------------------------------------------------------------
// Range readers

/// A [`RangeReader`] over bytes in memory.
#[derive(Debug, Clone)]
pub struct MemoryReader {
    pub data: Bytes,
    pub location: String,
}

impl MemoryReader {
    pub fn new(data: impl Into<Bytes>, location: impl Into<String>) -> Self {
        Self { data: data.into(), location: location.into() }
    }
}

impl RangeReader for MemoryReader {
    fn location(&self) -> &str {
        &self.location
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        Box::pin(async move {
            if range.start > range.end || range.end > self.data.len() as u64 {
                return Err(looseleaf::Error::corrupt(format!(
                    "bytes {range:?} asked of a {}-byte file",
                    self.data.len()
                ))
                .with_location(&self.location));
            }
            Ok(self.data.slice(range.start as usize..range.end as usize))
        })
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        Box::pin(async move {
            let size = self.data.len();
            let start = size.saturating_sub(len as usize);
            Ok((self.data.slice(start..), size as u64))
        })
    }
}

/// A [`RangeReader`] that logs every `get_range` call, in the order they were made, before
/// passing it on.
#[derive(Debug)]
pub struct RecordingReader {
    inner: Arc<dyn RangeReader>,
    log: Mutex<Vec<Range<u64>>>,
}

impl RecordingReader {
    pub fn new(inner: Arc<dyn RangeReader>) -> Arc<Self> {
        Arc::new(Self { inner, log: Mutex::new(Vec::new()) })
    }

    /// Wraps a local file.
    pub fn open_path(path: &Path) -> Arc<Self> {
        Self::new(Arc::new(LocalFileReader::open(path).unwrap()))
    }

    /// The reads so far, in call order.
    pub fn reads(&self) -> Vec<Range<u64>> {
        self.log.lock().unwrap().clone()
    }

    /// Forgets the reads so far.
    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

impl RangeReader for RecordingReader {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        self.log.lock().unwrap().push(range.clone());
        self.inner.get_range(range)
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        self.inner.get_suffix(len)
    }

    fn io_defaults(&self) -> IoOptions {
        self.inner.io_defaults()
    }
}

/// A [`RangeReader`] whose reads each take `delay` (a storage with latency), so that the order
/// in which a read's requests are issued does not depend on how fast the machine is.
#[derive(Debug)]
pub struct SlowReader {
    inner: Arc<dyn RangeReader>,
    delay: std::time::Duration,
}

impl SlowReader {
    pub fn new(inner: Arc<dyn RangeReader>, delay: std::time::Duration) -> Arc<Self> {
        Arc::new(Self { inner, delay })
    }
}

impl RangeReader for SlowReader {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.get_range(range).await
        })
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        self.inner.get_suffix(len)
    }

    fn io_defaults(&self) -> IoOptions {
        self.inner.io_defaults()
    }
}

/// Removes each of `planned` from `recorded` (a multiset difference) and returns what is left;
/// panics if a planned read was not made.
pub fn subtract_reads(recorded: &[Range<u64>], planned: &[Range<u64>], what: &str) -> Vec<Range<u64>> {
    let mut counts: HashMap<(u64, u64), i64> = HashMap::new();
    for r in recorded {
        *counts.entry((r.start, r.end)).or_default() += 1;
    }
    for r in planned {
        let count = counts.entry((r.start, r.end)).or_default();
        *count -= 1;
        assert!(*count >= 0, "{what}: the plan has read {r:?}, which the read did not make (or made fewer times)");
    }
    let mut left = Vec::new();
    for r in recorded {
        let count = counts.get_mut(&(r.start, r.end)).unwrap();
        if *count > 0 {
            *count -= 1;
            left.push(r.clone());
        }
    }
    left
}

// ---------------------------------------------------------------------------------------------
// File layout, parsed from the bytes with the format module alone (no reader involved)

/// One page of a column, where its buffers are.
#[derive(Debug, Clone)]
pub struct PageLayout {
    /// The page's first row within its column.
    pub first_row: u64,
    /// Number of rows.
    pub num_rows: u64,
    /// Byte ranges of its buffers.
    pub buffers: Vec<Range<u64>>,
    /// Byte ranges of the data buffers of variable-width encodings.
    pub data_buffers: Vec<Range<u64>>,
    /// Byte ranges of the offsets buffers of list offsets encodings (pages of list columns).
    pub list_offsets: Vec<Range<u64>>,
    /// For pages of list columns, the number of items their lists hold.
    pub num_items: u64,
}

/// Where everything of a file is.
#[derive(Debug, Clone)]
pub struct FileLayout {
    pub tail: FileTail,
    /// Per column, its metadata block.
    pub column_blocks: Vec<Range<u64>>,
    /// Per column, its pages.
    pub columns: Vec<Vec<PageLayout>>,
}

impl FileLayout {
    /// Parses the layout of a whole file.
    pub fn parse(bytes: &[u8]) -> Self {
        let size = bytes.len() as u64;
        let tail = FileTail::parse(&bytes[(size - TAIL_LEN) as usize..], size).unwrap();
        let mut column_blocks = Vec::new();
        let mut columns = Vec::new();
        for column in 0..tail.num_columns {
            let range = tail.column_entry_range(column);
            let entry =
                ColumnEntry::parse(&bytes[range.start as usize..range.end as usize], tail.table_offset).unwrap();
            let block = &bytes[entry.offset as usize..(entry.offset + entry.length) as usize];
            let metadata: ColumnMetadata = decode_checked(block, entry.crc, "column metadata").unwrap();
            let mut first_row = 0;
            let pages = metadata
                .pages
                .iter()
                .map(|page| {
                    let buffers: Vec<Range<u64>> = page.buffers.iter().map(|b| b.offset..b.offset + b.size).collect();
                    let (mut data_buffers, mut list_offsets) = (Vec::new(), Vec::new());
                    collect_data_buffers(page.encoding.as_ref(), &buffers, &mut data_buffers, &mut list_offsets);
                    let layout = PageLayout {
                        first_row,
                        num_rows: page.num_rows,
                        buffers,
                        data_buffers,
                        list_offsets,
                        num_items: page.num_items,
                    };
                    first_row += page.num_rows;
                    layout
                })
                .collect();
            column_blocks.push(entry.range());
            columns.push(pages);
        }
        Self { tail, column_blocks, columns }
    }

    /// Start of the metadata region (the first column metadata block, or the table if there
    /// are no columns).
    pub fn metadata_start(&self) -> u64 {
        self.column_blocks.iter().map(|r| r.start).min().unwrap_or(self.tail.table_offset).min(self.tail.table_offset)
    }

    /// The (column, page index) whose buffers contain `range`, if any.
    pub fn page_of(&self, range: &Range<u64>) -> Option<(u32, usize)> {
        for (column, pages) in self.columns.iter().enumerate() {
            for (index, page) in pages.iter().enumerate() {
                let (Some(start), Some(end)) =
                    (page.buffers.iter().map(|b| b.start).min(), page.buffers.iter().map(|b| b.end).max())
                else {
                    continue;
                };
                if range.start >= start && range.end <= end {
                    return Some((column as u32, index));
                }
            }
        }
        None
    }

    /// Total size of every page buffer of `columns`.
    pub fn buffer_bytes(&self, columns: &[u32]) -> u64 {
        columns.iter().flat_map(|c| &self.columns[*c as usize]).flat_map(|p| &p.buffers).map(|b| b.end - b.start).sum()
    }
}

fn collect_data_buffers(
    encoding: Option<&looseleaf::format::proto::Encoding>,
    buffers: &[Range<u64>],
    data: &mut Vec<Range<u64>>,
    list_offsets: &mut Vec<Range<u64>>,
) {
    match encoding.and_then(|e| e.kind.as_ref()) {
        Some(Kind::Binary(binary)) => data.push(buffers[binary.data_buffer as usize].clone()),
        Some(Kind::ListOffsets(offsets)) => list_offsets.push(buffers[offsets.buffer as usize].clone()),
        Some(Kind::Nullable(nullable)) => collect_data_buffers(nullable.values.as_deref(), buffers, data, list_offsets),
        Some(Kind::FixedSizeList(list)) => collect_data_buffers(list.values.as_deref(), buffers, data, list_offsets),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Editing metadata (hostile files with valid checksums)

/// The metadata of every column of a file, parsed with the format module alone.
pub fn column_metadata(bytes: &[u8]) -> Vec<ColumnMetadata> {
    let size = bytes.len() as u64;
    let tail = FileTail::parse(&bytes[(size - TAIL_LEN) as usize..], size).unwrap();
    (0..tail.num_columns)
        .map(|column| {
            let range = tail.column_entry_range(column);
            let entry =
                ColumnEntry::parse(&bytes[range.start as usize..range.end as usize], tail.table_offset).unwrap();
            decode_checked(&bytes[entry.offset as usize..(entry.offset + entry.length) as usize], entry.crc, "column")
                .unwrap()
        })
        .collect()
}

/// `bytes` (a finished file) with the metadata of each column passed through `edit` (given the
/// column number), re-encoded with valid checksums: the metadata region (column blocks, column
/// table, footer, tail) is rebuilt after the unchanged page data, so an edit may change the
/// blocks' lengths. The result reaches the readers' parsers as a well-formed file whose pages
/// say what `edit` made them say.
pub fn rewrite_metadata(bytes: &[u8], edit: impl FnMut(u32, &mut ColumnMetadata)) -> Vec<u8> {
    rewrite_file(bytes, |_| {}, edit)
}

/// [`rewrite_metadata`], with the footer passed through `edit_footer` too (its checksum in the
/// tail recomputed).
pub fn rewrite_file(
    bytes: &[u8],
    edit_footer: impl FnOnce(&mut looseleaf::format::proto::Footer),
    mut edit: impl FnMut(u32, &mut ColumnMetadata),
) -> Vec<u8> {
    let layout = FileLayout::parse(bytes);
    let tail = layout.tail;
    let footer = &bytes[tail.footer_range().start as usize..tail.footer_range().end as usize];
    let mut footer: looseleaf::format::proto::Footer = decode_checked(footer, tail.footer_crc, "footer").unwrap();
    edit_footer(&mut footer);
    let footer = prost::Message::encode_to_vec(&footer);
    let mut out = bytes[..layout.metadata_start() as usize].to_vec();
    let mut entries = Vec::new();
    for (column, mut metadata) in column_metadata(bytes).into_iter().enumerate() {
        edit(column as u32, &mut metadata);
        let block = prost::Message::encode_to_vec(&metadata);
        entries.push(ColumnEntry {
            offset: out.len() as u64,
            length: block.len() as u64,
            crc: crc32fast::hash(&block),
        });
        out.extend_from_slice(&block);
    }
    let table_offset = out.len() as u64;
    for entry in &entries {
        out.extend_from_slice(&entry.to_bytes());
    }
    let footer_offset = out.len() as u64;
    out.extend_from_slice(&footer);
    let tail = FileTail {
        footer_offset,
        footer_length: footer.len() as u32,
        footer_crc: crc32fast::hash(&footer),
        table_offset,
        ..tail
    };
    out.extend_from_slice(&tail.to_bytes());
    out
}

/// Names of the entries of `dir`, waiting up to five seconds for them to become `expected`
/// (the local store deletes an abandoned upload's staging file on a background thread).
pub async fn wait_for_entries(dir: &Path, expected: &[&str]) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        if names == expected || tokio::time::Instant::now() > deadline {
            return names;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Drops `path` from the page cache where the system allows it (not on tmpfs, say), so that
/// the next read of it is cold.
pub fn evict_from_page_cache(path: &std::path::Path) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: a valid descriptor; the advice changes no memory of this process.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}
