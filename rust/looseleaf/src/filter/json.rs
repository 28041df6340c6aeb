//! [`Predicate::from_json`]: a predicate from a JSON tree and its constants, the form bindings
//! hand over (the Python package converts `pyarrow.compute.Expression` and filter tuples to
//! it; `docs/filters.md` gives the grammar).

use arrow_array::{Array, ArrayRef};
use serde_json::Value;

use super::predicate::{ColumnPath, CompareOp, NullMatching, Predicate};
use crate::error::{Error, Result};

impl Predicate {
    /// Parses the JSON form of a predicate; constants are indices into `literals`.
    ///
    /// ```text
    /// {"and": [P, ...]}  {"or": [P, ...]}  {"not": P}
    /// {"compare": {"column": ["a", "b"], "op": "eq|not_eq|lt|lt_eq|gt|gt_eq", "literal": I}}
    /// {"is_in": {"column": [...], "values": I, "nulls": "match|skip|emit_null|inconclusive"}}
    /// {"is_null": {"column": [...]}}  {"is_valid": {"column": [...]}}
    /// {"column": [...]}  {"literal": I}
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
        let index = v.as_u64().ok_or_else(|| bad(format!("a literal index must be a number, got {v}")))?;
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
