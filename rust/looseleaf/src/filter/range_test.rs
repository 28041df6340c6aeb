//! Range tests in predicates: the comparisons of one integer-like column with constants under
//! an `AND` (`x >= a AND x < b`, `x BETWEEN a AND b`, or one comparison alone) folded into one
//! [`RangeTest`] of its stored integers, `low <= x <= high` ([`range_of`]), and the columns whose
//! tests can run in their decoders taken out of a predicate ([`push_range_tests`]).
//!
//! The test itself, on decoded arrays and on stored pages, is the encodings' own
//! ([`crate::encodings::range_test`]): a page decoder runs it below the predicates.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use super::bind::{BoundColumn, BoundPredicate};
use super::predicate::CompareOp;
pub use crate::encodings::range_test::RangeTest;
use crate::encodings::range_test::{integer_like, integer_type};

/// The test standing for every `column <op> constant` of `terms` at once, on a column of
/// `data_type` (the constants bound to it). `None` if a term is not an ordering or equality
/// (`!=`), a constant is null or not a single integer-like value, or the type is not
/// integer-like (floats, strings): those are compared otherwise.
pub fn range_of(data_type: &DataType, terms: &[(CompareOp, &ArrayRef)]) -> Option<RangeTest> {
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
    Some(RangeTest { low, high, signed })
}

/// The one non-null value of an integer-like constant, as an integer.
#[allow(clippy::useless_conversion, reason = "the `Decimal128` arm converts `i128` to itself")]
fn integer_constant(constant: &ArrayRef) -> Option<i128> {
    if constant.len() != 1 || constant.is_null(0) {
        return None;
    }
    integer_type!(constant.data_type(), T => Some(constant.as_primitive_opt::<T>()?.value(0).into()), _ => None)
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
        match range_of(&column.value_type, terms) {
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
                        let test = range_of(&DataType::UInt8, &[(*a, c1), (*b, c2)]).unwrap();
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
        let gt_max = range_of(&DataType::Int64, &[(CompareOp::Gt, &big(i128::MAX))]).unwrap();
        assert!(gt_max.is_empty());
        let lt_min = range_of(&DataType::Int64, &[(CompareOp::Lt, &big(i128::MIN))]).unwrap();
        assert!(lt_min.is_empty());
        let all = range_of(&DataType::Int64, &[(CompareOp::Gt, &big(i128::MIN))]).unwrap();
        assert_eq!(all.on_array(&int).unwrap().true_count(), 3);
        let above = range_of(&DataType::Int64, &[(CompareOp::GtEq, &big(i64::MAX as i128 + 1))]).unwrap();
        assert_eq!(above.on_array(&int).unwrap().true_count(), 0);
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![Some(1), None, Some(3)]));
        let not_eq = range_of(&DataType::Date32, &[(CompareOp::NotEq, &dates.slice(0, 1))]);
        assert!(not_eq.is_none());
    }
}
