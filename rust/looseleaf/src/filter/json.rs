//! [`Predicate::from_json`]: a predicate from a JSON tree and its constants, the one form every
//! binding hands over (the Python package converts `pyarrow.compute.Expression` and filter
//! tuples to it, the JVM connector Spark's predicates; `docs/filters.md` gives the grammar).
//!
//! A constant is either an index into the Arrow arrays handed over with the tree (Python passes
//! its constants as arrays, any Arrow type), or written in the tree itself as a typed value
//! (front ends without Arrow arrays at hand: the JVM), in the types a filter compares most.

use std::sync::Arc;

use arrow_array::types::{Date32Type, Int8Type, Int16Type, Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, NullArray, PrimitiveArray, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow_schema::TimeUnit;
use serde_json::Value;

use super::predicate::{ColumnPath, CompareOp, NullMatching, Predicate};
use crate::error::{Error, Result};

impl Predicate {
    /// Parses the JSON form of a predicate; a constant `C` is an index into `literals`, or a
    /// typed value (see [`typed_literal`]).
    ///
    /// ```text
    /// {"and": [P, ...]}  {"or": [P, ...]}  {"not": P}
    /// {"compare": {"column": ["a", "b"], "op": "eq|not_eq|lt|lt_eq|gt|gt_eq", "literal": C}}
    /// {"is_in": {"column": [...], "values": I, "nulls": "match|skip|emit_null|inconclusive"}}
    /// {"is_null": {"column": [...]}}  {"is_valid": {"column": [...]}}
    /// {"column": [...]}  {"literal": C}
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the part that is not understood.
    pub fn from_json(json: &str, literals: &[ArrayRef]) -> Result<Self> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| Error::invalid_argument(format!("filter: not valid JSON: {e}")))?;
        parse(&value, literals)
    }
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(format!("filter: {what}"))
}

fn parse(value: &Value, literals: &[ArrayRef]) -> Result<Predicate> {
    let Some((key, body)) = value.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
        return Err(bad(format!("expected an object with one key, got {value}")));
    };
    let literal = |v: &Value| -> Result<ArrayRef> {
        if v.is_object() {
            return typed_literal(v);
        }
        let index = v.as_u64().ok_or_else(|| bad(format!("a literal must be an index or a typed value, got {v}")))?;
        literals.get(index as usize).cloned().ok_or_else(|| bad(format!("no literal number {index}")))
    };
    let column = |v: &Value| -> Result<ColumnPath> {
        let path = v.get("column").unwrap_or(v);
        let names = path.as_array().ok_or_else(|| bad(format!("a column must be a list of names, got {path}")))?;
        let names: Option<Vec<String>> = names.iter().map(|n| n.as_str().map(str::to_string)).collect();
        names.filter(|n| !n.is_empty()).ok_or_else(|| bad(format!("a column must be a list of names, got {path}")))
    };
    let parts = |v: &Value| -> Result<Vec<Predicate>> {
        v.as_array()
            .ok_or_else(|| bad(format!("{key} takes a list, got {v}")))?
            .iter()
            .map(|p| parse(p, literals))
            .collect()
    };
    Ok(match key.as_str() {
        "and" => Predicate::And(parts(body)?),
        "or" => Predicate::Or(parts(body)?),
        "not" => Predicate::Not(Box::new(parse(body, literals)?)),
        "compare" => {
            let op = match body.get("op").and_then(Value::as_str) {
                Some("eq") => CompareOp::Eq,
                Some("not_eq") => CompareOp::NotEq,
                Some("lt") => CompareOp::Lt,
                Some("lt_eq") => CompareOp::LtEq,
                Some("gt") => CompareOp::Gt,
                Some("gt_eq") => CompareOp::GtEq,
                other => return Err(bad(format!("unknown comparison {other:?}"))),
            };
            let value = literal(body.get("literal").unwrap_or(&Value::Null))?;
            Predicate::Compare { column: column(body)?, op, value }
        }
        "is_in" => {
            let nulls = match body.get("nulls").and_then(Value::as_str).unwrap_or("match") {
                "match" => NullMatching::Match,
                "skip" => NullMatching::Skip,
                "emit_null" => NullMatching::EmitNull,
                "inconclusive" => NullMatching::Inconclusive,
                other => return Err(bad(format!("unknown null matching {other:?}"))),
            };
            let values = literal(body.get("values").unwrap_or(&Value::Null))?;
            Predicate::In { column: column(body)?, values, nulls }
        }
        "is_null" => Predicate::IsNull(column(body)?),
        "is_valid" => Predicate::IsNotNull(column(body)?),
        "column" => Predicate::Column(column(body)?),
        "literal" => {
            let value = literal(body)?;
            let as_bool = value.as_any().downcast_ref::<arrow_array::BooleanArray>();
            match as_bool {
                Some(b) if b.len() == 1 => Predicate::Literal(b.is_valid(0).then(|| b.value(0))),
                _ if value.data_type() == &arrow_schema::DataType::Null => Predicate::Literal(None),
                _ => return Err(bad(format!("a literal predicate must be a boolean, got {}", value.data_type()))),
            }
        }
        other => return Err(bad(format!("{other:?} is not supported"))),
    })
}

/// A constant written as a typed value: `{"type": T, "value": V}`, as a one-element array.
///
/// | `T` | `V` | Arrow type |
/// |---|---|---|
/// | `int8`, `int16`, `int32`, `int64` | an integer, or its decimal text | the same |
/// | `float64` | a number | `Float64` |
/// | `boolean` | `true` or `false` | `Boolean` |
/// | `utf8` | a string | `Utf8` |
/// | `date32` | days since 1970-01-01 | `Date32` |
/// | `timestamp[s\|ms\|us\|ns]` (and `"tz"`: a zone, optional) | units since the epoch | `Timestamp` |
/// | `decimal128` (and `"precision"`, `"scale"`) | the unscaled integer's decimal text | `Decimal128` |
/// | `null` | none | `Null` |
///
/// Integers beyond 2^53 lose nothing given as text, which is why every integer may be text.
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown type or a value that does not fit it.
pub fn typed_literal(value: &Value) -> Result<ArrayRef> {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("a typed literal needs a type: {value}")))?;
    let body = value.get("value").unwrap_or(&Value::Null);
    let wrong = || bad(format!("{body} is not a {kind} literal"));
    let integer = || -> Result<i128> {
        match body {
            Value::String(text) => text.trim().parse::<i128>().map_err(|_| wrong()),
            Value::Number(n) => n.as_i64().map(i128::from).ok_or_else(wrong),
            _ => Err(wrong()),
        }
    };
    fn one<T: arrow_array::types::ArrowPrimitiveType>(value: T::Native) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::from_iter_values([value]))
    }
    let fits = |n: i128, min: i128, max: i128| if (min..=max).contains(&n) { Ok(n) } else { Err(wrong()) };
    let timestamp = |unit: TimeUnit| -> Result<ArrayRef> {
        let tz: Option<Arc<str>> = value.get("tz").and_then(Value::as_str).map(Arc::from);
        let n = i64::try_from(integer()?).map_err(|_| wrong())?;
        Ok(match unit {
            TimeUnit::Second => Arc::new(TimestampSecondArray::from(vec![n]).with_timezone_opt(tz)),
            TimeUnit::Millisecond => Arc::new(TimestampMillisecondArray::from(vec![n]).with_timezone_opt(tz)),
            TimeUnit::Microsecond => Arc::new(TimestampMicrosecondArray::from(vec![n]).with_timezone_opt(tz)),
            TimeUnit::Nanosecond => Arc::new(TimestampNanosecondArray::from(vec![n]).with_timezone_opt(tz)),
        })
    };
    Ok(match kind {
        "int8" => one::<Int8Type>(fits(integer()?, i8::MIN.into(), i8::MAX.into())? as i8),
        "int16" => one::<Int16Type>(fits(integer()?, i16::MIN.into(), i16::MAX.into())? as i16),
        "int32" => one::<Int32Type>(fits(integer()?, i32::MIN.into(), i32::MAX.into())? as i32),
        "int64" => one::<Int64Type>(fits(integer()?, i64::MIN.into(), i64::MAX.into())? as i64),
        "date32" => one::<Date32Type>(fits(integer()?, i32::MIN.into(), i32::MAX.into())? as i32),
        "float64" => Arc::new(Float64Array::from(vec![body.as_f64().ok_or_else(wrong)?])),
        "boolean" => Arc::new(BooleanArray::from(vec![body.as_bool().ok_or_else(wrong)?])),
        "utf8" => Arc::new(StringArray::from(vec![body.as_str().ok_or_else(wrong)?])),
        "null" => Arc::new(NullArray::new(1)),
        "timestamp[s]" => timestamp(TimeUnit::Second)?,
        "timestamp[ms]" => timestamp(TimeUnit::Millisecond)?,
        "timestamp[us]" => timestamp(TimeUnit::Microsecond)?,
        "timestamp[ns]" => timestamp(TimeUnit::Nanosecond)?,
        "decimal128" => {
            let precision = value.get("precision").and_then(Value::as_u64).and_then(|p| u8::try_from(p).ok());
            let scale = value.get("scale").and_then(Value::as_i64).and_then(|s| i8::try_from(s).ok());
            let (Some(precision), Some(scale)) = (precision, scale) else {
                return Err(bad(format!("a decimal128 literal needs a precision and a scale: {value}")));
            };
            let array = Decimal128Array::from(vec![integer()?])
                .with_precision_and_scale(precision, scale)
                .map_err(|e| bad(format!("{value}: {e}")))?;
            array.validate_decimal_precision(precision).map_err(|e| bad(format!("{value}: {e}")))?;
            Arc::new(array)
        }
        other => return Err(bad(format!("unknown literal type {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;

    #[test]
    fn typed_literals_parse_to_their_arrow_types() {
        let parse = |json: &str| typed_literal(&serde_json::from_str(json).unwrap());
        let int = parse(r#"{"type": "int64", "value": "-9223372036854775808"}"#).unwrap();
        assert_eq!(int.as_primitive::<Int64Type>().value(0), i64::MIN);
        assert_eq!(parse(r#"{"type": "int8", "value": 7}"#).unwrap().data_type(), &DataType::Int8);
        assert!(parse(r#"{"type": "int8", "value": 700}"#).is_err());
        let decimal = parse(r#"{"type": "decimal128", "precision": 15, "scale": 2, "value": "-123456"}"#).unwrap();
        assert_eq!(decimal.data_type(), &DataType::Decimal128(15, 2));
        assert_eq!(decimal.as_primitive::<arrow_array::types::Decimal128Type>().value(0), -123456);
        assert!(parse(r#"{"type": "decimal128", "precision": 3, "scale": 0, "value": "12345"}"#).is_err());
        let ts = parse(r#"{"type": "timestamp[us]", "tz": "UTC", "value": "5"}"#).unwrap();
        assert_eq!(ts.data_type(), &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())));
        assert_eq!(parse(r#"{"type": "utf8", "value": "é\"x"}"#).unwrap().as_string::<i32>().value(0), "é\"x");
        assert_eq!(parse(r#"{"type": "date32", "value": 19000}"#).unwrap().data_type(), &DataType::Date32);
        assert!(parse(r#"{"type": "uuid", "value": "x"}"#).is_err());
        let predicate = Predicate::from_json(
            r#"{"and": [{"compare": {"column": ["q"], "op": "lt", "literal": {"type": "int32", "value": 24}}},
                        {"compare": {"column": ["k"], "op": "eq", "literal": 0}}]}"#,
            &[Arc::new(StringArray::from(vec!["a"])) as ArrayRef],
        )
        .unwrap();
        assert_eq!(predicate.columns().len(), 2);
    }
}
