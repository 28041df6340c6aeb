//! [`ValueExpr`]: the values an aggregate reads, a column or exact arithmetic of columns and
//! constants, and [`BoundExpr`], one bound to a schema and evaluated a batch at a time.
//!
//! The arithmetic is Spark SQL's on exact numbers, so that a partial aggregate computed here
//! equals the one Spark would compute:
//! - integers of one width give that width: wrapped on overflow, or an error with `ansi`;
//! - decimals give Spark's result type (`+`/`-`: the larger scale and one more integer digit;
//!   `*`: the sum of precisions plus one and of scales; above 38 digits, with
//!   `precision_loss`, the scale is cut to leave the integer digits room but never below 6,
//!   else both are capped at 38) and the exact value rounded half up to its scale; a value
//!   beyond the precision is null, or an error with `ansi`;
//! - a cast to a decimal rounds half up and overflows the same way.
//!
//! Anything else (floats, mixed integer and decimal operands without a cast, casts between
//! other types) is refused when binding, so that a caller can leave it to its own engine.

use arrow_array::cast::AsArray;
use arrow_array::types::Decimal128Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, i256};
use arrow_schema::{DataType, Schema};

use crate::error::{Error, Result};

/// Spark's largest decimal precision.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// Spark's smallest scale kept when a product or sum would exceed 38 digits.
const MIN_ADJUSTED_SCALE: i8 = 6;

/// A value computed from a row's columns.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueExpr {
    /// A top-level column.
    Column(String),
    /// A constant: a one-value array of an integer or decimal type.
    Literal(ArrayRef),
    /// The sum of two values of the same kind.
    Add(Box<ValueExpr>, Box<ValueExpr>),
    /// The difference of two values of the same kind.
    Subtract(Box<ValueExpr>, Box<ValueExpr>),
    /// The product of two values of the same kind.
    Multiply(Box<ValueExpr>, Box<ValueExpr>),
    /// A value converted to `Decimal128` or `Int64`.
    Cast(Box<ValueExpr>, DataType),
}

/// How arithmetic treats what does not fit (Spark's `spark.sql.ansi.enabled` and
/// `spark.sql.decimalOperations.allowPrecisionLoss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arithmetic {
    /// An overflow is an error (else: a null, or a wrapped integer).
    pub ansi: bool,
    /// A decimal result above 38 digits loses scale (else: precision and scale capped at 38).
    pub precision_loss: bool,
}

impl Default for Arithmetic {
    fn default() -> Self {
        Self { ansi: true, precision_loss: true }
    }
}

/// The kind of number a bound expression yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    /// A signed integer, or a date or timestamp.
    Integer {
        /// Its width.
        bits: u32,
        /// False for dates and timestamps: compared, never added.
        arithmetic: bool,
    },
    /// A decimal.
    Decimal {
        /// Its digits.
        precision: u8,
        /// Its digits after the point.
        scale: i8,
    },
}

impl NumberKind {
    /// The smallest and largest value of the kind.
    fn limits(self) -> (i128, i128) {
        match self {
            NumberKind::Integer { bits, .. } => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            NumberKind::Decimal { precision, .. } => {
                let max = 10i128.pow(u32::from(precision)) - 1;
                (-max, max)
            }
        }
    }
}

/// Values of one batch: the numbers as `i128` (integers widened, decimals unscaled), with
/// their nulls.
#[derive(Debug, Clone)]
pub struct Numbers {
    /// One number a row; unspecified where null.
    pub values: Vec<i128>,
    /// `None` when no row is null.
    pub nulls: Option<NullBuffer>,
}

#[cfg(test)]
impl Numbers {
    fn is_valid(&self, row: usize) -> bool {
        self.nulls.as_ref().is_none_or(|n| n.is_valid(row))
    }
}

/// A [`ValueExpr`] bound to a schema: its result type is known and it evaluates batches.
#[derive(Debug, Clone)]
pub struct BoundExpr {
    node: Node,
    kind: NumberKind,
    data_type: DataType,
}

#[derive(Debug, Clone)]
enum Node {
    /// A column, by index in the batches handed to [`BoundExpr::evaluate`].
    Column {
        name: String,
    },
    Literal(Option<i128>),
    Binary {
        op: Op,
        left: Box<BoundExpr>,
        right: Box<BoundExpr>,
    },
    Cast(Box<BoundExpr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Subtract,
    Multiply,
}

fn refused(what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("aggregate: {what}"))
}

fn number_kind(data_type: &DataType) -> Option<NumberKind> {
    let integer = |bits, arithmetic| Some(NumberKind::Integer { bits, arithmetic });
    match data_type {
        DataType::Int8 => integer(8, true),
        DataType::Int16 => integer(16, true),
        DataType::Int32 => integer(32, true),
        DataType::Int64 => integer(64, true),
        DataType::Date32 => integer(32, false),
        DataType::Timestamp(_, _) | DataType::Date64 => integer(64, false),
        DataType::Decimal128(precision, scale) if *scale >= 0 => {
            Some(NumberKind::Decimal { precision: *precision, scale: *scale })
        }
        _ => None,
    }
}

impl ValueExpr {
    /// Binds the expression to `schema`'s top-level columns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a column the schema does not have; [`Error::Unsupported`]
    /// for a type or an operation outside the arithmetic above.
    pub fn bind(&self, schema: &Schema, arithmetic: Arithmetic) -> Result<BoundExpr> {
        match self {
            ValueExpr::Column(name) => {
                let field = schema
                    .field_with_name(name)
                    .map_err(|_| Error::invalid_argument(format!("aggregate: no column {name:?}")))?;
                let kind = number_kind(field.data_type())
                    .ok_or_else(|| refused(format!("column {name:?} is {}, not an exact number", field.data_type())))?;
                Ok(BoundExpr { node: Node::Column { name: name.clone() }, kind, data_type: field.data_type().clone() })
            }
            ValueExpr::Literal(array) => {
                let data_type = array.data_type().clone();
                let kind = number_kind(&data_type)
                    .filter(|k| !matches!(k, NumberKind::Integer { arithmetic: false, .. }))
                    .ok_or_else(|| refused(format!("a constant of type {data_type}")))?;
                if array.len() != 1 {
                    return Err(Error::invalid_argument("aggregate: a constant must be one value"));
                }
                let value = if array.is_null(0) { None } else { Some(Numbers::of(array)?.values[0]) };
                Ok(BoundExpr { node: Node::Literal(value), kind, data_type })
            }
            ValueExpr::Add(l, r) => binary(Op::Add, l, r, schema, arithmetic),
            ValueExpr::Subtract(l, r) => binary(Op::Subtract, l, r, schema, arithmetic),
            ValueExpr::Multiply(l, r) => binary(Op::Multiply, l, r, schema, arithmetic),
            ValueExpr::Cast(value, to) => {
                let value = value.bind(schema, arithmetic)?;
                let kind = match (value.kind, to) {
                    (
                        NumberKind::Decimal { .. } | NumberKind::Integer { arithmetic: true, .. },
                        DataType::Decimal128(p, s),
                    ) if *s >= 0 && (1..=MAX_DECIMAL_PRECISION).contains(p) && (*s as u8) <= *p => {
                        NumberKind::Decimal { precision: *p, scale: *s }
                    }
                    (NumberKind::Integer { arithmetic: true, .. }, DataType::Int64) => {
                        NumberKind::Integer { bits: 64, arithmetic: true }
                    }
                    _ => return Err(refused(format!("a cast from {} to {to}", value.data_type))),
                };
                Ok(BoundExpr { node: Node::Cast(Box::new(value)), kind, data_type: to.clone() })
            }
        }
    }
}

fn binary(op: Op, left: &ValueExpr, right: &ValueExpr, schema: &Schema, arithmetic: Arithmetic) -> Result<BoundExpr> {
    let left = left.bind(schema, arithmetic)?;
    let right = right.bind(schema, arithmetic)?;
    let kind = match (left.kind, right.kind) {
        (NumberKind::Integer { bits: a, arithmetic: true }, NumberKind::Integer { bits: b, arithmetic: true })
            if a == b =>
        {
            left.kind
        }
        (NumberKind::Decimal { precision: p1, scale: s1 }, NumberKind::Decimal { precision: p2, scale: s2 }) => {
            let (p1, s1, p2, s2) = (i32::from(p1), i32::from(s1), i32::from(p2), i32::from(s2));
            let (precision, scale) = match op {
                Op::Add | Op::Subtract => {
                    let scale = s1.max(s2);
                    ((p1 - s1).max(p2 - s2) + scale + 1, scale)
                }
                Op::Multiply => (p1 + p2 + 1, s1 + s2),
            };
            let (precision, scale) = result_decimal(precision, scale, arithmetic.precision_loss);
            NumberKind::Decimal { precision, scale }
        }
        _ => {
            return Err(refused(format!(
                "arithmetic of {} and {} (operands of one kind, cast as needed)",
                left.data_type, right.data_type
            )));
        }
    };
    let data_type = match kind {
        NumberKind::Decimal { precision, scale } => DataType::Decimal128(precision, scale),
        NumberKind::Integer { .. } => left.data_type.clone(),
    };
    Ok(BoundExpr { node: Node::Binary { op, left: Box::new(left), right: Box::new(right) }, kind, data_type })
}

/// Spark's `DecimalType.adjustPrecisionScale` (with precision loss) or `bounded` (without).
fn result_decimal(precision: i32, scale: i32, precision_loss: bool) -> (u8, i8) {
    let max = i32::from(MAX_DECIMAL_PRECISION);
    if precision <= max {
        return (precision as u8, scale as i8);
    }
    if !precision_loss {
        return (MAX_DECIMAL_PRECISION, scale.min(max) as i8);
    }
    let integer_digits = precision - scale;
    let min_scale = scale.min(i32::from(MIN_ADJUSTED_SCALE));
    (MAX_DECIMAL_PRECISION, (max - integer_digits).max(min_scale) as i8)
}

impl Numbers {
    /// The numbers of an integer, date, timestamp or `Decimal128` array.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for another type.
    pub fn of(array: &ArrayRef) -> Result<Self> {
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        let data = array.to_data();
        let widen = |width: usize| -> Vec<i128> {
            let bytes = &data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width];
            match width {
                1 => bytes.iter().map(|b| i128::from(*b as i8)).collect(),
                2 => bytes.chunks_exact(2).map(|c| i128::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
                4 => bytes.chunks_exact(4).map(|c| i128::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
                _ => bytes
                    .chunks_exact(8)
                    .map(|c| i128::from(i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])))
                    .collect(),
            }
        };
        let values = match array.data_type() {
            DataType::Int8 => widen(1),
            DataType::Int16 => widen(2),
            DataType::Int32 | DataType::Date32 => widen(4),
            DataType::Int64 | DataType::Date64 | DataType::Timestamp(_, _) => widen(8),
            DataType::Decimal128(_, _) => array.as_primitive::<Decimal128Type>().values().to_vec(),
            other => return Err(refused(format!("{other} is not an exact number"))),
        };
        Ok(Self { values, nulls })
    }
}

fn pow10(exponent: i32) -> i128 {
    10i128.pow(exponent.unsigned_abs())
}

/// `value` (at some scale) divided by `divisor` (a power of ten), rounded half up (away from
/// zero on a tie), as `java.math.RoundingMode.HALF_UP` and so Spark do.
fn divide_half_up(value: i256, divisor: i256) -> Option<i256> {
    let quotient = value.checked_div(divisor)?;
    let remainder = value.checked_rem(divisor)?;
    let twice = remainder.checked_mul(i256::from_i128(2))?.wrapping_abs();
    if twice >= divisor {
        quotient.checked_add(if value.is_negative() { i256::MINUS_ONE } else { i256::ONE })
    } else {
        Some(quotient)
    }
}

impl BoundExpr {
    /// The kind of number the expression yields.
    pub fn kind(&self) -> NumberKind {
        self.kind
    }

    /// The Arrow type of the expression's values.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// The columns the expression reads, each once, in order of first use.
    pub fn columns(&self, out: &mut Vec<String>) {
        match &self.node {
            Node::Column { name } => {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
            Node::Literal(_) => {}
            Node::Binary { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
            Node::Cast(value) => value.columns(out),
        }
    }

    fn scale(&self) -> i8 {
        match self.kind {
            NumberKind::Decimal { scale, .. } => scale,
            NumberKind::Integer { .. } => 0,
        }
    }

    /// The expression's values on `batch`, which holds (at least) the columns it reads, by name.
    ///
    /// # Errors
    /// An overflow with `ansi` ([`Error::InvalidArgument`], naming the type); a missing column.
    pub fn evaluate(&self, batch: &RecordBatch, arithmetic: Arithmetic) -> Result<Numbers> {
        let rows = batch.num_rows();
        match &self.node {
            Node::Column { name } => {
                let column = batch
                    .column_by_name(name)
                    .ok_or_else(|| Error::internal(format!("aggregate: batch without column {name:?}")))?;
                Numbers::of(column)
            }
            Node::Literal(value) => Ok(match value {
                Some(v) => Numbers { values: vec![*v; rows], nulls: None },
                None => Numbers { values: vec![0; rows], nulls: Some(NullBuffer::new_null(rows)) },
            }),
            Node::Cast(value) => {
                let input = value.evaluate(batch, arithmetic)?;
                let from = value.scale();
                self.finish(
                    &input.values,
                    &input.values,
                    input.nulls,
                    arithmetic,
                    from,
                    |x, _| Some(x),
                    |x, _| Some(i256::from_i128(x)),
                )
            }
            Node::Binary { op, left, right } => {
                let a = left.evaluate(batch, arithmetic)?;
                let b = right.evaluate(batch, arithmetic)?;
                let nulls = NullBuffer::union(a.nulls.as_ref(), b.nulls.as_ref());
                let (scale_a, scale_b) = (left.scale(), right.scale());
                match op {
                    Op::Multiply => self.finish(
                        &a.values,
                        &b.values,
                        nulls,
                        arithmetic,
                        scale_a + scale_b,
                        |x, y| x.checked_mul(y),
                        |x, y| i256::from_i128(x).checked_mul(i256::from_i128(y)),
                    ),
                    Op::Add | Op::Subtract => {
                        // Both operands brought to the larger scale, then added exactly.
                        let natural = scale_a.max(scale_b);
                        let (up_a, up_b) = (pow10(i32::from(natural - scale_a)), pow10(i32::from(natural - scale_b)));
                        let sign = if *op == Op::Add { 1 } else { -1 };
                        self.finish(
                            &a.values,
                            &b.values,
                            nulls,
                            arithmetic,
                            natural,
                            |x, y| x.checked_mul(up_a)?.checked_add(y.checked_mul(up_b)?.checked_mul(sign)?),
                            |x, y| {
                                let x = i256::from_i128(x).checked_mul(i256::from_i128(up_a))?;
                                let y = i256::from_i128(y).checked_mul(i256::from_i128(up_b * sign))?;
                                x.checked_add(y)
                            },
                        )
                    }
                }
            }
        }
    }

    /// Computes `exact(a[i], b[i])` at scale `from` for each valid row and brings it to this
    /// expression's kind: rounded half up to its scale, then checked against its limits. `fast`
    /// is the same computation in `i128`, `None` where it does not fit (then `exact` runs, in
    /// 256 bits, `None` where even that does not fit: an overflow).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        a: &[i128],
        b: &[i128],
        nulls: Option<NullBuffer>,
        arithmetic: Arithmetic,
        from: i8,
        fast: impl Fn(i128, i128) -> Option<i128>,
        exact: impl Fn(i128, i128) -> Option<i256>,
    ) -> Result<Numbers> {
        let to = self.scale();
        let (min, max) = self.kind.limits();
        let integer_bits = match self.kind {
            NumberKind::Integer { bits, .. } => Some(bits),
            NumberKind::Decimal { .. } => None,
        };
        // A scale can only go down (precision loss) or up (a cast); the fast path covers the
        // cases without rounding.
        let up = if to >= from { Some(pow10(i32::from(to - from))) } else { None };
        let down = i256::from_i128(pow10(i32::from(from - to).max(0)));
        let mut values = Vec::with_capacity(a.len());
        let mut overflowed: Vec<usize> = Vec::new();
        for (row, (x, y)) in a.iter().zip(b).enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                values.push(0);
                continue;
            }
            let quick = up.and_then(|up| fast(*x, *y)?.checked_mul(up)).filter(|v| (min..=max).contains(v));
            if let Some(v) = quick {
                values.push(v);
                continue;
            }
            let wide = exact(*x, *y).and_then(|v| match up {
                Some(up) => v.checked_mul(i256::from_i128(up)),
                None => divide_half_up(v, down),
            });
            match wide.and_then(|v| v.to_i128()).filter(|v| (min..=max).contains(v)) {
                Some(v) => values.push(v),
                None if arithmetic.ansi => {
                    return Err(Error::invalid_argument(format!(
                        "aggregate: arithmetic overflow: a value does not fit {} (ANSI mode)",
                        self.data_type
                    )));
                }
                None => match (integer_bits, wide) {
                    // Integers wrap, as Java's do.
                    (Some(bits), Some(v)) => {
                        let shift = 128 - bits;
                        values.push((v.as_i128() << shift) >> shift);
                    }
                    _ => {
                        values.push(0);
                        overflowed.push(row);
                    }
                },
            }
        }
        let nulls = if overflowed.is_empty() {
            nulls
        } else {
            let mut valid = BooleanBufferBuilder::new(a.len());
            valid.append_n(a.len(), true);
            for row in overflowed {
                valid.set_bit(row, false);
            }
            NullBuffer::union(nulls.as_ref(), Some(&NullBuffer::new(valid.finish())))
        };
        Ok(Numbers { values, nulls })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use arrow_array::{Decimal128Array, Int32Array};
    use arrow_schema::Field;

    fn decimal(values: Vec<Option<i128>>, precision: u8, scale: i8) -> ArrayRef {
        Arc::new(Decimal128Array::from(values).with_precision_and_scale(precision, scale).unwrap())
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = columns.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.into_iter().map(|(_, a)| a).collect()).unwrap()
    }

    fn column(name: &str) -> Box<ValueExpr> {
        Box::new(ValueExpr::Column(name.into()))
    }

    #[test]
    fn decimal_result_types_follow_spark() {
        // decimal(15,2) * (decimal(1,0) - decimal(15,2)) is decimal(32,4); times decimal(16,2)
        // would be (49,6), adjusted to (38,6).
        let b = batch(vec![("p", decimal(vec![Some(1)], 15, 2)), ("d", decimal(vec![Some(1)], 15, 2))]);
        let one = Box::new(ValueExpr::Literal(decimal(vec![Some(1)], 1, 0)));
        let discounted = ValueExpr::Multiply(column("p"), Box::new(ValueExpr::Subtract(one.clone(), column("d"))));
        let bound = discounted.bind(&b.schema(), Arithmetic::default()).unwrap();
        assert_eq!(bound.data_type(), &DataType::Decimal128(32, 4));
        let taxed = ValueExpr::Multiply(Box::new(discounted), Box::new(ValueExpr::Add(one, column("d"))));
        assert_eq!(taxed.bind(&b.schema(), Arithmetic::default()).unwrap().data_type(), &DataType::Decimal128(38, 6));
        let no_loss = Arithmetic { ansi: true, precision_loss: false };
        assert_eq!(taxed.bind(&b.schema(), no_loss).unwrap().data_type(), &DataType::Decimal128(38, 6));
        // (38,10) * (38,10): 77 digits, 20 of scale: 57 integer digits leave none, so the scale is 6.
        assert_eq!(result_decimal(77, 20, true), (38, 6));
        assert_eq!(result_decimal(77, 20, false), (38, 20));
        assert_eq!(result_decimal(40, 2, true), (38, 2));
    }

    #[test]
    fn arithmetic_is_exact_and_rounds_half_up() {
        let b = batch(vec![
            ("a", decimal(vec![Some(12_345), Some(-12_345), None, Some(5)], 10, 4)),
            ("b", decimal(vec![Some(3), Some(3), Some(1), Some(-15)], 10, 1)),
        ]);
        let arithmetic = Arithmetic::default();
        let sum = ValueExpr::Add(column("a"), column("b")).bind(&b.schema(), arithmetic).unwrap();
        assert_eq!(sum.data_type(), &DataType::Decimal128(14, 4));
        let got = sum.evaluate(&b, arithmetic).unwrap();
        assert_eq!(&got.values[..2], &[12_345 + 3_000, -12_345 + 3_000]);
        assert!(!got.is_valid(2));
        assert_eq!(got.values[3], 5 - 15_000);
        // A cast to fewer digits of scale rounds half up, away from zero on a tie.
        let cast = ValueExpr::Cast(column("a"), DataType::Decimal128(10, 1)).bind(&b.schema(), arithmetic).unwrap();
        let got = cast.evaluate(&b, arithmetic).unwrap();
        assert_eq!(&got.values[..2], &[12, -12]);
        let cast = ValueExpr::Cast(column("a"), DataType::Decimal128(10, 3)).bind(&b.schema(), arithmetic).unwrap();
        let got = cast.evaluate(&b, arithmetic).unwrap();
        assert_eq!(&got.values[..2], &[1_235, -1_235]);
        assert_eq!(got.values[3], 1);
    }

    #[test]
    fn overflow_is_null_or_an_error_and_integers_wrap() {
        let big = 10i128.pow(37) * 9;
        let b = batch(vec![
            ("x", decimal(vec![Some(big), Some(1)], 38, 0)),
            ("i", Arc::new(Int32Array::from(vec![i32::MAX, 2])) as ArrayRef),
        ]);
        let lenient = Arithmetic { ansi: false, precision_loss: true };
        let doubled = ValueExpr::Add(column("x"), column("x")).bind(&b.schema(), lenient).unwrap();
        let got = doubled.evaluate(&b, lenient).unwrap();
        assert!(!got.is_valid(0));
        assert_eq!(got.values[1], 2);
        assert!(doubled.evaluate(&b, Arithmetic::default()).is_err());
        let wrapped = ValueExpr::Add(column("i"), column("i")).bind(&b.schema(), lenient).unwrap();
        assert_eq!(wrapped.evaluate(&b, lenient).unwrap().values, vec![i128::from(i32::MAX.wrapping_add(i32::MAX)), 4]);
        assert!(wrapped.evaluate(&b, Arithmetic::default()).is_err());
        // A product past 128 bits whose rounded value fits: (38,10) * (38,10) → (38,6).
        let b = batch(vec![("y", decimal(vec![Some(10i128.pow(25))], 38, 10))]);
        let square = ValueExpr::Multiply(column("y"), column("y")).bind(&b.schema(), lenient).unwrap();
        assert_eq!(square.data_type(), &DataType::Decimal128(38, 6));
        // 10^15 squared is 10^30: 10^50 at scale 20, past 128 bits; 10^36 at scale 6.
        assert_eq!(square.evaluate(&b, lenient).unwrap().values, vec![10i128.pow(36)]);
    }

    #[test]
    fn mixed_kinds_are_refused() {
        let b =
            batch(vec![("x", decimal(vec![Some(1)], 10, 2)), ("i", Arc::new(Int32Array::from(vec![1])) as ArrayRef)]);
        let err = ValueExpr::Add(column("x"), column("i")).bind(&b.schema(), Arithmetic::default()).unwrap_err();
        assert!(err.to_string().contains("operands of one kind"), "{err}");
        let cast = ValueExpr::Add(column("x"), Box::new(ValueExpr::Cast(column("i"), DataType::Decimal128(10, 0))));
        assert_eq!(cast.bind(&b.schema(), Arithmetic::default()).unwrap().data_type(), &DataType::Decimal128(13, 2));
    }
}
