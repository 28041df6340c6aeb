//! Values drawn in *shapes*: the patterns each encoding is built for, and its edge cases.
//! Integers ([`IntShape`]: extremes, values near the type's bounds, sorted, runs...), floats
//! ([`FloatShape`]: NaN payloads, signed zeros, infinities, normal values, decimals), strings
//! and binaries ([`BytesShape`]: text, few distinct values, every byte value, long values),
//! booleans, and validity patterns ([`random_validity`]: none, sparse, dense, all, a block
//! spanning pages). [`shaped_array`] draws any flat type in one of its shapes.
//!
//! Values are built from their bits (integers from `i128`, floats from `u64` bit patterns), so
//! that a shape reaches every width of its type.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, LargeBinaryArray, LargeStringArray, StringArray,
    StringViewArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, RngCore};

use super::arrays::{ColumnGen, ValueMode, fixed_width_array, random_array};

/// Types stored as integers (the integer encodings apply).
pub fn int_types() -> Vec<DataType> {
    use DataType::*;
    vec![
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Date32,
        Date64,
        Time32(TimeUnit::Millisecond),
        Time64(TimeUnit::Nanosecond),
        Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Duration(TimeUnit::Second),
        Interval(IntervalUnit::YearMonth),
        Decimal32(9, 2),
        Decimal64(18, 3),
        Decimal128(38, 5),
    ]
}

/// Width in bytes and signedness of an integer type.
pub fn int_layout(data_type: &DataType) -> (usize, bool) {
    let width = data_type.primitive_width().unwrap();
    let signed = !matches!(data_type, DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64);
    (width, signed)
}

/// Smallest and largest value of an integer type.
pub fn int_bounds(data_type: &DataType) -> (i128, i128) {
    let (width, signed) = int_layout(data_type);
    let bits = width as u32 * 8;
    match (bits, signed) {
        (128, _) => (i128::MIN, i128::MAX),
        (_, true) => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        (_, false) => (0, (1i128 << bits) - 1),
    }
}

/// How integer values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntShape {
    /// Uniform over the type.
    Random,
    /// The type's extremes (and random values): the widest bit width.
    Extremes,
    /// A range of 200 somewhere in the type.
    Small,
    /// Within 1000 of the smallest value (most negative for signed types).
    NearMin,
    /// Within 1000 of the largest value (`u64::MAX`, `i128::MAX`...).
    NearMax,
    /// Non-decreasing, small steps (duplicates included).
    Sorted,
    /// Non-decreasing across the whole type, extremes included.
    SortedWide,
    /// Non-increasing.
    Reverse,
    /// Runs of up to 300 equal values.
    Runs,
    /// One value.
    Constant,
}

/// Every [`IntShape`].
pub const INT_SHAPES: [IntShape; 10] = [
    IntShape::Random,
    IntShape::Extremes,
    IntShape::Small,
    IntShape::NearMin,
    IntShape::NearMax,
    IntShape::Sorted,
    IntShape::SortedWide,
    IntShape::Reverse,
    IntShape::Runs,
    IntShape::Constant,
];

/// `len` integers of `shape` between `lo` and `hi` inclusive (a type's [`int_bounds`], or
/// narrower).
pub fn int_values(rng: &mut StdRng, len: usize, shape: IntShape, (lo, hi): (i128, i128)) -> Vec<i128> {
    let any = |rng: &mut StdRng| {
        if lo == i128::MIN && hi == i128::MAX { rng.random::<i128>() } else { rng.random_range(lo..=hi) }
    };
    let near = |rng: &mut StdRng, from: i128, to: i128| {
        let from = from.clamp(lo, hi);
        rng.random_range(from..=to.clamp(from, hi))
    };
    match shape {
        IntShape::Random => (0..len).map(|_| any(rng)).collect(),
        IntShape::Extremes => {
            let mut out: Vec<i128> = (0..len)
                .map(|i| match i % 4 {
                    0 => lo,
                    1 => hi,
                    2 => *[lo + 1, hi - 1, 0.clamp(lo, hi), (-1).clamp(lo, hi)].choose(rng).unwrap(),
                    _ => any(rng),
                })
                .collect();
            out.shuffle(rng);
            out
        }
        IntShape::Small => {
            let base = near(rng, lo, hi.saturating_sub(200));
            (0..len).map(|_| base + rng.random_range(0..200)).collect()
        }
        IntShape::NearMin => (0..len).map(|_| near(rng, lo, lo.saturating_add(1000))).collect(),
        IntShape::NearMax => (0..len).map(|_| near(rng, hi.saturating_sub(1000), hi)).collect(),
        IntShape::Sorted => {
            let mut value = near(rng, lo, hi.saturating_sub(6 * len as i128));
            (0..len)
                .map(|_| {
                    value = value.saturating_add(rng.random_range(0..=5)).min(hi);
                    value
                })
                .collect()
        }
        IntShape::SortedWide => {
            let mut out: Vec<i128> = (0..len).map(|_| any(rng)).collect();
            if len >= 2 {
                out[0] = lo;
                out[1] = hi;
            }
            out.sort_unstable();
            out
        }
        IntShape::Reverse => {
            let mut out = int_values(rng, len, IntShape::Sorted, (lo, hi));
            out.reverse();
            out
        }
        IntShape::Runs => {
            let mut out = Vec::with_capacity(len);
            while out.len() < len {
                let value = any(rng);
                let run = rng.random_range(1..=300).min(len - out.len());
                out.extend(std::iter::repeat_n(value, run));
            }
            out
        }
        IntShape::Constant => vec![any(rng); len],
    }
}

/// An array of an integer type holding `values` (truncated to the type's width).
pub fn int_array(data_type: &DataType, values: &[i128], nulls: Option<NullBuffer>) -> ArrayRef {
    let (width, _) = int_layout(data_type);
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()[..width].to_vec()).collect();
    fixed_width_array(data_type, values.len(), bytes, nulls)
}

/// Null patterns: none, sparse, dense, all, or a block of nulls spanning whole pages.
pub fn random_validity(rng: &mut StdRng, len: usize) -> Option<NullBuffer> {
    let valid: Vec<bool> = match rng.random_range(0..6) {
        0 | 1 => return None,
        2 => (0..len).map(|_| !rng.random_bool(0.02)).collect(),
        3 => (0..len).map(|_| !rng.random_bool(0.6)).collect(),
        4 => vec![false; len],
        _ => (0..len).map(|i| !(len / 4..len * 3 / 4).contains(&i) && !rng.random_bool(0.1)).collect(),
    };
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}

/// Bit patterns of special floats of `width` bytes: NaNs (quiet, signalling, negative), both
/// zeros, both infinities, the smallest subnormal, the largest finite value, one.
pub fn special_floats(width: usize) -> Vec<u64> {
    match width {
        2 => vec![0x7e00, 0x7c01, 0xfe00, 0x8000, 0, 0x7c00, 0xfc00, 1, 0x7bff, 0x3c00],
        4 => vec![
            0x7fc0_0000,
            0x7f80_0001,
            0xffc0_0000,
            0x8000_0000,
            0,
            0x7f80_0000,
            0xff80_0000,
            1,
            0x7f7f_ffff,
            0x3f80_0000,
        ],
        _ => vec![
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            0xfff8_0000_0000_0000,
            0x8000_0000_0000_0000,
            0,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x7fef_ffff_ffff_ffff,
            0x3ff0_0000_0000_0000,
        ],
    }
}

/// How float values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatShape {
    /// Any bit pattern.
    RandomBits,
    /// Special values mixed with random ones.
    Specials,
    /// Runs of special values.
    Runs,
    /// One special value (NaN, -0.0...).
    Constant,
    /// Standard normal values (embeddings), with a few random bit patterns among them.
    Normal,
    /// Decimals (prices with 0 to 3 digits after the point), with a few specials among them.
    Decimals,
}

/// A float array of `data_type` (16, 32 or 64 bits) of `len` values of `shape`.
pub fn float_array(
    rng: &mut StdRng,
    data_type: &DataType,
    len: usize,
    shape: FloatShape,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let width = data_type.primitive_width().unwrap();
    let specials = special_floats(width);
    let constant = *specials.choose(rng).unwrap();
    let mut bits: Vec<u64> = Vec::with_capacity(len);
    while bits.len() < len {
        match shape {
            FloatShape::RandomBits => bits.push(rng.random()),
            FloatShape::Specials => {
                bits.push(if rng.random_bool(0.5) { *specials.choose(rng).unwrap() } else { rng.random() })
            }
            FloatShape::Runs => {
                let value = *specials.choose(rng).unwrap();
                bits.extend(std::iter::repeat_n(value, rng.random_range(1..=200)));
            }
            FloatShape::Constant => bits.push(constant),
            FloatShape::Normal if rng.random_bool(0.002) => bits.push(rng.random()),
            FloatShape::Decimals if rng.random_bool(0.01) => bits.push(*specials.choose(rng).unwrap()),
            FloatShape::Decimals => {
                let digits = rng.random_range(0..=3);
                let x = rng.random_range(-100_000i64..1_000_000) as f64 / 10f64.powi(digits);
                bits.push(match width {
                    2 => half::f16::from_f64(x).to_bits() as u64,
                    4 => (x as f32).to_bits() as u64,
                    _ => x.to_bits(),
                });
            }
            FloatShape::Normal => {
                // Box-Muller.
                let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
                let x = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                bits.push(match width {
                    2 => half::f16::from_f64(x).to_bits() as u64,
                    4 => (x as f32).to_bits() as u64,
                    _ => x.to_bits(),
                });
            }
        }
    }
    bits.truncate(len);
    let bytes = bits.iter().flat_map(|b| b.to_le_bytes()[..width].to_vec()).collect();
    fixed_width_array(data_type, len, bytes, nulls)
}

/// The words of [`text`]: short and long, ASCII and multi-byte, and the empty word.
pub const WORDS: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "looseleaf",
    "column",
    "page",
    "encoding",
    "packing",
    "dictionary",
    "string",
    "symbol",
    "table",
    "value",
    "été",
    "日本",
    "🦀",
    "naïve",
    "",
];

/// Text of at least `len` bytes made of common words (what FSST compresses well).
pub fn text(rng: &mut StdRng, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(WORDS.choose(rng).unwrap());
        out.push(' ');
    }
    out
}

/// How string and binary values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesShape {
    /// Random lengths and contents (non-UTF-8 bytes for binaries).
    Random,
    /// A handful of distinct values.
    FewDistinct,
    /// Text, compressible.
    Text,
    /// Mostly empty values.
    Empty,
    /// Text with a few values longer than `long` bytes.
    Long(usize),
    /// Text, and values holding every byte value (every character below 128 and some above
    /// for strings): FSST escapes.
    AllBytes,
    /// Runs of equal values.
    Runs,
    /// One value.
    Constant,
}

/// `len` string or binary values of `shape`; valid UTF-8 if `utf8`.
pub fn bytes_values(rng: &mut StdRng, len: usize, shape: BytesShape, utf8: bool) -> Vec<Vec<u8>> {
    let random_value = |rng: &mut StdRng| -> Vec<u8> {
        let n = *[0usize, 1, 5, 12, 13, 40, 300].choose(rng).unwrap();
        if utf8 {
            text(rng, n).into_bytes()
        } else {
            let mut out = vec![0u8; n];
            rng.fill_bytes(&mut out);
            out
        }
    };
    let every_byte = |rng: &mut StdRng| -> Vec<u8> {
        if utf8 {
            let mut chars: Vec<char> =
                (0u8..128).map(char::from).chain(['é', 'ß', '日', '🦀', '\u{7ff}', '\u{ffff}']).collect();
            chars.shuffle(rng);
            chars.into_iter().collect::<String>().into_bytes()
        } else {
            let mut bytes: Vec<u8> = (0..=255).collect();
            bytes.shuffle(rng);
            bytes
        }
    };
    match shape {
        BytesShape::Random => (0..len).map(|_| random_value(rng)).collect(),
        BytesShape::FewDistinct => {
            let pool: Vec<Vec<u8>> = (0..rng.random_range(1..=8)).map(|_| random_value(rng)).collect();
            (0..len).map(|_| pool.choose(rng).unwrap().clone()).collect()
        }
        BytesShape::Text => (0..len)
            .map(|_| {
                let n = rng.random_range(0..120);
                text(rng, n).into_bytes()
            })
            .collect(),
        BytesShape::Empty => (0..len).map(|_| if rng.random_bool(0.9) { vec![] } else { random_value(rng) }).collect(),
        BytesShape::Long(long) => (0..len)
            .map(|i| {
                let n = if i % 37 == 3 { long + rng.random_range(1..100) } else { rng.random_range(0..80) };
                text(rng, n).into_bytes()
            })
            .collect(),
        BytesShape::AllBytes => (0..len)
            .map(|i| {
                if i % 25 == 0 {
                    every_byte(rng)
                } else {
                    let n = rng.random_range(20..200);
                    text(rng, n).into_bytes()
                }
            })
            .collect(),
        BytesShape::Runs => {
            let mut out = Vec::with_capacity(len);
            while out.len() < len {
                let value = random_value(rng);
                let run = rng.random_range(1..=300).min(len - out.len());
                out.extend(std::iter::repeat_n(value, run));
            }
            out
        }
        BytesShape::Constant => vec![random_value(rng); len],
    }
}

/// Whether `data_type` is a string type (of [`BYTES_TYPES`]).
pub fn is_utf8(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// A string or binary array of `data_type`.
pub fn bytes_array(data_type: &DataType, values: &[Vec<u8>], nulls: Option<&NullBuffer>) -> ArrayRef {
    let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
    let strings = || values.iter().enumerate().map(|(i, v)| valid(i).then(|| std::str::from_utf8(v).unwrap()));
    let binaries = || values.iter().enumerate().map(|(i, v)| valid(i).then_some(v.as_slice()));
    match data_type {
        DataType::Utf8 => Arc::new(StringArray::from_iter(strings())),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(strings())),
        DataType::Utf8View => Arc::new(StringViewArray::from_iter(strings())),
        DataType::Binary => Arc::new(BinaryArray::from_iter(binaries())),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from_iter(binaries())),
        DataType::BinaryView => Arc::new(BinaryViewArray::from_iter(binaries())),
        other => panic!("not a string type: {other}"),
    }
}

/// The string and binary types: offsets of 32 and 64 bits, and views.
pub const BYTES_TYPES: [DataType; 6] = [
    DataType::Utf8,
    DataType::LargeUtf8,
    DataType::Utf8View,
    DataType::Binary,
    DataType::LargeBinary,
    DataType::BinaryView,
];

/// A boolean array of one of four shapes (`shape % 4`): all true, all false, random, or runs
/// of 700.
pub fn bool_array(rng: &mut StdRng, len: usize, shape: u8, nulls: Option<NullBuffer>) -> ArrayRef {
    let values: Vec<bool> = match shape % 4 {
        0 => vec![true; len],
        1 => vec![false; len],
        2 => (0..len).map(|_| rng.random_bool(0.5)).collect(),
        _ => (0..len).map(|i| (i / 700) % 2 == 0).collect(),
    };
    Arc::new(BooleanArray::new(BooleanBuffer::from(values), nulls))
}

/// Fixed-width types the integer encodings do not handle.
pub fn other_fixed_types() -> Vec<DataType> {
    vec![
        DataType::FixedSizeBinary(1),
        DataType::FixedSizeBinary(7),
        DataType::FixedSizeBinary(16),
        DataType::Decimal256(76, 3),
        DataType::Interval(IntervalUnit::DayTime),
        DataType::Interval(IntervalUnit::MonthDayNano),
    ]
}

/// A random array of any flat type, drawn in one of the shapes its type has.
pub fn shaped_array(rng: &mut StdRng, data_type: &DataType, len: usize) -> (String, ArrayRef) {
    let nulls = random_validity(rng, len);
    match data_type {
        DataType::Boolean => {
            let shape = rng.random_range(0..4u8);
            (format!("shape {shape}"), bool_array(rng, len, shape, nulls))
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            let shape = *[
                FloatShape::RandomBits,
                FloatShape::Specials,
                FloatShape::Runs,
                FloatShape::Constant,
                FloatShape::Normal,
                FloatShape::Decimals,
            ]
            .choose(rng)
            .unwrap();
            (format!("{shape:?}"), float_array(rng, data_type, len, shape, nulls))
        }
        t if BYTES_TYPES.contains(t) => {
            let shape = *[
                BytesShape::Random,
                BytesShape::FewDistinct,
                BytesShape::Text,
                BytesShape::Empty,
                BytesShape::Long(3000),
                BytesShape::AllBytes,
                BytesShape::Runs,
                BytesShape::Constant,
            ]
            .choose(rng)
            .unwrap();
            let values = bytes_values(rng, len, shape, is_utf8(t));
            (format!("{shape:?}"), bytes_array(t, &values, nulls.as_ref()))
        }
        t if int_types().contains(t) => {
            let shape = *INT_SHAPES.choose(rng).unwrap();
            let values = int_values(rng, len, shape, int_bounds(t));
            (format!("{shape:?}"), int_array(t, &values, nulls))
        }
        t => {
            let mode = *[ValueMode::Random, ValueMode::Small, ValueMode::Constant].choose(rng).unwrap();
            let null_probability = *[0.0, 0.05, 0.7, 1.0].choose(rng).unwrap();
            (format!("{mode:?}"), random_array(rng, t, len, ColumnGen { null_probability, mode }))
        }
    }
}

/// Every flat type the encodings see.
pub fn encoded_types() -> Vec<DataType> {
    let mut out = int_types();
    out.extend([DataType::Boolean, DataType::Float16, DataType::Float32, DataType::Float64]);
    out.extend(BYTES_TYPES);
    out.extend(other_fixed_types());
    out
}
