//! Binding a [`Predicate`] to a file's schema: columns resolved, constants brought to the
//! column's own type.
//!
//! A comparison is evaluated, and checked against statistics, in the column's type, so that
//! neither the column nor its statistics are ever cast. The constant is converted instead, and
//! where it has no exact value of the column's type the comparison is rewritten to an
//! equivalent one: `int_column < 2.5` is `int_column <= 2`, `int8_column < 1000` is true for
//! every non-null value, `decimal(15, 2)_column < 0.07` (a double) keeps the decimals whose
//! double is below 0.07 — what Arrow computes by casting the column, without the cast.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Decimal128Array, LargeBinaryArray, LargeStringArray,
    PrimitiveArray, StringArray, StringViewArray,
};
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use super::predicate::{ColumnPath, CompareOp, NullMatching, Predicate, dotted};
use crate::error::{Error, Result, bail};

/// A column a bound predicate reads.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundColumn {
    /// The top-level field's index in the file's schema.
    pub field: usize,
    /// Indices of struct children below it.
    pub children: Vec<usize>,
    /// Dotted path, for messages.
    pub name: String,
    /// The column's type (of its values, for a dictionary).
    pub value_type: DataType,
}

impl BoundColumn {
    /// Whether this is a top-level column.
    pub fn is_top_level(&self) -> bool {
        self.children.is_empty()
    }
}

/// A predicate bound to a schema (see the module documentation).
#[derive(Debug, Clone)]
pub enum BoundPredicate {
    /// `column <op> value`, `value` a one-element array of the column's value type (Float64
    /// for float columns, which are compared as doubles).
    Compare {
        /// The column.
        column: BoundColumn,
        /// The comparison.
        op: CompareOp,
        /// The constant.
        value: ArrayRef,
    },
    /// `column` holds exactly `value` (of the column's float type), NaN included and -0.0
    /// apart from 0.0: how `IN` matches floats.
    Same {
        /// The column.
        column: BoundColumn,
        /// The value, a one-element array of the column's type.
        value: ArrayRef,
    },
    /// True (or false) for every non-null value of the column, null for its nulls: a
    /// comparison no value of the column's type can fail (or pass).
    NonNull {
        /// The column.
        column: BoundColumn,
        /// The answer for non-null values.
        value: bool,
    },
    /// `column IN set`: each part tests one value of the set.
    In {
        /// The column.
        column: BoundColumn,
        /// One equality test per non-null value of the set.
        parts: Vec<BoundPredicate>,
        /// Whether the set holds a null.
        set_has_null: bool,
        /// What nulls give.
        nulls: NullMatching,
    },
    /// `column IS NULL`
    IsNull(BoundColumn),
    /// `column IS NOT NULL`
    IsNotNull(BoundColumn),
    /// A boolean column.
    Column(BoundColumn),
    /// A constant.
    Literal(Option<bool>),
    /// Conjunction.
    And(Vec<BoundPredicate>),
    /// Disjunction.
    Or(Vec<BoundPredicate>),
    /// Negation.
    Not(Box<BoundPredicate>),
}

impl BoundPredicate {
    /// The predicate as a *filter*, without the `IS NOT NULL` tests of a top-level `AND` whose
    /// column another part of that `AND` compares: the comparison is null wherever the column
    /// is, and a filter keeps only the rows where the predicate is true, so the same rows pass.
    /// (Spark adds such a test for every column a filter compares; without it the column's
    /// comparisons can run on its encoded pages, see `range_test.rs`.) Not equivalent as a
    /// value (false becomes null), so never used under a `NOT` or for anything but filtering.
    pub(crate) fn into_filter(self) -> Self {
        let BoundPredicate::And(parts) = self else { return self };
        let mut flat = Vec::with_capacity(parts.len());
        let mut stack: Vec<BoundPredicate> = parts.into_iter().rev().collect();
        while let Some(part) = stack.pop() {
            match part {
                BoundPredicate::And(inner) => stack.extend(inner.into_iter().rev()),
                other => flat.push(other),
            }
        }
        let compared: Vec<BoundColumn> = flat
            .iter()
            .filter_map(|part| match part {
                BoundPredicate::Compare { column, .. } | BoundPredicate::NonNull { column, .. } => Some(column.clone()),
                _ => None,
            })
            .collect();
        flat.retain(|part| !matches!(part, BoundPredicate::IsNotNull(column) if compared.contains(column)));
        match flat.len() {
            1 => flat.pop().unwrap_or(BoundPredicate::Literal(Some(true))),
            _ => BoundPredicate::And(flat),
        }
    }

    /// Binds `predicate` to the fields of a schema.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the part of the predicate that names an unknown
    /// column, compares values that cannot be compared, or uses a type filters do not support.
    pub fn bind(predicate: &Predicate, fields: &Fields) -> Result<Self> {
        Ok(match predicate {
            Predicate::Compare { column, op, value } => {
                let column = resolve(column, fields)?;
                compare(&column, *op, value).map_err(|e| in_part(e, predicate))?
            }
            Predicate::In { column, values, nulls } => {
                let column = resolve(column, fields)?;
                // Logical nulls: a set of type null holds only nulls.
                let valid = values.logical_nulls();
                let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v.is_valid(i));
                let mut parts = Vec::new();
                for i in (0..values.len()).filter(|i| is_valid(*i)) {
                    let value = values.slice(i, 1);
                    let part = match float_of_type(&column.value_type, &value) {
                        // Set membership matches values as stored, as Arrow's hash lookup does:
                        // NaN is in a set holding NaN, -0.0 is not in a set holding 0.0.
                        Some(value) => Self::Same { column: column.clone(), value },
                        None => compare(&column, CompareOp::Eq, &value).map_err(|e| in_part(e, predicate))?,
                    };
                    parts.push(part);
                }
                let set_has_null = valid.is_some_and(|v| v.null_count() > 0);
                Self::In { column, parts, set_has_null, nulls: *nulls }
            }
            Predicate::IsNull(column) => Self::IsNull(resolve(column, fields)?),
            Predicate::IsNotNull(column) => Self::IsNotNull(resolve(column, fields)?),
            Predicate::Column(column) => {
                let column = resolve(column, fields)?;
                if column.value_type != DataType::Boolean {
                    bail!(invalid, "filter: column {:?} of type {} is not a boolean", column.name, column.value_type);
                }
                Self::Column(column)
            }
            Predicate::Literal(value) => Self::Literal(*value),
            Predicate::And(parts) => Self::And(parts.iter().map(|p| Self::bind(p, fields)).collect::<Result<_>>()?),
            Predicate::Or(parts) => Self::Or(parts.iter().map(|p| Self::bind(p, fields)).collect::<Result<_>>()?),
            Predicate::Not(part) => Self::Not(Box::new(Self::bind(part, fields)?)),
        })
    }

    /// The distinct top-level fields the predicate reads, in schema order.
    pub fn fields(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |c| out.push(c.field));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Calls `f` with every column the predicate reads (repeats included).
    pub fn visit(&self, f: &mut impl FnMut(&BoundColumn)) {
        match self {
            Self::Compare { column, .. } | Self::NonNull { column, .. } | Self::In { column, .. } => f(column),
            Self::Same { column, .. } => f(column),
            Self::IsNull(column) | Self::IsNotNull(column) | Self::Column(column) => f(column),
            Self::Literal(_) => {}
            Self::And(parts) | Self::Or(parts) => parts.iter().for_each(|p| p.visit(f)),
            Self::Not(part) => part.visit(f),
        }
    }
}

fn in_part(error: Error, predicate: &Predicate) -> Error {
    match error {
        Error::InvalidArgument { location, message } => {
            Error::InvalidArgument { location, message: format!("{message} (in `{predicate}`)") }
        }
        other => other,
    }
}

/// Resolves a path of field names.
fn resolve(path: &ColumnPath, fields: &Fields) -> Result<BoundColumn> {
    let name = dotted(path);
    let unknown = || Error::invalid_argument(format!("filter: no column {name:?} in the file"));
    let (first, rest) = path.split_first().ok_or_else(unknown)?;
    let field_index = fields.iter().position(|f| f.name() == first).ok_or_else(unknown)?;
    let mut field: &Field = &fields[field_index];
    let mut children = Vec::new();
    for name in rest {
        let DataType::Struct(kids) = field.data_type() else { return Err(unknown()) };
        let index = kids.iter().position(|f| f.name() == name).ok_or_else(unknown)?;
        children.push(index);
        field = &kids[index];
    }
    let value_type = match field.data_type() {
        DataType::Dictionary(_, value) => value.as_ref().clone(),
        other => other.clone(),
    };
    Ok(BoundColumn { field: field_index, children, name, value_type })
}

/// A column's values as the integers they are ordered by, with the range of the type.
#[derive(Debug, Clone, Copy)]
enum Ordered {
    /// Integers of the type's range.
    Integer { min: i128, max: i128 },
    /// Decimals: integers scaled by `10^-scale`, at most `precision` digits.
    Decimal { precision: u8, scale: i8 },
    /// Instants or spans counted in units of `unit_ns` nanoseconds.
    Temporal { family: Temporal, unit_ns: i128, min: i128, max: i128 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Temporal {
    /// Dates and timestamps (instants).
    Instant,
    /// Times of day.
    TimeOfDay,
    /// Durations.
    Duration,
}

fn unit_ns(unit: TimeUnit) -> i128 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

fn ordered(data_type: &DataType) -> Option<Ordered> {
    use DataType::*;
    let int = |min: i128, max: i128| Some(Ordered::Integer { min, max });
    let temporal = |family, unit_ns, min: i128, max: i128| Some(Ordered::Temporal { family, unit_ns, min, max });
    let (i32_min, i32_max, i64_min, i64_max) = (i32::MIN as i128, i32::MAX as i128, i64::MIN as i128, i64::MAX as i128);
    match data_type {
        Int8 => int(i8::MIN as i128, i8::MAX as i128),
        Int16 => int(i16::MIN as i128, i16::MAX as i128),
        Int32 => int(i32_min, i32_max),
        Int64 => int(i64_min, i64_max),
        UInt8 => int(0, u8::MAX as i128),
        UInt16 => int(0, u16::MAX as i128),
        UInt32 => int(0, u32::MAX as i128),
        UInt64 => int(0, u64::MAX as i128),
        Decimal128(precision, scale) => Some(Ordered::Decimal { precision: *precision, scale: *scale }),
        Date32 => temporal(Temporal::Instant, 86_400 * 1_000_000_000, i32_min, i32_max),
        Date64 => temporal(Temporal::Instant, 1_000_000, i64_min, i64_max),
        Timestamp(unit, _) => temporal(Temporal::Instant, unit_ns(*unit), i64_min, i64_max),
        Time32(unit) => temporal(Temporal::TimeOfDay, unit_ns(*unit), i32_min, i32_max),
        Time64(unit) => temporal(Temporal::TimeOfDay, unit_ns(*unit), i64_min, i64_max),
        Duration(unit) => temporal(Temporal::Duration, unit_ns(*unit), i64_min, i64_max),
        _ => None,
    }
}

/// A constant as a number: exact (`numerator / denominator`) or a double.
#[derive(Debug, Clone, Copy)]
enum Number {
    Exact { numerator: i128, denominator: i128 },
    Double(f64),
}

/// Reads a numeric constant; temporal constants also give their family and unit.
fn number(value: &ArrayRef) -> Option<(Number, Option<(Temporal, i128)>)> {
    use DataType::*;
    let exact = |numerator: i128| Number::Exact { numerator, denominator: 1 };
    let int = |v: i128| Some((exact(v), None));
    let temporal = |v: i128, family, unit| Some((exact(v), Some((family, unit))));
    Some(match value.data_type() {
        Int8 => return int(value.as_primitive::<Int8Type>().value(0) as i128),
        Int16 => return int(value.as_primitive::<Int16Type>().value(0) as i128),
        Int32 => return int(value.as_primitive::<Int32Type>().value(0) as i128),
        Int64 => return int(value.as_primitive::<Int64Type>().value(0) as i128),
        UInt8 => return int(value.as_primitive::<UInt8Type>().value(0) as i128),
        UInt16 => return int(value.as_primitive::<UInt16Type>().value(0) as i128),
        UInt32 => return int(value.as_primitive::<UInt32Type>().value(0) as i128),
        UInt64 => return int(value.as_primitive::<UInt64Type>().value(0) as i128),
        Float32 => (Number::Double(value.as_primitive::<Float32Type>().value(0) as f64), None),
        Float64 => (Number::Double(value.as_primitive::<Float64Type>().value(0)), None),
        Decimal128(_, scale) => {
            let v = value.as_primitive::<Decimal128Type>().value(0);
            if *scale >= 0 {
                (Number::Exact { numerator: v, denominator: 10i128.checked_pow(*scale as u32)? }, None)
            } else {
                (exact(v.checked_mul(10i128.checked_pow(scale.unsigned_abs() as u32)?)?), None)
            }
        }
        Date32 => {
            return temporal(
                value.as_primitive::<Date32Type>().value(0) as i128,
                Temporal::Instant,
                86_400_000_000_000,
            );
        }
        Date64 => return temporal(value.as_primitive::<Date64Type>().value(0) as i128, Temporal::Instant, 1_000_000),
        Timestamp(unit, _) => {
            let v = match unit {
                TimeUnit::Second => value.as_primitive::<TimestampSecondType>().value(0),
                TimeUnit::Millisecond => value.as_primitive::<TimestampMillisecondType>().value(0),
                TimeUnit::Microsecond => value.as_primitive::<TimestampMicrosecondType>().value(0),
                TimeUnit::Nanosecond => value.as_primitive::<TimestampNanosecondType>().value(0),
            };
            return temporal(v as i128, Temporal::Instant, unit_ns(*unit));
        }
        Time32(unit) => {
            let v = match unit {
                TimeUnit::Second => value.as_primitive::<Time32SecondType>().value(0),
                _ => value.as_primitive::<Time32MillisecondType>().value(0),
            };
            return temporal(v as i128, Temporal::TimeOfDay, unit_ns(*unit));
        }
        Time64(unit) => {
            let v = match unit {
                TimeUnit::Microsecond => value.as_primitive::<Time64MicrosecondType>().value(0),
                _ => value.as_primitive::<Time64NanosecondType>().value(0),
            };
            return temporal(v as i128, Temporal::TimeOfDay, unit_ns(*unit));
        }
        Duration(unit) => {
            let v = match unit {
                TimeUnit::Second => value.as_primitive::<DurationSecondType>().value(0),
                TimeUnit::Millisecond => value.as_primitive::<DurationMillisecondType>().value(0),
                TimeUnit::Microsecond => value.as_primitive::<DurationMicrosecondType>().value(0),
                TimeUnit::Nanosecond => value.as_primitive::<DurationNanosecondType>().value(0),
            };
            return temporal(v as i128, Temporal::Duration, unit_ns(*unit));
        }
        _ => return None,
    })
}

fn cannot_compare(column: &BoundColumn, value: &ArrayRef) -> Error {
    Error::invalid_argument(format!(
        "filter: cannot compare column {:?} of type {} with a constant of type {}",
        column.name,
        column.value_type,
        value.data_type()
    ))
}

/// Binds `column <op> value`.
fn compare(column: &BoundColumn, op: CompareOp, value: &ArrayRef) -> Result<BoundPredicate> {
    if value.len() != 1 {
        bail!(invalid, "filter: the constant compared with {:?} has {} values, not one", column.name, value.len());
    }
    if value.is_null(0) || value.data_type() == &DataType::Null {
        return Ok(BoundPredicate::Literal(None));
    }
    if op == CompareOp::NotEq {
        // Exactly the rows where `=` is false, nulls staying null.
        return Ok(BoundPredicate::Not(Box::new(compare(column, CompareOp::Eq, value)?)));
    }
    let column_type = column.value_type.clone();
    if let Some(kind) = ordered(&column_type) {
        let (number, unit) = number(value).ok_or_else(|| cannot_compare(column, value))?;
        return ordered_compare(column, kind, op, number, unit).ok_or_else(|| cannot_compare(column, value))?;
    }
    let compare = |value: ArrayRef| Ok(BoundPredicate::Compare { column: column.clone(), op, value });
    match (&column_type, value.data_type()) {
        (DataType::Float16, _) => {
            Err(Error::invalid_argument(format!("filter: float16 column {:?} cannot be filtered on", column.name)))
        }
        (DataType::Float32 | DataType::Float64, _) => match number(value) {
            Some((Number::Double(v), None)) => compare(Arc::new(arrow_array::Float64Array::from(vec![v]))),
            Some((Number::Exact { numerator, denominator }, None)) => {
                compare(Arc::new(arrow_array::Float64Array::from(vec![numerator as f64 / denominator as f64])))
            }
            _ => Err(cannot_compare(column, value)),
        },
        (DataType::Boolean, DataType::Boolean) => compare(value.clone()),
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, _) => {
            let text = string_constant(value).ok_or_else(|| cannot_compare(column, value))?;
            compare(match column_type {
                DataType::Utf8 => Arc::new(StringArray::from(vec![text])),
                DataType::LargeUtf8 => Arc::new(LargeStringArray::from(vec![text])),
                _ => Arc::new(StringViewArray::from(vec![text])),
            })
        }
        (DataType::Binary | DataType::LargeBinary | DataType::BinaryView, _) => {
            let bytes = binary_constant(value).ok_or_else(|| cannot_compare(column, value))?;
            compare(match column_type {
                DataType::Binary => Arc::new(BinaryArray::from(vec![bytes.as_slice()])),
                DataType::LargeBinary => Arc::new(LargeBinaryArray::from(vec![bytes.as_slice()])),
                _ => Arc::new(BinaryViewArray::from(vec![bytes.as_slice()])),
            })
        }
        _ if value.data_type() == &column_type => compare(value.clone()),
        _ => Err(cannot_compare(column, value)),
    }
}

/// A numeric constant as a one-element array of a float column's type (`None` for other
/// columns or constants).
fn float_of_type(column_type: &DataType, value: &ArrayRef) -> Option<ArrayRef> {
    let v = match number(value)? {
        (Number::Double(v), None) => v,
        (Number::Exact { numerator, denominator }, None) => numerator as f64 / denominator as f64,
        _ => return None,
    };
    match column_type {
        DataType::Float32 => Some(Arc::new(arrow_array::Float32Array::from(vec![v as f32]))),
        DataType::Float64 => Some(Arc::new(arrow_array::Float64Array::from(vec![v]))),
        _ => None,
    }
}

/// A string constant; a binary one too if it is UTF-8 (Arrow casts it to compare).
fn string_constant(value: &ArrayRef) -> Option<String> {
    Some(match value.data_type() {
        DataType::Utf8 => value.as_string::<i32>().value(0).to_string(),
        DataType::LargeUtf8 => value.as_string::<i64>().value(0).to_string(),
        DataType::Utf8View => value.as_string_view().value(0).to_string(),
        _ => return binary_constant(value).and_then(|bytes| String::from_utf8(bytes).ok()),
    })
}

fn binary_constant(value: &ArrayRef) -> Option<Vec<u8>> {
    // A string constant is not compared with a binary column (Arrow refuses it too).
    if matches!(value.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
        return None;
    }
    constant_bytes(value).map(<[u8]>::to_vec)
}

/// The bytes of a string or binary constant (of any of their types).
pub(crate) fn constant_bytes(value: &ArrayRef) -> Option<&[u8]> {
    Some(match value.data_type() {
        DataType::Binary => value.as_binary::<i32>().value(0),
        DataType::LargeBinary => value.as_binary::<i64>().value(0),
        DataType::BinaryView => value.as_binary_view().value(0),
        DataType::FixedSizeBinary(_) => value.as_fixed_size_binary().value(0),
        DataType::Utf8 => value.as_string::<i32>().value(0).as_bytes(),
        DataType::LargeUtf8 => value.as_string::<i64>().value(0).as_bytes(),
        DataType::Utf8View => value.as_string_view().value(0).as_bytes(),
        _ => return None,
    })
}

/// Binds a comparison of an integer-ordered column with a number (`None`: incomparable).
fn ordered_compare(
    column: &BoundColumn,
    kind: Ordered,
    op: CompareOp,
    number: Number,
    unit: Option<(Temporal, i128)>,
) -> Option<Result<BoundPredicate>> {
    // The constant in the column's units, the column's range, and a double constant as given.
    let original = match number {
        Number::Double(v) => v,
        Number::Exact { .. } => 0.0,
    };
    let (number, min, max) = match (kind, unit, number) {
        (Ordered::Integer { min, max }, None, number) => (number, min, max),
        (Ordered::Decimal { precision, scale }, None, number) => {
            let limit = 10i128.checked_pow(precision as u32)? - 1;
            let scaled = match number {
                Number::Exact { numerator, denominator } => scale_exact(numerator, denominator, scale)?,
                Number::Double(v) => Number::Double(v * 10f64.powi(scale as i32)),
            };
            (scaled, -limit, limit)
        }
        (
            Ordered::Temporal { family, unit_ns, min, max },
            Some((their_family, their_unit)),
            Number::Exact { numerator, .. },
        ) => {
            if family != their_family {
                return None;
            }
            // value * their_unit / unit_ns, exactly.
            (Number::Exact { numerator: numerator.checked_mul(their_unit)?, denominator: unit_ns }, min, max)
        }
        _ => return None,
    };
    let to_double: Box<dyn Fn(i128) -> f64> = match kind {
        Ordered::Decimal { scale, .. } => Box::new(move |x| x as f64 / 10f64.powi(scale as i32)),
        _ => Box::new(|x| x as f64),
    };
    let threshold = match number {
        Number::Exact { numerator, denominator } => exact_threshold(op, numerator, denominator),
        // Compared as Arrow does, casting the column's values to doubles: the values that pass
        // form a prefix or suffix of the integers, found around the scaled constant.
        Number::Double(scaled) => double_threshold(op, scaled, original, &to_double, min, max),
    };
    Some(Ok(match threshold {
        Threshold::Never => BoundPredicate::NonNull { column: column.clone(), value: false },
        Threshold::Always => BoundPredicate::NonNull { column: column.clone(), value: true },
        Threshold::AtMost(k) => fold(column, CompareOp::LtEq, k, min, max),
        Threshold::AtLeast(k) => fold(column, CompareOp::GtEq, k, min, max),
        Threshold::Equal(k) => fold(column, CompareOp::Eq, k, min, max),
        Threshold::Between(lo, hi) => BoundPredicate::And(vec![
            fold(column, CompareOp::GtEq, lo, min, max),
            fold(column, CompareOp::LtEq, hi, min, max),
        ]),
    }))
}

/// `numerator / denominator` multiplied by `10^scale`.
fn scale_exact(numerator: i128, denominator: i128, scale: i8) -> Option<Number> {
    let factor = 10i128.checked_pow(scale.unsigned_abs() as u32)?;
    Some(if scale >= 0 {
        // A constant of the column's own scale (`numerator / 10^scale`) scales back to its
        // numerator: the common factor comes out before multiplying, which could overflow.
        let common = gcd(factor, denominator);
        Number::Exact { numerator: numerator.checked_mul(factor / common)?, denominator: denominator / common }
    } else {
        Number::Exact { numerator, denominator: denominator.checked_mul(factor)? }
    })
}

/// The greatest common divisor of `a` (positive) and `b` (positive).
fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs().max(1)
}

/// The integers `x` for which `x <op> value` holds.
enum Threshold {
    Never,
    Always,
    AtMost(i128),
    AtLeast(i128),
    Equal(i128),
    Between(i128, i128),
}

/// The threshold of `x <op> numerator / denominator`. The steps past the floor saturate: every
/// column's range lies strictly inside `i128`'s (decimals of 38 digits included), so a bound at
/// `i128`'s limits is beyond the column's either way.
fn exact_threshold(op: CompareOp, numerator: i128, denominator: i128) -> Threshold {
    let floor = numerator.div_euclid(denominator);
    let whole = numerator.rem_euclid(denominator) == 0;
    match op {
        CompareOp::Eq if whole => Threshold::Equal(floor),
        CompareOp::Eq | CompareOp::NotEq => Threshold::Never,
        CompareOp::Lt if whole => Threshold::AtMost(floor.saturating_sub(1)),
        CompareOp::Lt | CompareOp::LtEq => Threshold::AtMost(floor),
        CompareOp::Gt => Threshold::AtLeast(floor.saturating_add(1)),
        CompareOp::GtEq if whole => Threshold::AtLeast(floor),
        CompareOp::GtEq => Threshold::AtLeast(floor.saturating_add(1)),
    }
}

/// Where `to_double(x) <op> original` changes, for `scaled` (the constant in the column's
/// units) as the first guess.
fn double_threshold(
    op: CompareOp,
    scaled: f64,
    original: f64,
    to_double: &dyn Fn(i128) -> f64,
    min: i128,
    max: i128,
) -> Threshold {
    if original.is_nan() {
        return Threshold::Never;
    }
    if scaled <= min as f64 - 2.0 || scaled >= max as f64 + 2.0 {
        // Beyond the type's range: every value compares the same way.
        let below = scaled < 0.0;
        let holds = match op {
            CompareOp::Lt | CompareOp::LtEq => !below,
            CompareOp::Gt | CompareOp::GtEq => below,
            CompareOp::Eq | CompareOp::NotEq => false,
        };
        return if holds { Threshold::Always } else { Threshold::Never };
    }
    let guess = (scaled.floor() as i128).clamp(min - 1, max + 1);
    let holds = |x: i128| {
        let d = to_double(x);
        match op {
            CompareOp::Lt => d < original,
            CompareOp::LtEq => d <= original,
            CompareOp::Gt => d > original,
            CompareOp::GtEq => d >= original,
            CompareOp::Eq => d == original,
            CompareOp::NotEq => d != original,
        }
    };
    // The largest x passing a `<`/`<=` (the smallest passing a `>`/`>=`), stepping from the
    // guess; the conversion is monotone, so a few steps reach it.
    let largest = |pass: &dyn Fn(i128) -> bool| {
        let mut k = guess;
        while k >= min - 1 && !pass(k) {
            k -= 1;
        }
        while k <= max && pass(k + 1) {
            k += 1;
        }
        k
    };
    let smallest = |pass: &dyn Fn(i128) -> bool| {
        let mut k = guess + 1;
        while k <= max + 1 && !pass(k) {
            k += 1;
        }
        while k >= min && pass(k - 1) {
            k -= 1;
        }
        k
    };
    match op {
        CompareOp::Lt | CompareOp::LtEq => Threshold::AtMost(largest(&holds)),
        CompareOp::Gt | CompareOp::GtEq => Threshold::AtLeast(smallest(&holds)),
        CompareOp::Eq | CompareOp::NotEq => {
            let lo = smallest(&|x| to_double(x) >= original);
            let hi = largest(&|x| to_double(x) <= original);
            match lo.cmp(&hi) {
                std::cmp::Ordering::Greater => Threshold::Never,
                std::cmp::Ordering::Equal => Threshold::Equal(lo),
                std::cmp::Ordering::Less => Threshold::Between(lo, hi),
            }
        }
    }
}

/// `column <op> k` for `op` one of `<=`, `>=`, `=`, folded to a constant answer where `k` lies
/// outside the column's range `min..=max`.
fn fold(column: &BoundColumn, op: CompareOp, k: i128, min: i128, max: i128) -> BoundPredicate {
    let non_null = |value| BoundPredicate::NonNull { column: column.clone(), value };
    match op {
        CompareOp::LtEq if k >= max => non_null(true),
        CompareOp::LtEq if k < min => non_null(false),
        CompareOp::GtEq if k <= min => non_null(true),
        CompareOp::GtEq if k > max => non_null(false),
        CompareOp::Eq if k < min || k > max => non_null(false),
        _ => match constant_of(&column.value_type, k) {
            Some(value) => BoundPredicate::Compare { column: column.clone(), op, value },
            None => non_null(false),
        },
    }
}

/// A one-element array of `data_type` holding `k` (in the type's stored units).
fn constant_of(data_type: &DataType, k: i128) -> Option<ArrayRef> {
    use DataType::*;
    fn one<T: ArrowPrimitiveType>(v: T::Native, data_type: &DataType) -> Option<ArrayRef> {
        Some(Arc::new(PrimitiveArray::<T>::from_iter_values([v]).with_data_type(data_type.clone())))
    }
    match data_type {
        Int8 => one::<Int8Type>(k.try_into().ok()?, data_type),
        Int16 => one::<Int16Type>(k.try_into().ok()?, data_type),
        Int32 => one::<Int32Type>(k.try_into().ok()?, data_type),
        Int64 => one::<Int64Type>(k.try_into().ok()?, data_type),
        UInt8 => one::<UInt8Type>(k.try_into().ok()?, data_type),
        UInt16 => one::<UInt16Type>(k.try_into().ok()?, data_type),
        UInt32 => one::<UInt32Type>(k.try_into().ok()?, data_type),
        UInt64 => one::<UInt64Type>(k.try_into().ok()?, data_type),
        Decimal128(..) => Some(Arc::new(Decimal128Array::from(vec![k]).with_data_type(data_type.clone()))),
        Date32 => one::<Date32Type>(k.try_into().ok()?, data_type),
        Date64 => one::<Date64Type>(k.try_into().ok()?, data_type),
        Timestamp(TimeUnit::Second, _) => one::<TimestampSecondType>(k.try_into().ok()?, data_type),
        Timestamp(TimeUnit::Millisecond, _) => one::<TimestampMillisecondType>(k.try_into().ok()?, data_type),
        Timestamp(TimeUnit::Microsecond, _) => one::<TimestampMicrosecondType>(k.try_into().ok()?, data_type),
        Timestamp(TimeUnit::Nanosecond, _) => one::<TimestampNanosecondType>(k.try_into().ok()?, data_type),
        Time32(TimeUnit::Second) => one::<Time32SecondType>(k.try_into().ok()?, data_type),
        Time32(_) => one::<Time32MillisecondType>(k.try_into().ok()?, data_type),
        Time64(TimeUnit::Microsecond) => one::<Time64MicrosecondType>(k.try_into().ok()?, data_type),
        Time64(_) => one::<Time64NanosecondType>(k.try_into().ok()?, data_type),
        Duration(TimeUnit::Second) => one::<DurationSecondType>(k.try_into().ok()?, data_type),
        Duration(TimeUnit::Millisecond) => one::<DurationMillisecondType>(k.try_into().ok()?, data_type),
        Duration(TimeUnit::Microsecond) => one::<DurationMicrosecondType>(k.try_into().ok()?, data_type),
        Duration(TimeUnit::Nanosecond) => one::<DurationNanosecondType>(k.try_into().ok()?, data_type),
        _ => None,
    }
}

/// The constant of a bound comparison as an integer in the column's stored units, for
/// statistics.
pub(crate) fn constant_as_integer(value: &ArrayRef) -> Option<i128> {
    if let DataType::Decimal128(..) = value.data_type() {
        return Some(value.as_primitive::<Decimal128Type>().value(0));
    }
    match number(value)? {
        (Number::Exact { numerator, denominator: 1 }, _) => Some(numerator),
        _ => None,
    }
}

/// A boolean constant's value.
pub(crate) fn constant_as_bool(value: &ArrayRef) -> Option<bool> {
    value.as_any().downcast_ref::<BooleanArray>().filter(|b| b.is_valid(0)).map(|b| b.value(0))
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int64Array};
    use arrow_schema::Schema;

    use super::*;

    fn fields() -> Fields {
        Schema::new(vec![
            Field::new("i8", DataType::Int8, true),
            Field::new("q", DataType::Decimal128(15, 2), true),
            Field::new("d", DataType::Date32, true),
        ])
        .fields()
        .clone()
    }

    /// What a comparison binds to: `Some((op, constant in stored units))`, or `Err(answer for
    /// non-null values)` when folded.
    fn bind(column: &str, op: CompareOp, value: ArrayRef) -> std::result::Result<(CompareOp, i128), bool> {
        let p = Predicate::Compare { column: vec![column.into()], op, value };
        match BoundPredicate::bind(&p, &fields()).unwrap() {
            BoundPredicate::Compare { op, value, .. } => Ok((op, constant_as_integer(&value).unwrap())),
            BoundPredicate::NonNull { value, .. } => Err(value),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn constants_are_brought_to_the_column_type() {
        let int = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
        let double = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v])) };
        assert_eq!(bind("i8", CompareOp::Lt, int(1000)), Err(true));
        assert_eq!(bind("i8", CompareOp::Gt, int(1000)), Err(false));
        assert_eq!(bind("i8", CompareOp::Lt, double(2.5)), Ok((CompareOp::LtEq, 2)));
        assert_eq!(bind("i8", CompareOp::GtEq, double(-2.5)), Ok((CompareOp::GtEq, -2)));
        // decimal(15, 2) < 24 is q <= 23.99, in stored units
        assert_eq!(bind("q", CompareOp::Lt, int(24)), Ok((CompareOp::LtEq, 2399)));
        // As Arrow casts the decimals to doubles: 0.07 as a double equals the decimal 0.07.
        assert_eq!(bind("q", CompareOp::LtEq, double(0.07)), Ok((CompareOp::LtEq, 7)));
        assert_eq!(bind("q", CompareOp::GtEq, double(0.05)), Ok((CompareOp::GtEq, 5)));
        assert_eq!(bind("q", CompareOp::Eq, double(0.055)), Err(false));
        // Dates against timestamps: 1970-01-02T12:00 is after day 1, before day 2.
        let noon: ArrayRef = Arc::new(arrow_array::TimestampSecondArray::from(vec![86_400 + 43_200]));
        assert_eq!(bind("d", CompareOp::Lt, noon), Ok((CompareOp::LtEq, 1)));
    }

    #[test]
    fn unknown_columns_and_incomparable_constants_are_named() {
        let p = Predicate::Compare {
            column: vec!["nope".into()],
            op: CompareOp::Eq,
            value: Arc::new(Int64Array::from(vec![1])),
        };
        let e = BoundPredicate::bind(&p, &fields()).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let p = Predicate::Compare {
            column: vec!["d".into()],
            op: CompareOp::Eq,
            value: Arc::new(StringArray::from(vec!["x"])),
        };
        let e = BoundPredicate::bind(&p, &fields()).unwrap_err().to_string();
        assert!(e.contains("cannot compare column \"d\""), "{e}");
    }
}
