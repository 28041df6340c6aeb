//! Range tests: `low <= v <= high` on a column's values taken as integers, the one test that
//! the comparisons of an integer-like column with constants under an `AND` fold into
//! ([`crate::filter::range_test`] folds them and decides where each runs).
//!
//! A range test runs wherever the values are: on a decoded array ([`RangeTest::on_array`]), or
//! inside a page decoder on the stored form ([`super::PageDecoder::test_range`]: a bit-packed
//! page compares its packed differences from the page's reference with the range shifted by
//! it, a block at a time in cache, and never writes the values out).

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};

/// `$body` with `$t` the arrow-rs primitive type of `$data_type` if it is one a range test
/// covers (see [`integer_like`]), `$otherwise` (with `$other` the type) if not.
macro_rules! integer_type {
    ($data_type:expr, $t:ident => $body:expr, $other:pat => $otherwise:expr) => {{
        use arrow_array::types::*;
        match $data_type {
            DataType::Int8 => integer_type!(@ $t = Int8Type, $body),
            DataType::Int16 => integer_type!(@ $t = Int16Type, $body),
            DataType::Int32 => integer_type!(@ $t = Int32Type, $body),
            DataType::Int64 => integer_type!(@ $t = Int64Type, $body),
            DataType::UInt8 => integer_type!(@ $t = UInt8Type, $body),
            DataType::UInt16 => integer_type!(@ $t = UInt16Type, $body),
            DataType::UInt32 => integer_type!(@ $t = UInt32Type, $body),
            DataType::UInt64 => integer_type!(@ $t = UInt64Type, $body),
            DataType::Date32 => integer_type!(@ $t = Date32Type, $body),
            DataType::Date64 => integer_type!(@ $t = Date64Type, $body),
            DataType::Decimal64(..) => integer_type!(@ $t = Decimal64Type, $body),
            DataType::Decimal128(..) => integer_type!(@ $t = Decimal128Type, $body),
            DataType::Timestamp(TimeUnit::Second, _) => integer_type!(@ $t = TimestampSecondType, $body),
            DataType::Timestamp(TimeUnit::Millisecond, _) => integer_type!(@ $t = TimestampMillisecondType, $body),
            DataType::Timestamp(TimeUnit::Microsecond, _) => integer_type!(@ $t = TimestampMicrosecondType, $body),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => integer_type!(@ $t = TimestampNanosecondType, $body),
            $other => $otherwise,
        }
    }};
    (@ $t:ident = $type:ty, $body:expr) => {{
        type $t = $type;
        $body
    }};
}
pub(crate) use integer_type;

/// `low <= value <= high` on a column's values taken as integers: the unscaled integers of
/// decimals, days of `Date32`, the units of timestamps. Empty when `low > high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeTest {
    /// Smallest value that passes.
    pub low: i128,
    /// Largest value that passes.
    pub high: i128,
    /// Whether the column's integers are signed (stored bytes are read with sign extension).
    pub signed: bool,
}

impl RangeTest {
    /// Whether no value passes.
    pub fn is_empty(&self) -> bool {
        self.low > self.high
    }

    /// The test on a decoded array of an integer-like type: true where the value is in the
    /// range, false where it is not, null where it is null.
    ///
    /// # Errors
    /// [`Error::Internal`] for an array of another type.
    pub fn on_array(&self, array: &ArrayRef) -> Result<BooleanArray> {
        integer_type!(array.data_type(), T => self.on_values::<T>(array), other => {
            Err(Error::internal(format!("a range test of a {other} column")))
        })
    }

    fn on_values<T: ArrowPrimitiveType>(&self, array: &ArrayRef) -> Result<BooleanArray>
    where
        T::Native: TryFrom<i128> + Into<i128>,
    {
        let values = array.as_primitive_opt::<T>().ok_or_else(|| Error::internal("a range test's array"))?;
        let bits = match self.within_type::<T::Native>() {
            Some((low, high)) => within(values.values(), low, high),
            None => BooleanBuffer::new_unset(values.len()),
        };
        Ok(BooleanArray::new(bits, array.logical_nulls()))
    }

    /// The range within the values of `N`, in `N`; `None` if no value of `N` passes.
    pub(crate) fn within_type<N: ArrowNativeTypeOp + TryFrom<i128> + Into<i128>>(&self) -> Option<(N, N)> {
        let low = self.low.max(N::MIN_TOTAL_ORDER.into());
        let high = self.high.min(N::MAX_TOTAL_ORDER.into());
        if low > high {
            return None;
        }
        Some((N::try_from(low).ok()?, N::try_from(high).ok()?))
    }
}

/// Whether values of `data_type` are integers a range test covers, and if so whether signed.
pub(crate) fn integer_like(data_type: &DataType) -> Option<bool> {
    match data_type {
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => Some(false),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Date32
        | DataType::Date64
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Timestamp(..) => Some(true),
        _ => None,
    }
}

/// The values in `low..=high`, as bits.
///
/// A word of 64 values at a time, each test without a branch (`&`, not `&&`), so that the
/// compiler vectorises it: `collect_bool` with the closure `low <= v[i] && v[i] <= high` took a
/// third of TPC-H Q6.
pub(crate) fn within<N: Copy + PartialOrd>(values: &[N], low: N, high: N) -> BooleanBuffer {
    let mut words: Vec<u64> = Vec::with_capacity(values.len().div_ceil(64));
    within_words(values, low, high, &mut words);
    BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, values.len())
}

/// [`within`] appended to `words` (bits of the last word past `values` unset).
///
/// The loop is compiled three times and chosen by the CPU it runs on: with AVX-512, with AVX2,
/// and for the baseline the library is built for (SSE2 on x86-64, which has no 64-bit compare):
/// the same code vectorises to 8 and 4 values an instruction, 10× and 5× faster than the
/// baseline on values in cache (a block just unpacked).
pub(crate) fn within_words<N: Copy + PartialOrd>(values: &[N], low: N, high: N, words: &mut Vec<u64>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq") {
            // SAFETY: the CPU has the features the function is compiled for (checked above).
            return unsafe { within_words_avx512(values, low, high, words) };
        }
        if has!("avx2") {
            // SAFETY: as above.
            return unsafe { within_words_avx2(values, low, high, words) };
        }
    }
    within_words_in(values, low, high, words)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
fn within_words_avx512<N: Copy + PartialOrd>(values: &[N], low: N, high: N, words: &mut Vec<u64>) {
    within_words_in(values, low, high, words)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn within_words_avx2<N: Copy + PartialOrd>(values: &[N], low: N, high: N, words: &mut Vec<u64>) {
    within_words_in(values, low, high, words)
}

/// The loop of [`within_words`], inlined into each of its versions to be compiled for their
/// features.
#[inline(always)]
fn within_words_in<N: Copy + PartialOrd>(values: &[N], low: N, high: N, words: &mut Vec<u64>) {
    let chunks = values.chunks_exact(64);
    let tail = chunks.remainder();
    let word = |chunk: &[N]| {
        chunk.iter().enumerate().fold(0u64, |word, (bit, v)| word | ((((low <= *v) & (*v <= high)) as u64) << bit))
    };
    words.extend(chunks.map(word));
    if !tail.is_empty() {
        words.push(word(tail));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every range of `i8` and `u8` (bounds included), against the two comparisons it stands for.
    #[test]
    fn within_matches_both_comparisons_at_every_bound() {
        let signed: Vec<i8> = (i8::MIN..=i8::MAX).collect();
        let unsigned: Vec<u8> = (u8::MIN..=u8::MAX).collect();
        for low in (i8::MIN..=i8::MAX).step_by(3).chain([i8::MAX]) {
            for high in (low..=i8::MAX).step_by(5).chain([i8::MAX]) {
                let bits = within(&signed, low, high);
                assert!(
                    signed.iter().zip(bits.iter()).all(|(v, bit)| bit == (low <= *v && *v <= high)),
                    "{low}..={high}"
                );
            }
        }
        // Each compiled version this CPU can run, on every width, against the others.
        let wide: Vec<i64> = (-300..300).map(|v| v * (i64::MAX / 300)).chain([i64::MIN, i64::MAX]).collect();
        let narrow: Vec<u32> = (0..600u32).map(|v| v.wrapping_mul(7_158_279)).chain([u32::MAX]).collect();
        type Version<N> = fn(&[N], N, N, &mut Vec<u64>);
        let versions = |run: &dyn Fn(Version<i64>, Version<u32>)| {
            run(within_words_in, within_words_in);
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx2") {
                    // SAFETY: the CPU has AVX2.
                    run(
                        |v, l, h, w| unsafe { within_words_avx2(v, l, h, w) },
                        |v, l, h, w| unsafe { within_words_avx2(v, l, h, w) },
                    );
                }
                if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512dq") {
                    // SAFETY: the CPU has these AVX-512 features.
                    run(
                        |v, l, h, w| unsafe { within_words_avx512(v, l, h, w) },
                        |v, l, h, w| unsafe { within_words_avx512(v, l, h, w) },
                    );
                }
            }
        };
        versions(&|of_i64, of_u32| {
            for (low, high) in [(i64::MIN, i64::MAX), (-5, 5), (0, i64::MAX), (i64::MIN, 0), (7, 6)] {
                let mut words = Vec::new();
                of_i64(&wide, low, high, &mut words);
                let got = BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, wide.len());
                assert!(wide.iter().zip(got.iter()).all(|(v, bit)| bit == (low <= *v && *v <= high)));
            }
            for (low, high) in [(0, u32::MAX), (1 << 31, u32::MAX), (5, 1 << 31), (u32::MAX, u32::MAX)] {
                let mut words = Vec::new();
                of_u32(&narrow, low, high, &mut words);
                let got = BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, narrow.len());
                assert!(narrow.iter().zip(got.iter()).all(|(v, bit)| bit == (low <= *v && *v <= high)));
            }
        });
        for low in (u8::MIN..=u8::MAX).step_by(3).chain([u8::MAX]) {
            for high in (low..=u8::MAX).step_by(5).chain([u8::MAX]) {
                let bits = within(&unsigned, low, high);
                assert!(
                    unsigned.iter().zip(bits.iter()).all(|(v, bit)| bit == (low <= *v && *v <= high)),
                    "{low}..={high}"
                );
            }
        }
    }
}
