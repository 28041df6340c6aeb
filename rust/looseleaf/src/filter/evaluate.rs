//! Evaluating a [`BoundPredicate`] on decoded columns, exactly, with three-valued logic.
//!
//! A predicate's value on each row is true, false or null. It is carried as two bitmaps, the
//! rows where it is true and the rows where it is false (neither: null), so that `NOT` swaps
//! them and `AND`/`OR` combine them as Kleene logic does, in whole words. Comparisons of
//! integer-like columns (integers, dates, timestamps, decimals) are range tests
//! ([`super::range_test`]), those of one column under an `AND` folded into one; others use
//! arrow-rs's kernels in the column's own type (the constant was brought to it by binding);
//! floats are compared as doubles with IEEE 754 semantics, as Arrow's compute functions do.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, BinaryViewArray, BooleanArray, Decimal64Array, Scalar, StringViewArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

use super::bind::{BoundColumn, BoundPredicate};
use super::predicate::{CompareOp, NullMatching};
use super::range_test::{column_ranges, range_of};
use crate::error::{Error, Result};

/// A predicate's value per row: `true_rows` where true, `false_rows` where false, neither where
/// null. The two never overlap.
#[derive(Debug, Clone)]
pub struct Truth {
    /// Rows where the predicate is true.
    pub true_rows: BooleanBuffer,
    /// Rows where it is false.
    pub false_rows: BooleanBuffer,
}

impl Truth {
    fn constant(len: usize, value: Option<bool>) -> Self {
        let set = |on: bool| if on { BooleanBuffer::new_set(len) } else { BooleanBuffer::new_unset(len) };
        Self { true_rows: set(value == Some(true)), false_rows: set(value == Some(false)) }
    }

    /// From a boolean array: null where it is null.
    fn of(values: &BooleanArray) -> Self {
        let bits = values.values().clone();
        match values.nulls() {
            Some(valid) => Self { true_rows: &bits & valid.inner(), false_rows: &!&bits & valid.inner() },
            None => Self { false_rows: !&bits, true_rows: bits },
        }
    }

    fn not(self) -> Self {
        Self { true_rows: self.false_rows, false_rows: self.true_rows }
    }

    fn and(self, other: Self) -> Self {
        Self { true_rows: &self.true_rows & &other.true_rows, false_rows: &self.false_rows | &other.false_rows }
    }

    fn or(self, other: Self) -> Self {
        Self { true_rows: &self.true_rows | &other.true_rows, false_rows: &self.false_rows & &other.false_rows }
    }
}

/// The decoded top-level columns a predicate reads, by field index in the file's schema.
pub type FilterColumns<'a> = HashMap<usize, &'a ArrayRef>;

/// The rows of `columns` (all `len` rows long) where `predicate` is true.
///
/// # Errors
/// [`Error::Internal`](crate::Error) if a column the predicate reads is missing; errors of the
/// comparison kernels.
pub fn evaluate(predicate: &BoundPredicate, columns: &FilterColumns<'_>, len: usize) -> Result<BooleanBuffer> {
    Ok(truth(predicate, columns, len)?.true_rows)
}

fn truth(predicate: &BoundPredicate, columns: &FilterColumns<'_>, len: usize) -> Result<Truth> {
    Ok(match predicate {
        BoundPredicate::Compare { column, op, value } => {
            let array = column_array(column, columns)?;
            match range_of(array.data_type(), &[(*op, value)]) {
                Some(test) => Truth::of(&test.on_array(&array)?),
                None => compare(&array, *op, &as_column_type(&array, value)?)?,
            }
        }
        BoundPredicate::Same { column, value } => {
            // arrow-ord compares floats by their total order: NaN equals NaN, -0.0 is not 0.0.
            let array = column_array(column, columns)?;
            Truth::of(&arrow_ord::cmp::eq(&array, &Scalar::new(as_column_type(&array, value)?))?)
        }
        BoundPredicate::NonNull { column, value } => {
            let valid = validity(&column_array(column, columns)?, len);
            let none = BooleanBuffer::new_unset(len);
            if *value {
                Truth { true_rows: valid, false_rows: none }
            } else {
                Truth { true_rows: none, false_rows: valid }
            }
        }
        BoundPredicate::In { column, parts, set_has_null, nulls } => {
            let array = column_array(column, columns)?;
            let valid = validity(&array, len);
            let mut found = BooleanBuffer::new_unset(len);
            for part in parts {
                found = &found | &truth(part, columns, len)?.true_rows;
            }
            let not_found = &valid & &!&found;
            let nulls_rows = !&valid;
            let none = BooleanBuffer::new_unset(len);
            match nulls {
                NullMatching::Match if *set_has_null => {
                    Truth { true_rows: &found | &nulls_rows, false_rows: not_found }
                }
                NullMatching::Match | NullMatching::Skip => {
                    Truth { true_rows: found, false_rows: &not_found | &nulls_rows }
                }
                NullMatching::EmitNull => Truth { true_rows: found, false_rows: not_found },
                NullMatching::Inconclusive if *set_has_null => Truth { true_rows: found, false_rows: none },
                NullMatching::Inconclusive => Truth { true_rows: found, false_rows: not_found },
            }
        }
        BoundPredicate::IsNull(column) => {
            let valid = validity(&column_array(column, columns)?, len);
            Truth { true_rows: !&valid, false_rows: valid }
        }
        BoundPredicate::IsNotNull(column) => {
            let valid = validity(&column_array(column, columns)?, len);
            Truth { false_rows: !&valid, true_rows: valid }
        }
        BoundPredicate::Column(column) => {
            let array = column_array(column, columns)?;
            let values =
                array.as_boolean_opt().ok_or_else(|| Error::internal("a boolean filter column is not boolean"))?;
            Truth::of(values)
        }
        BoundPredicate::Literal(value) => Truth::constant(len, *value),
        BoundPredicate::And(parts) => {
            let mut out: Option<Truth> = None;
            let mut and = |part: Truth| {
                out = Some(match out.take() {
                    Some(out) => out.and(part),
                    None => part,
                })
            };
            // The comparisons of one column with constants, as one range test (`AND`
            // is commutative in three-valued logic too: the order of its parts is free).
            let (ranges, others) = column_ranges(parts);
            for (column, terms) in ranges {
                let array = column_array(column, columns)?;
                match range_of(array.data_type(), &terms) {
                    Some(test) => and(Truth::of(&test.on_array(&array)?)),
                    None => {
                        for (op, value) in terms {
                            and(compare(&array, op, &as_column_type(&array, value)?)?);
                        }
                    }
                }
            }
            for part in others {
                and(truth(part, columns, len)?);
            }
            out.unwrap_or_else(|| Truth::constant(len, Some(true)))
        }
        BoundPredicate::Or(parts) => {
            let mut out: Option<Truth> = None;
            for part in parts {
                let part = truth(part, columns, len)?;
                out = Some(match out {
                    Some(out) => out.or(part),
                    None => part,
                });
            }
            out.unwrap_or_else(|| Truth::constant(len, Some(false)))
        }
        BoundPredicate::Not(part) => truth(part, columns, len)?.not(),
    })
}

/// The column's array, struct parents' nulls included in its own.
fn column_array(column: &BoundColumn, columns: &FilterColumns<'_>) -> Result<ArrayRef> {
    let mut array = (*columns
        .get(&column.field)
        .ok_or_else(|| Error::internal(format!("filter column {:?} was not read", column.name)))?)
    .clone();
    for &child in &column.children {
        let parent = array.as_struct_opt().ok_or_else(|| Error::internal("a filter path goes through a non-struct"))?;
        let inner = parent.column(child).clone();
        let nulls = NullBuffer::union(parent.nulls(), inner.logical_nulls().as_ref());
        array = match nulls {
            Some(nulls) if nulls.null_count() > 0 && nulls.null_count() != inner.null_count() => {
                let data = inner.to_data().into_builder().nulls(Some(nulls)).build()?;
                arrow_array::make_array(data)
            }
            _ => inner,
        };
    }
    Ok(array)
}

fn validity(array: &ArrayRef, len: usize) -> BooleanBuffer {
    match array.logical_nulls() {
        Some(nulls) => nulls.inner().clone(),
        None => BooleanBuffer::new_set(len),
    }
}

fn compare(array: &ArrayRef, op: CompareOp, value: &ArrayRef) -> Result<Truth> {
    match array.data_type() {
        DataType::Float32 => {
            let values = array.as_primitive::<Float32Type>().values();
            Ok(compare_doubles(array, op, value, |i| values[i] as f64))
        }
        DataType::Float64 => {
            let values = array.as_primitive::<Float64Type>().values();
            Ok(compare_doubles(array, op, value, |i| values[i]))
        }
        _ => {
            let constant = Scalar::new(value.clone());
            let result = match op {
                CompareOp::Eq => arrow_ord::cmp::eq(array, &constant),
                CompareOp::NotEq => arrow_ord::cmp::neq(array, &constant),
                CompareOp::Lt => arrow_ord::cmp::lt(array, &constant),
                CompareOp::LtEq => arrow_ord::cmp::lt_eq(array, &constant),
                CompareOp::Gt => arrow_ord::cmp::gt(array, &constant),
                CompareOp::GtEq => arrow_ord::cmp::gt_eq(array, &constant),
            }?;
            Ok(Truth::of(&result))
        }
    }
}

/// A constant bound to a column's stored type, in the type the read returned the column in:
/// strings and binaries as views (a read with `string_view`), decimals of up to 18 digits as
/// `Decimal64` (a filtered read's stages); other constants unchanged.
///
/// # Errors
/// [`Error::Internal`] for a decimal constant beyond 18 digits (binding keeps constants within
/// the column's precision).
fn as_column_type(array: &ArrayRef, value: &ArrayRef) -> Result<ArrayRef> {
    Ok(match (array.data_type(), value.data_type()) {
        (DataType::Utf8View, DataType::Utf8) => Arc::new(StringViewArray::from_iter(value.as_string::<i32>())),
        (DataType::Utf8View, DataType::LargeUtf8) => Arc::new(StringViewArray::from_iter(value.as_string::<i64>())),
        (DataType::BinaryView, DataType::Binary) => Arc::new(BinaryViewArray::from_iter(value.as_binary::<i32>())),
        (DataType::BinaryView, DataType::LargeBinary) => Arc::new(BinaryViewArray::from_iter(value.as_binary::<i64>())),
        (DataType::Decimal64(..), DataType::Decimal128(..)) => {
            let narrow = value
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(i64::try_from).transpose())
                .collect::<std::result::Result<Decimal64Array, _>>()
                .map_err(|_| Error::internal("a decimal constant beyond 18 digits compared with a Decimal64 column"))?;
            Arc::new(narrow.with_data_type(array.data_type().clone()))
        }
        _ => value.clone(),
    })
}

/// IEEE 754 comparison of a float column with a double constant.
fn compare_doubles(array: &ArrayRef, op: CompareOp, value: &ArrayRef, at: impl Fn(usize) -> f64) -> Truth {
    let constant = value.as_primitive_opt::<Float64Type>().map_or(f64::NAN, |v| v.value(0));
    let holds = |i: usize| {
        let v = at(i);
        match op {
            CompareOp::Eq => v == constant,
            CompareOp::NotEq => v != constant,
            CompareOp::Lt => v < constant,
            CompareOp::LtEq => v <= constant,
            CompareOp::Gt => v > constant,
            CompareOp::GtEq => v >= constant,
        }
    };
    let bits = BooleanBuffer::collect_bool(array.len(), holds);
    Truth::of(&BooleanArray::new(bits, array.logical_nulls()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int32Array};
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::filter::Predicate;

    #[test]
    fn kleene_logic_and_nan() {
        let schema =
            Schema::new(vec![Field::new("i", DataType::Int32, true), Field::new("f", DataType::Float64, true)]);
        let i: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(4)]));
        let f: ArrayRef = Arc::new(Float64Array::from(vec![Some(f64::NAN), Some(1.0), None, Some(-0.0)]));
        let columns: FilterColumns = [(0, &i), (1, &f)].into_iter().collect();
        let run = |p: Predicate| {
            let bound = BoundPredicate::bind(&p, schema.fields()).unwrap();
            evaluate(&bound, &columns, 4).unwrap().iter().collect::<Vec<_>>()
        };
        let lit = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v])) };
        let int = |v: i32| -> ArrayRef { Arc::new(Int32Array::from(vec![v])) };
        let cmp = |c: &str, op, value| Predicate::Compare { column: vec![c.to_string()], op, value };
        // NaN != 0 is true, -0.0 == 0.0, nulls never selected.
        assert_eq!(run(cmp("f", CompareOp::NotEq, lit(0.0))), vec![true, true, false, false]);
        assert_eq!(run(cmp("f", CompareOp::Eq, lit(0.0))), vec![false, false, false, true]);
        // NOT (i > 2): null stays null.
        assert_eq!(run(cmp("i", CompareOp::Gt, int(2)).not()), vec![true, false, false, false]);
        // null OR true is true.
        assert_eq!(
            run(cmp("i", CompareOp::Gt, int(2)).or(cmp("f", CompareOp::Eq, lit(1.0)))),
            vec![false, true, true, true]
        );
    }
}
