//! Range tests: the comparisons of one integer-like column with constants under an `AND`
//! (`x >= a AND x < b`, `x BETWEEN a AND b`, or one comparison alone) as one test of an
//! inclusive range of its stored integers, `low <= x <= high`.
//!
//! A range test runs wherever the values are: on a decoded array ([`RangeTest::on_array`]), or
//! inside a page decoder, on the stored form ([`PageDecoder::test_range`]: a bit-packed page
//! compares its packed differences from the page's reference with the range shifted by it, a
//! block at a time in cache, and never writes the values out). A filtered read whose filter
//! column is used by one range test alone has its decoder return the test's result instead of
//! the column ([`push_range_tests`]).
//!
//! [`PageDecoder::test_range`]: crate::encodings::PageDecoder::test_range

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, TimeUnit};

use super::bind::{BoundColumn, BoundPredicate};
use super::predicate::CompareOp;
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
    /// The test standing for every `column <op> constant` of `terms` at once, on a column of
    /// `data_type` (the constants bound to it). `None` if a term is not an ordering or equality
    /// (`!=`), a constant is null or not a single integer-like value, or the type is not
    /// integer-like (floats, strings): those are compared otherwise.
    pub fn of(data_type: &DataType, terms: &[(CompareOp, &ArrayRef)]) -> Option<Self> {
        let signed = integer_like(data_type)?;
        let (mut low, mut high) = (i128::MIN, i128::MAX);
        // `> i128::MAX` or `< i128::MIN`: no value passes.
        let mut empty = false;
        for (op, constant) in terms {
            let c = integer_constant(constant)?;
            let (from, to) = match op {
                CompareOp::Eq => (Some(c), Some(c)),
                CompareOp::GtEq => (Some(c), None),
                CompareOp::LtEq => (None, Some(c)),
                CompareOp::Gt => match c.checked_add(1) {
                    Some(next) => (Some(next), None),
                    None => {
                        empty = true;
                        (None, None)
                    }
                },
                CompareOp::Lt => match c.checked_sub(1) {
                    Some(previous) => (None, Some(previous)),
                    None => {
                        empty = true;
                        (None, None)
                    }
                },
                CompareOp::NotEq => return None,
            };
            low = low.max(from.unwrap_or(i128::MIN));
            high = high.min(to.unwrap_or(i128::MAX));
        }
        if empty {
            (low, high) = (i128::MAX, i128::MIN);
        }
        Some(Self { low, high, signed })
    }

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
fn integer_like(data_type: &DataType) -> Option<bool> {
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

/// The one non-null value of an integer-like constant, as an integer.
#[allow(clippy::useless_conversion, reason = "the `Decimal128` arm converts `i128` to itself")]
fn integer_constant(constant: &ArrayRef) -> Option<i128> {
    if constant.len() != 1 || constant.is_null(0) {
        return None;
    }
    integer_type!(constant.data_type(), T => Some(constant.as_primitive_opt::<T>()?.value(0).into()), _ => None)
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

/// `predicate` with the range tests that can run in the decoders of its columns taken out: each
/// becomes a boolean [`BoundPredicate::Column`] of its column, which the read then returns as
/// the test's result (true, false, or null where the value is null: what the comparisons it
/// stands for give in three-valued logic). A column is tested so when `pushable` says so and
/// the predicate reads it in one range test and nowhere else.
pub fn push_range_tests(
    predicate: &BoundPredicate,
    pushable: impl Fn(&BoundColumn) -> bool,
) -> (BoundPredicate, HashMap<usize, RangeTest>) {
    let mut uses: HashMap<usize, usize> = HashMap::new();
    predicate.visit(&mut |column| *uses.entry(column.field).or_default() += 1);
    let mut tests = HashMap::new();
    let rewritten = rewrite(predicate, &mut |column, terms| {
        if uses.get(&column.field) != Some(&terms.len()) || !pushable(column) {
            return false;
        }
        match RangeTest::of(&column.value_type, terms) {
            Some(test) => tests.insert(column.field, test).is_none(),
            None => false,
        }
    });
    (rewritten, tests)
}

/// `predicate` with the comparisons of a column in one `AND` (or a comparison alone) replaced
/// by a boolean column where `push` takes them.
fn rewrite(
    predicate: &BoundPredicate,
    push: &mut impl FnMut(&BoundColumn, &[(CompareOp, &ArrayRef)]) -> bool,
) -> BoundPredicate {
    match predicate {
        BoundPredicate::Compare { column, op, value } if push(column, &[(*op, value)]) => {
            BoundPredicate::Column(column.clone())
        }
        BoundPredicate::And(parts) => {
            let (ranges, others) = column_ranges(parts);
            let mut out = Vec::with_capacity(parts.len());
            for (column, terms) in ranges {
                if push(column, &terms) {
                    out.push(BoundPredicate::Column(column.clone()));
                } else {
                    out.extend(terms.into_iter().map(|(op, value)| BoundPredicate::Compare {
                        column: column.clone(),
                        op,
                        value: value.clone(),
                    }));
                }
            }
            out.extend(others.into_iter().map(|part| rewrite(part, push)));
            BoundPredicate::And(out)
        }
        BoundPredicate::Or(parts) => BoundPredicate::Or(parts.iter().map(|part| rewrite(part, push)).collect()),
        BoundPredicate::Not(part) => BoundPredicate::Not(Box::new(rewrite(part, push))),
        other => other.clone(),
    }
}

/// A column and the comparisons of it with constants that an `AND` holds.
pub(crate) type ColumnRange<'a> = (&'a BoundColumn, Vec<(CompareOp, &'a ArrayRef)>);

/// The comparisons with constants among `parts` (of an `AND`) grouped by column, and the other
/// parts. Only orderings and equality join a group (`!=` is not a range).
pub(crate) fn column_ranges(parts: &[BoundPredicate]) -> (Vec<ColumnRange<'_>>, Vec<&BoundPredicate>) {
    let mut ranges: Vec<ColumnRange<'_>> = Vec::new();
    let mut others = Vec::new();
    for part in parts {
        match part {
            BoundPredicate::Compare { column, op, value } if *op != CompareOp::NotEq => {
                match ranges.iter_mut().find(|(c, _)| *c == column) {
                    Some((_, terms)) => terms.push((*op, value)),
                    None => ranges.push((column, vec![(*op, value)])),
                }
            }
            other => others.push(other),
        }
    }
    (ranges, others)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Date32Array, Float64Array, Int64Array, UInt8Array};

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

    /// Columns read by one range test alone are pushed, others stay comparisons; the rewritten
    /// predicate gives what the original does when each pushed column is its test's result.
    #[test]
    fn only_columns_one_range_test_reads_are_pushed() {
        use arrow_array::{Int32Array, Scalar};
        use arrow_schema::{Field, Schema};

        use crate::filter::Predicate;
        use crate::filter::evaluate::{FilterColumns, evaluate};

        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Int32, true),
            Field::new("c", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
        ]);
        let int = |v: i32| Scalar::new(Arc::new(Int32Array::from(vec![v])) as ArrayRef);
        let cmp = |c: &str, op, v| Predicate::compare(c, op, int(v));
        // a: one range of two terms; b: in two places; c: `!=` (bound as `NOT c = 3`); f: a float.
        let p = cmp("a", CompareOp::GtEq, 2)
            .and(cmp("a", CompareOp::Lt, 5))
            .and(cmp("b", CompareOp::Gt, 1).or(cmp("b", CompareOp::Lt, -1)))
            .and(cmp("c", CompareOp::NotEq, 3))
            .and(Predicate::compare("f", CompareOp::Gt, Scalar::new(Arc::new(Float64Array::from(vec![0.5])))));
        let bound = BoundPredicate::bind(&p, schema.fields()).unwrap();
        let (rewritten, tests) = push_range_tests(&bound, |_| true);
        let mut pushed: Vec<usize> = tests.keys().copied().collect();
        pushed.sort_unstable();
        assert_eq!(pushed, vec![0, 2]);
        assert_eq!(tests[&0], RangeTest { low: 2, high: 4, signed: true });
        assert_eq!(tests[&2], RangeTest { low: 3, high: 3, signed: true });
        let (_, some) = push_range_tests(&bound, |column| column.field != 0);
        assert_eq!(some.keys().collect::<Vec<_>>(), vec![&2]);
        // The same rows either way, nulls included.
        let values = |v: Vec<Option<i32>>| Arc::new(Int32Array::from(v)) as ArrayRef;
        let a = values(vec![Some(1), Some(2), Some(4), Some(5), None, Some(3), Some(3)]);
        let b = values(vec![Some(2), Some(2), Some(-2), Some(2), Some(2), Some(0), None]);
        let c = values(vec![Some(4), Some(4), Some(4), Some(4), Some(4), Some(4), Some(3)]);
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.0; 7]));
        let tested_a: ArrayRef = Arc::new(tests[&0].on_array(&a).unwrap());
        let tested_c: ArrayRef = Arc::new(tests[&2].on_array(&c).unwrap());
        let original: FilterColumns = [(0, &a), (1, &b), (2, &c), (3, &f)].into_iter().collect();
        let pushed: FilterColumns = [(0, &tested_a), (1, &b), (2, &tested_c), (3, &f)].into_iter().collect();
        let want = evaluate(&bound, &original, 7).unwrap();
        assert_eq!(want.iter().collect::<Vec<_>>(), vec![false, true, true, false, false, false, false]);
        assert_eq!(evaluate(&rewritten, &pushed, 7).unwrap(), want);
        // A comparison alone is a range test too.
        let alone = BoundPredicate::bind(&cmp("b", CompareOp::Eq, 2), schema.fields()).unwrap();
        let (rewritten, tests) = push_range_tests(&alone, |_| true);
        assert!(matches!(rewritten, BoundPredicate::Column(_)));
        assert_eq!(tests[&1], RangeTest { low: 2, high: 2, signed: true });
    }

    /// Terms folded into a range, constants at and past the type's limits, against each term
    /// evaluated on its own.
    #[test]
    fn folded_terms_match_each_comparison() {
        let ops = [CompareOp::Eq, CompareOp::Lt, CompareOp::LtEq, CompareOp::Gt, CompareOp::GtEq];
        let values: ArrayRef = Arc::new(UInt8Array::from((0..=255u8).map(Some).chain([None]).collect::<Vec<_>>()));
        let constants: Vec<ArrayRef> = [0u64, 1, 7, 254, 255]
            .iter()
            .map(|&c| Arc::new(arrow_array::UInt64Array::from(vec![c])) as ArrayRef)
            .collect();
        for a in &ops {
            for b in &ops {
                for c1 in &constants {
                    for c2 in &constants {
                        let test = RangeTest::of(&DataType::UInt8, &[(*a, c1), (*b, c2)]).unwrap();
                        let got = test.on_array(&values).unwrap();
                        let holds = |op: &CompareOp, c: &ArrayRef, v: u8| {
                            let c = c.as_primitive::<arrow_array::types::UInt64Type>().value(0);
                            let v = v as u64;
                            match op {
                                CompareOp::Eq => v == c,
                                CompareOp::Lt => v < c,
                                CompareOp::LtEq => v <= c,
                                CompareOp::Gt => v > c,
                                CompareOp::GtEq => v >= c,
                                CompareOp::NotEq => v != c,
                            }
                        };
                        for v in 0..=255u8 {
                            assert_eq!(got.value(v as usize), holds(a, c1, v) && holds(b, c2, v), "{a:?} {b:?} {v}");
                        }
                        assert!(got.is_null(256));
                    }
                }
            }
        }
        // Past i64's limits and at i128's: empty, or everything.
        let int: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, 0, i64::MAX]));
        let big = |v: i128| -> ArrayRef { Arc::new(arrow_array::Decimal128Array::from(vec![v])) };
        let gt_max = RangeTest::of(&DataType::Int64, &[(CompareOp::Gt, &big(i128::MAX))]).unwrap();
        assert!(gt_max.is_empty());
        let lt_min = RangeTest::of(&DataType::Int64, &[(CompareOp::Lt, &big(i128::MIN))]).unwrap();
        assert!(lt_min.is_empty());
        let all = RangeTest::of(&DataType::Int64, &[(CompareOp::Gt, &big(i128::MIN))]).unwrap();
        assert_eq!(all.on_array(&int).unwrap().true_count(), 3);
        let above = RangeTest::of(&DataType::Int64, &[(CompareOp::GtEq, &big(i64::MAX as i128 + 1))]).unwrap();
        assert_eq!(above.on_array(&int).unwrap().true_count(), 0);
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![Some(1), None, Some(3)]));
        let not_eq = RangeTest::of(&DataType::Date32, &[(CompareOp::NotEq, &dates.slice(0, 1))]);
        assert!(not_eq.is_none());
    }
}
