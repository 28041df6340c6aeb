//! Random flat arrays of any type the writer supports ([`random_array`]), drawn as a
//! [`ColumnGen`] says (a null probability and a [`ValueMode`]: uniformly random bit patterns, a
//! few small values, or one constant), random tables of a schema, and the cutting of a table
//! into input batches of random sizes.
//!
//! These are the property tests' values: any type, coarse modes. The encodings' edge cases
//! (integer extremes and runs, float specials, text) are drawn by [`super::shapes`].

use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::{
    Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType,
};
use arrow_array::{
    ArrayRef, BinaryViewArray, BooleanArray, GenericBinaryArray, GenericStringArray, NullArray, PrimitiveArray,
    RecordBatch, RecordBatchOptions, StringViewArray, make_array,
};
use arrow_buffer::{Buffer, NullBuffer, i256};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, SchemaRef, TimeUnit};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

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

/// A random validity buffer of `len` rows, each row null with probability `null_probability`;
/// `None` when no null was drawn.
pub fn random_nulls(rng: &mut StdRng, len: usize, null_probability: f64) -> Option<NullBuffer> {
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

/// An array of `len` values of `data_type` (any fixed-width type) from their little-endian
/// bytes.
pub fn fixed_width_array(data_type: &DataType, len: usize, bytes: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
    let data = ArrayDataBuilder::new(data_type.clone())
        .len(len)
        .add_buffer(Buffer::from_vec(bytes))
        .nulls(nulls)
        .align_buffers(true)
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
