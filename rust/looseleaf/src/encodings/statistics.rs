//! Per-page statistics: null count and the smallest and largest non-null values, computed by
//! the writer from each page's [`DataBlock`] and stored in its metadata, for readers that skip
//! pages (Spark filters) and for inspection.
//!
//! Bounds are stored as the value's own bytes: little endian for fixed-width values (integers
//! compared as signed or unsigned by their type, floats as floats with NaN ignored, booleans as
//! 0 or 1), the bytes themselves for strings and binaries (compared bytewise; a minimum longer
//! than [`MAX_BOUND_BYTES`] is truncated, which keeps it a lower bound; a longer maximum is
//! omitted). Other values get a null count only.

use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;
use half::f16;

use super::DataBlock;
use super::physical::integers::read_int;
use crate::format::proto::PageStatistics;

/// What a column's values are, for the encoder: it sees only bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Integers (or values ordered as integers: dates, times, decimals...).
    Integer {
        /// Whether negative values exist.
        signed: bool,
    },
    /// Floating point numbers.
    Float,
    /// Booleans.
    Boolean,
    /// Strings and binaries.
    Bytes,
    /// Other fixed-width values (fixed-size binaries, intervals, wide decimals, lists).
    Opaque,
}

impl ValueKind {
    /// The kind of the values of `data_type` (of a dictionary's values for dictionaries).
    pub fn of(data_type: &DataType) -> Self {
        match data_type {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_)
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Interval(arrow_schema::IntervalUnit::YearMonth) => Self::Integer { signed: true },
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => Self::Integer { signed: false },
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Self::Float,
            DataType::Boolean => Self::Boolean,
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView => Self::Bytes,
            DataType::Dictionary(_, value) => Self::of(value),
            _ => Self::Opaque,
        }
    }
}

impl ValueKind {
    /// The kind of the values the pages of a column of `data_type` hold: that of the items of
    /// fixed-size lists (stored in the list's column), else [`ValueKind::of`].
    pub fn of_stored(data_type: &DataType) -> Self {
        match data_type {
            DataType::FixedSizeList(item, _) => Self::of_stored(item.data_type()),
            other => Self::of(other),
        }
    }
}

/// Longest string bound stored.
pub const MAX_BOUND_BYTES: usize = 64;

/// The statistics of a page's values of `kind` (its logical type's width for floats).
pub fn page_statistics(block: &DataBlock, kind: ValueKind) -> PageStatistics {
    let (null_count, validity, values) = match block {
        DataBlock::AllNull { num_values } => return PageStatistics { null_count: *num_values, min: None, max: None },
        DataBlock::Nullable { validity, values } => {
            ((validity.len() - validity.count_set_bits()) as u64, Some(validity), values.as_ref())
        }
        other => (0, None, other),
    };
    let valid = |i: usize| validity.is_none_or(|v| v.value(i));
    let (min, max) = match (values, kind) {
        (DataBlock::FixedWidth(b), ValueKind::Integer { signed }) => {
            integer_bounds(b.data.as_slice(), (b.bits_per_value / 8) as usize, signed, validity)
                .map_or((None, None), |(lo, hi)| (Some(lo), Some(hi)))
        }
        (DataBlock::FixedWidth(b), ValueKind::Float) => {
            float_bounds(b.data.as_slice(), (b.bits_per_value / 8) as usize, validity)
                .map_or((None, None), |(lo, hi)| (Some(lo), Some(hi)))
        }
        (DataBlock::Boolean(bits), _) => {
            let (mut any_false, mut any_true) = (false, false);
            for i in (0..bits.len()).filter(|i| valid(*i)) {
                if bits.value(i) {
                    any_true = true;
                } else {
                    any_false = true;
                }
            }
            if any_false || any_true {
                (Some(vec![u8::from(!any_false)]), Some(vec![u8::from(any_true)]))
            } else {
                (None, None)
            }
        }
        (DataBlock::VariableWidth(b), _) => {
            let data = b.data.as_slice();
            let bounds = match b.bits_per_offset {
                32 => b.typed_offsets::<u32>().ok().and_then(|offsets| byte_bounds(&offsets, data, validity)),
                _ => b.typed_offsets::<u64>().ok().and_then(|offsets| byte_bounds(&offsets, data, validity)),
            };
            match bounds {
                Some((lo, hi)) => {
                    let min = lo[..lo.len().min(MAX_BOUND_BYTES)].to_vec();
                    let max = (hi.len() <= MAX_BOUND_BYTES).then(|| hi.to_vec());
                    (Some(min), max)
                }
                None => (None, None),
            }
        }
        // Bounds of the dictionary bound the values that point into it.
        (DataBlock::Dictionary { dictionary, .. }, kind) => {
            let bounds = page_statistics(dictionary, kind);
            (bounds.min, bounds.max)
        }
        _ => (None, None),
    };
    PageStatistics { null_count, min, max }
}

/// The smallest and largest of the valid values between `offsets` in `data` (stopping at
/// offsets out of the data).
///
/// The bounds are kept with their first 8 bytes as big-endian numbers: a value whose prefix
/// lies strictly between theirs changes neither, with no call to `memcmp` (the comparisons of
/// strings were a tenth of a lineitem write).
fn byte_bounds<'a, O: ArrowNativeType>(
    offsets: &[O],
    data: &'a [u8],
    validity: Option<&arrow_buffer::BooleanBuffer>,
) -> Option<(&'a [u8], &'a [u8])> {
    type Bound<'a> = (&'a [u8], u64);
    // Whether `a` (with its prefix) sorts before `b`: values of at most 8 bytes with equal
    // prefixes differ only by trailing zeros, so the shorter is smaller. Low-cardinality
    // columns hit their bounds' prefixes on most rows (`memcmp` was a tenth of a lineitem write).
    fn less(a: &[u8], a_prefix: u64, b: Bound) -> bool {
        if a_prefix != b.1 {
            a_prefix < b.1
        } else if a.len() <= 8 && b.0.len() <= 8 {
            a.len() < b.0.len()
        } else {
            a < b.0
        }
    }
    let mut bounds: Option<(Bound, Bound)> = None;
    for (i, pair) in offsets.windows(2).enumerate() {
        if validity.is_some_and(|valid| !valid.value(i)) {
            continue;
        }
        let Some(value) = data.get(pair[0].as_usize()..pair[1].as_usize()) else { break };
        let prefix = prefix_of(value);
        bounds = Some(match bounds {
            None => ((value, prefix), (value, prefix)),
            Some((lo, hi)) if prefix > lo.1 && prefix < hi.1 => (lo, hi),
            Some((lo, hi)) => {
                let lo = if less(value, prefix, lo) { (value, prefix) } else { lo };
                let hi = if less(hi.0, hi.1, (value, prefix)) { (value, prefix) } else { hi };
                (lo, hi)
            }
        });
    }
    bounds.map(|((lo, _), (hi, _))| (lo, hi))
}

/// The first 8 bytes of `value` (zero-padded) as a big-endian number: if two values' prefixes
/// differ, the values compare as their prefixes do.
fn prefix_of(value: &[u8]) -> u64 {
    match value.first_chunk::<8>() {
        Some(first) => u64::from_be_bytes(*first),
        // Shifted in byte by byte: a copy into a zeroed array then a load stalls the load
        // on the copy's stores (two thirds of the statistics of short strings).
        None => value
            .iter()
            .fold(0u64, |prefix, byte| prefix << 8 | *byte as u64)
            .checked_shl(8 * (8 - value.len() as u32))
            .unwrap_or(0),
    }
}

/// Reads `data` as little-endian `$t`s and returns the bytes of their bounds (see
/// [`fold_bounds`]), starting from `$start`, bounds no value passes.
macro_rules! le_bounds {
    ($t:ty, $data:expr, $validity:expr, $start:expr) => {{
        const W: usize = std::mem::size_of::<$t>();
        let values = $data.chunks_exact(W).map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; W])));
        fold_bounds(values, $validity, $start).map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
    }};
}

/// The smallest and largest of the valid integers of `width` bytes in `data`, as their bytes.
///
/// One loop per integer type (a fold over `i128`s read from byte slices cost 8% of a write).
fn integer_bounds(
    data: &[u8],
    width: usize,
    signed: bool,
    validity: Option<&arrow_buffer::BooleanBuffer>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    match (width, signed) {
        (1, true) => le_bounds!(i8, data, validity, (i8::MAX, i8::MIN)),
        (1, false) => le_bounds!(u8, data, validity, (u8::MAX, u8::MIN)),
        (2, true) => le_bounds!(i16, data, validity, (i16::MAX, i16::MIN)),
        (2, false) => le_bounds!(u16, data, validity, (u16::MAX, u16::MIN)),
        (4, true) => le_bounds!(i32, data, validity, (i32::MAX, i32::MIN)),
        (4, false) => le_bounds!(u32, data, validity, (u32::MAX, u32::MIN)),
        (8, true) => le_bounds!(i64, data, validity, (i64::MAX, i64::MIN)),
        (8, false) => le_bounds!(u64, data, validity, (u64::MAX, u64::MIN)),
        (16, true) => le_bounds!(i128, data, validity, (i128::MAX, i128::MIN)),
        (16, false) => le_bounds!(u128, data, validity, (u128::MAX, u128::MIN)),
        _ => None,
    }
}

/// The smallest and largest of the valid, non-NaN floats of `width` bytes in `data`, as their
/// bytes: the first of equal ones (`-0.0` or `0.0`, whichever comes first).
fn float_bounds(
    data: &[u8],
    width: usize,
    validity: Option<&arrow_buffer::BooleanBuffer>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    match width {
        2 => le_bounds!(f16, data, validity, (f16::INFINITY, f16::NEG_INFINITY)),
        4 => le_bounds!(f32, data, validity, (f32::INFINITY, f32::NEG_INFINITY)),
        8 => le_bounds!(f64, data, validity, (f64::INFINITY, f64::NEG_INFINITY)),
        _ => None,
    }
}

/// The smallest and largest of the `values` whose row is valid, the first of equal ones,
/// starting from `(lo, hi)` bounds that no value passes (`lo` the type's largest value, `hi` its
/// smallest); `None` when no value moved them.
///
/// `if v < lo { v } else { lo }` is the semantics of the processor's `min` instructions (NaN
/// and ties keep `lo`), so the loop vectorizes and NaNs are skipped without a test (a loop over
/// `f64`s with an `Option` of bounds was a tenth of a write of the wide table). Some value was
/// kept exactly when the bounds no longer cross (a lone value equal to a starting bound leaves
/// that bound, which it equals).
fn fold_bounds<T: Copy + PartialOrd>(
    values: impl Iterator<Item = T>,
    validity: Option<&arrow_buffer::BooleanBuffer>,
    (mut lo, mut hi): (T, T),
) -> Option<(T, T)> {
    match validity {
        None => {
            for v in values {
                lo = if v < lo { v } else { lo };
                hi = if v > hi { v } else { hi };
            }
        }
        Some(valid) => {
            for (v, ok) in values.zip(valid.iter()) {
                if ok {
                    lo = if v < lo { v } else { lo };
                    hi = if v > hi { v } else { hi };
                }
            }
        }
    }
    (lo <= hi).then_some((lo, hi))
}

/// A statistics bound decoded for inspection.
#[derive(Debug, Clone, PartialEq)]
pub enum StatValue {
    /// Integers, and values ordered as integers (dates, times, timestamps, decimals: in their
    /// stored units).
    Int(i128),
    /// Floating point numbers.
    Float(f64),
    /// Booleans.
    Bool(bool),
    /// Strings (a minimum may be a truncated prefix).
    Utf8(String),
    /// Binaries.
    Bytes(Vec<u8>),
}

/// Decodes a stored bound of a column of `data_type`.
pub fn decode_bound(bytes: &[u8], data_type: &arrow_schema::DataType) -> Option<StatValue> {
    use arrow_schema::DataType;
    let value_type = match data_type {
        DataType::Dictionary(_, value) => value.as_ref(),
        other => other,
    };
    match ValueKind::of(value_type) {
        ValueKind::Integer { signed } if matches!(bytes.len(), 1 | 2 | 4 | 8 | 16) => {
            Some(StatValue::Int(read_int(bytes, signed)))
        }
        ValueKind::Float => match bytes.len() {
            2 => Some(StatValue::Float(f16::from_le_bytes([bytes[0], bytes[1]]).to_f64())),
            4 => Some(StatValue::Float(f32::from_le_bytes(bytes.try_into().ok()?) as f64)),
            8 => Some(StatValue::Float(f64::from_le_bytes(bytes.try_into().ok()?))),
            _ => None,
        },
        ValueKind::Boolean => bytes.first().map(|b| StatValue::Bool(*b != 0)),
        ValueKind::Bytes => match value_type {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Some(StatValue::Utf8(String::from_utf8_lossy(bytes).into_owned()))
            }
            _ => Some(StatValue::Bytes(bytes.to_vec())),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_buffer::BooleanBuffer;

    /// The bounds as the definition says: the first smallest and first largest valid non-NaN
    /// value, by a plain scan.
    fn naive(values: &[f64], valid: &[bool]) -> Option<(u64, u64)> {
        let mut bounds: Option<(f64, f64)> = None;
        for (v, ok) in values.iter().zip(valid) {
            if !ok || v.is_nan() {
                continue;
            }
            bounds = Some(match bounds {
                None => (*v, *v),
                Some((lo, hi)) => (if *v < lo { *v } else { lo }, if *v > hi { *v } else { hi }),
            });
        }
        bounds.map(|(lo, hi)| (lo.to_bits(), hi.to_bits()))
    }

    #[test]
    fn prefixes_order_as_their_values() {
        let values: [&[u8]; 9] = [b"", b"\0", b"a", b"a\0", b"ab", b"abcdefg", b"abcdefgh", b"abcdefghi", b"\xff"];
        for a in values {
            for b in values {
                let (pa, pb) = (prefix_of(a), prefix_of(b));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} {b:?}");
                }
            }
        }
        assert_eq!(prefix_of(b"ab"), u64::from_be_bytes(*b"ab\0\0\0\0\0\0"));
    }

    #[test]
    fn byte_bounds_are_the_smallest_and_largest_values() {
        let mut state = 3u64;
        let alphabet: [&[u8]; 6] = [b"", b"\0", b"a", b"ab", b"ab\0", b"abcdefgh"];
        for case in 0..400 {
            let mut values: Vec<Vec<u8>> = Vec::new();
            for _ in 0..case % 23 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let mut value = alphabet[(state >> 40) as usize % alphabet.len()].to_vec();
                value.extend(std::iter::repeat_n(b'z', (state >> 20) as usize % 3 * 4));
                values.push(value);
            }
            let mut offsets = vec![0u32];
            let mut data = Vec::new();
            for value in &values {
                data.extend_from_slice(value);
                offsets.push(data.len() as u32);
            }
            let got = byte_bounds(&offsets, &data, None).map(|(lo, hi)| (lo.to_vec(), hi.to_vec()));
            let want = values.iter().min().cloned().zip(values.iter().max().cloned());
            assert_eq!(got, want, "{values:?}");
        }
    }

    #[test]
    fn float_bounds_skip_nans_and_nulls_and_keep_the_first_of_equal_zeros() {
        let special = [f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5, -2.25, 1e300];
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        for case in 0..500 {
            let n = next() % 40;
            let values: Vec<f64> = (0..n).map(|_| special[next() % special.len()]).collect();
            let valid: Vec<bool> = (0..n).map(|_| case % 2 == 0 || next() % 3 > 0).collect();
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let validity = (case % 2 == 1).then(|| BooleanBuffer::from(valid.clone()));
            let got = float_bounds(&data, 8, validity.as_ref()).map(|(lo, hi)| {
                (u64::from_le_bytes(lo.try_into().unwrap()), u64::from_le_bytes(hi.try_into().unwrap()))
            });
            assert_eq!(got, naive(&values, &valid), "{values:?} {valid:?}");
            let narrow: Vec<u8> = values.iter().flat_map(|v| (*v as f32).to_le_bytes()).collect();
            let got32 = float_bounds(&narrow, 4, validity.as_ref()).map(|(lo, hi)| {
                let f = |b: Vec<u8>| f32::from_le_bytes(b.try_into().unwrap()) as f64;
                (f(lo).to_bits(), f(hi).to_bits())
            });
            let as32: Vec<f64> = values.iter().map(|v| *v as f32 as f64).collect();
            assert_eq!(got32, naive(&as32, &valid), "{as32:?} {valid:?}");
        }
    }
}
