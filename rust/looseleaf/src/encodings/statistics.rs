//! Per-page statistics: null count and the smallest and largest non-null values, computed by
//! the writer from each page's [`DataBlock`] and stored in its metadata, for readers that skip
//! pages (Spark filters) and for inspection.
//!
//! Bounds are stored as the value's own bytes: little endian for fixed-width values (integers
//! compared as signed or unsigned by their type, floats as floats with NaN ignored, booleans as
//! 0 or 1), the bytes themselves for strings and binaries (compared bytewise; a minimum longer
//! than [`MAX_BOUND_BYTES`] is truncated, which keeps it a lower bound; a longer maximum is
//! omitted). Other values get a null count only.

use half::f16;

use super::DataBlock;
use super::physical::integers::read_int;
use super::strategy::ValueKind;
use crate::format::proto::PageStatistics;

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
            let w = (b.bits_per_value / 8) as usize;
            let as_f64 = |bytes: &[u8]| -> f64 {
                match bytes.len() {
                    2 => f16::from_le_bytes([bytes[0], bytes[1]]).to_f64(),
                    4 => f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as f64,
                    _ => f64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])),
                }
            };
            let mut bounds: Option<(f64, &[u8], f64, &[u8])> = None;
            if matches!(w, 2 | 4 | 8) {
                for (i, bytes) in b.data.as_slice().chunks_exact(w).enumerate() {
                    let v = as_f64(bytes);
                    if !valid(i) || v.is_nan() {
                        continue;
                    }
                    bounds = Some(match bounds {
                        None => (v, bytes, v, bytes),
                        Some((lo, lo_b, hi, hi_b)) => {
                            let (lo, lo_b) = if v < lo { (v, bytes) } else { (lo, lo_b) };
                            let (hi, hi_b) = if v > hi { (v, bytes) } else { (hi, hi_b) };
                            (lo, lo_b, hi, hi_b)
                        }
                    });
                }
            }
            bounds.map_or((None, None), |(_, lo, _, hi)| (Some(lo.to_vec()), Some(hi.to_vec())))
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
            // The bounds and their first 8 bytes as big-endian numbers: a value whose prefix
            // lies strictly between theirs changes neither, with no call to `memcmp` (the
            // comparisons of strings were a tenth of a lineitem write).
            type Bound<'a> = (&'a [u8], u64);
            let mut bounds: Option<(Bound, Bound)> = None;
            let data = b.data.as_slice();
            let n = b.num_values as usize;
            for i in (0..n).filter(|i| valid(*i)) {
                let (Some(start), Some(end)) = (b.offset_at(i), b.offset_at(i + 1)) else { break };
                let Some(value) = data.get(start as usize..end as usize) else { break };
                let prefix = prefix_of(value);
                bounds = Some(match bounds {
                    None => ((value, prefix), (value, prefix)),
                    Some((lo, hi)) if prefix > lo.1 && prefix < hi.1 => (lo, hi),
                    Some((lo, hi)) => {
                        let lo = if value < lo.0 { (value, prefix) } else { lo };
                        let hi = if value > hi.0 { (value, prefix) } else { hi };
                        (lo, hi)
                    }
                });
            }
            let bounds = bounds.map(|((lo, _), (hi, _))| (lo, hi));
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

/// The first 8 bytes of `value` (zero-padded) as a big-endian number: if two values' prefixes
/// differ, the values compare as their prefixes do.
fn prefix_of(value: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let len = value.len().min(8);
    bytes[..len].copy_from_slice(&value[..len]);
    u64::from_be_bytes(bytes)
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
    macro_rules! bounds {
        ($t:ty) => {{
            const W: usize = std::mem::size_of::<$t>();
            let values = data.chunks_exact(W).map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; W])));
            let (mut lo, mut hi, mut any) = (<$t>::MAX, <$t>::MIN, false);
            match validity {
                None => {
                    for v in values {
                        lo = lo.min(v);
                        hi = hi.max(v);
                    }
                    any = data.len() >= W;
                }
                Some(valid) => {
                    for (v, ok) in values.zip(valid.iter()) {
                        if ok {
                            lo = lo.min(v);
                            hi = hi.max(v);
                            any = true;
                        }
                    }
                }
            }
            any.then(|| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
        }};
    }
    match (width, signed) {
        (1, true) => bounds!(i8),
        (1, false) => bounds!(u8),
        (2, true) => bounds!(i16),
        (2, false) => bounds!(u16),
        (4, true) => bounds!(i32),
        (4, false) => bounds!(u32),
        (8, true) => bounds!(i64),
        (8, false) => bounds!(u64),
        (16, true) => bounds!(i128),
        (16, false) => bounds!(u128),
        _ => None,
    }
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
