//! [`Aggregation::from_json`]: an aggregation from its JSON form, the one front ends without
//! Rust types at hand (the JVM connector) hand over.

use arrow_schema::DataType;
use serde_json::Value;

use super::expression::{Arithmetic, ValueExpr};
use super::{AggregateFunction, AggregateResults, Aggregation};
use crate::error::{Error, Result};
use crate::filter::Predicate;
use crate::filter::typed_literal;

fn bad(what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(format!("aggregation: {what}"))
}

impl Aggregation {
    /// Parses the JSON form of an aggregation:
    ///
    /// ```text
    /// {"group_by": ["a", ...], "aggregates": [F, ...], "filter": P or null,
    ///  "ansi": true, "precision_loss": true, "final": false}
    /// F: {"count": null} (COUNT(*))  {"count": E}  {"sum": E}  {"min": E}  {"max": E}
    /// E: {"column": "a"}  {"literal": L}  {"add": [E, E]}  {"subtract": [E, E]}
    ///    {"multiply": [E, E]}  {"cast": {"value": E, "to": T}}
    /// T: {"type": "int64"}  {"type": "decimal128", "precision": p, "scale": s}
    /// ```
    ///
    /// `P` is a filter (`Predicate::from_json`), `L` a typed literal as in filters. `ansi` and
    /// `precision_loss` default to true (Spark's defaults); `final` (default false) asks for
    /// [`AggregateResults::Final`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the part that is not understood.
    pub fn from_json(json: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(json).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let object = value.as_object().ok_or_else(|| bad("expected an object"))?;
        for key in object.keys() {
            if !["group_by", "aggregates", "filter", "ansi", "precision_loss", "final"].contains(&key.as_str()) {
                return Err(bad(format!("unknown key {key:?}")));
            }
        }
        let group_by = match object.get("group_by") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned).ok_or_else(|| bad(format!("a column name, got {n}"))))
                .collect::<Result<_>>()?,
            Some(other) => return Err(bad(format!("group_by must be a list of names, got {other}"))),
        };
        let functions = object
            .get("aggregates")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("aggregates must be a list"))?
            .iter()
            .map(function)
            .collect::<Result<_>>()?;
        let filter = match object.get("filter") {
            None | Some(Value::Null) => None,
            Some(filter) => Some(Predicate::from_json(&filter.to_string(), &[])?),
        };
        let flag = |name: &str, default: bool| match object.get(name) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| bad(format!("{name} must be true or false"))),
        };
        let arithmetic = Arithmetic { ansi: flag("ansi", true)?, precision_loss: flag("precision_loss", true)? };
        let results = if flag("final", false)? { AggregateResults::Final } else { AggregateResults::Partial };
        Ok(Self { group_by, functions, filter, arithmetic, results })
    }
}

fn single(value: &Value) -> Result<(&str, &Value)> {
    value
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.iter().next())
        .map(|(k, v)| (k.as_str(), v))
        .ok_or_else(|| bad(format!("expected an object with one key, got {value}")))
}

fn function(value: &Value) -> Result<AggregateFunction> {
    let (name, body) = single(value)?;
    Ok(match (name, body) {
        ("count", Value::Null) => AggregateFunction::CountRows,
        ("count", e) => AggregateFunction::Count(expression(e)?),
        ("sum", e) => AggregateFunction::Sum(expression(e)?),
        ("min", e) => AggregateFunction::Min(expression(e)?),
        ("max", e) => AggregateFunction::Max(expression(e)?),
        _ => return Err(bad(format!("unknown function {name:?}"))),
    })
}

fn expression(value: &Value) -> Result<ValueExpr> {
    let (name, body) = single(value)?;
    let pair = |body: &Value| -> Result<(Box<ValueExpr>, Box<ValueExpr>)> {
        match body.as_array().map(Vec::as_slice) {
            Some([l, r]) => Ok((Box::new(expression(l)?), Box::new(expression(r)?))),
            _ => Err(bad(format!("{name} takes two operands, got {body}"))),
        }
    };
    Ok(match name {
        "column" => ValueExpr::Column(body.as_str().ok_or_else(|| bad(format!("a column name, got {body}")))?.into()),
        "literal" => ValueExpr::Literal(typed_literal(body)?),
        "add" => {
            let (l, r) = pair(body)?;
            ValueExpr::Add(l, r)
        }
        "subtract" => {
            let (l, r) = pair(body)?;
            ValueExpr::Subtract(l, r)
        }
        "multiply" => {
            let (l, r) = pair(body)?;
            ValueExpr::Multiply(l, r)
        }
        "cast" => {
            let inner = body.get("value").ok_or_else(|| bad(format!("a cast needs a value: {body}")))?;
            let to = body.get("to").ok_or_else(|| bad(format!("a cast needs a type: {body}")))?;
            ValueExpr::Cast(Box::new(expression(inner)?), data_type(to)?)
        }
        other => return Err(bad(format!("unknown expression {other:?}"))),
    })
}

fn data_type(value: &Value) -> Result<DataType> {
    match value.get("type").and_then(Value::as_str) {
        Some("int64") => Ok(DataType::Int64),
        Some("decimal128") => {
            let precision = value.get("precision").and_then(Value::as_u64).and_then(|p| u8::try_from(p).ok());
            let scale = value.get("scale").and_then(Value::as_i64).and_then(|s| i8::try_from(s).ok());
            match (precision, scale) {
                (Some(p), Some(s)) => Ok(DataType::Decimal128(p, s)),
                _ => Err(bad(format!("a decimal128 type needs a precision and a scale: {value}"))),
            }
        }
        _ => Err(bad(format!("unknown type {value}"))),
    }
}
