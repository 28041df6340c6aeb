//! Partition pruning: a filter with the partition columns of one file replaced by what they
//! give for its partition values.
//!
//! Every part of the filter that reads only a partition column is evaluated once per file, on
//! the file's values, with the same evaluator as any filter (so the two can never disagree),
//! and becomes a constant; constants are then folded with SQL's three-valued logic. What is
//! left reads only the file's own columns: a file whose filter folds to false or null has no
//! matching row and is not opened for reading.

use std::collections::HashMap;

use arrow_array::ArrayRef;
use arrow_schema::Fields;

use super::evaluate::evaluate;
use super::{BoundPredicate, ColumnPath, Predicate};
use crate::error::{Result, bail};

/// `predicate` with its parts on `partitions` (the partition columns, whose values for one file
/// are the one-element arrays `values`) replaced by constants and folded.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error) for a part the partition columns cannot answer (a
/// path into a partition column, a comparison with a constant of another kind).
pub(crate) fn partition_residual(predicate: &Predicate, partitions: &Fields, values: &[ArrayRef]) -> Result<Predicate> {
    if partitions.is_empty() {
        return Ok(predicate.clone());
    }
    Ok(match predicate {
        Predicate::Compare { column, .. }
        | Predicate::In { column, .. }
        | Predicate::IsNull(column)
        | Predicate::IsNotNull(column)
        | Predicate::Column(column) => match partition_index(column, partitions)? {
            Some(_) => Predicate::Literal(value_of(predicate, partitions, values)?),
            None => predicate.clone(),
        },
        Predicate::Literal(value) => Predicate::Literal(*value),
        Predicate::And(parts) => fold(parts, partitions, values, false)?,
        Predicate::Or(parts) => fold(parts, partitions, values, true)?,
        Predicate::Not(part) => match partition_residual(part, partitions, values)? {
            Predicate::Literal(value) => Predicate::Literal(value.map(|v| !v)),
            other => Predicate::Not(Box::new(other)),
        },
    })
}

/// Whether `filter` rules out every row of a file whose partition values (for the partition
/// columns `partitions`) are the one-element arrays `values`: what a read of a [`Dataset`]
/// skips without opening the file, for front ends that plan files themselves (the JVM
/// connector).
///
/// # Errors
/// As `partition_residual` (a part the partition columns cannot answer is an error).
///
/// [`Dataset`]: crate::dataset::Dataset
pub fn partition_rules_out(filter: &Predicate, partitions: &Fields, values: &[ArrayRef]) -> Result<bool> {
    Ok(rules_out(&partition_residual(filter, partitions, values)?))
}

/// Whether no row of a file whose residual filter is `residual` can match.
pub(crate) fn rules_out(residual: &Predicate) -> bool {
    matches!(residual, Predicate::Literal(None | Some(false)))
}

/// Whether every row of a file whose residual filter is `residual` matches.
pub(crate) fn keeps_all(residual: &Predicate) -> bool {
    matches!(residual, Predicate::Literal(Some(true)))
}

fn partition_index(column: &ColumnPath, partitions: &Fields) -> Result<Option<usize>> {
    let Some(name) = column.first() else { return Ok(None) };
    let Some((index, _)) = partitions.find(name) else { return Ok(None) };
    if column.len() > 1 {
        bail!(invalid, "filter: partition column {name:?} has no field {:?}", column[1..].join("."));
    }
    Ok(Some(index))
}

/// The value (true, false or null) of a part reading one partition column, for one file.
fn value_of(part: &Predicate, partitions: &Fields, values: &[ArrayRef]) -> Result<Option<bool>> {
    let bound = BoundPredicate::bind(part, partitions)?;
    let columns: HashMap<usize, &ArrayRef> = values.iter().enumerate().collect();
    if evaluate(&bound, &columns, 1)?.value(0) {
        return Ok(Some(true));
    }
    let negated = BoundPredicate::Not(Box::new(bound));
    Ok(if evaluate(&negated, &columns, 1)?.value(0) { Some(false) } else { None })
}

/// AND (`or == false`) or OR of `parts`, constants folded with three-valued logic.
fn fold(parts: &[Predicate], partitions: &Fields, values: &[ArrayRef], or: bool) -> Result<Predicate> {
    // The value that decides the whole (false for AND, true for OR) and the neutral one.
    let deciding = Some(or);
    let mut kept = Vec::new();
    let mut saw_null = false;
    for part in parts {
        match partition_residual(part, partitions, values)? {
            Predicate::Literal(value) if value == deciding => return Ok(Predicate::Literal(deciding)),
            Predicate::Literal(None) => saw_null = true,
            Predicate::Literal(_) => {}
            other => kept.push(other),
        }
    }
    if saw_null {
        // Null stays null unless a later row's value decides the whole: keep it as a part.
        kept.push(Predicate::Literal(None));
    }
    Ok(match kept.len() {
        0 => Predicate::Literal(Some(!or)),
        1 => kept.remove(0),
        _ if or => Predicate::Or(kept),
        _ => Predicate::And(kept),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::filter::CompareOp;

    fn partitions() -> (Fields, Vec<ArrayRef>) {
        let fields: Fields =
            vec![Field::new("year", DataType::Int32, true), Field::new("city", DataType::Utf8, true)].into();
        let values: Vec<ArrayRef> =
            vec![Arc::new(Int32Array::from(vec![2024])), Arc::new(StringArray::from(vec![None::<&str>]))];
        (fields, values)
    }

    fn int(v: i64) -> arrow_array::Scalar<ArrayRef> {
        arrow_array::Scalar::new(Arc::new(arrow_array::Int64Array::from(vec![v])) as ArrayRef)
    }

    #[test]
    fn folds_partition_parts_to_constants() {
        let (fields, values) = partitions();
        let year_is = |v| Predicate::compare("year", CompareOp::Eq, int(v));
        let x_small = Predicate::compare("x", CompareOp::Lt, int(3));
        let residual = |p: &Predicate| partition_residual(p, &fields, &values).unwrap();
        assert!(keeps_all(&residual(&year_is(2024))));
        assert!(rules_out(&residual(&year_is(2025))));
        // AND with a true part leaves the file's part; with a false part rules the file out.
        assert!(matches!(residual(&year_is(2024).and(x_small.clone())), Predicate::Compare { .. }));
        assert!(rules_out(&residual(&year_is(2023).and(x_small.clone()))));
        assert!(keeps_all(&residual(&year_is(2024).or(x_small.clone()))));
        // city is null here: a comparison with it is null, NOT of null is null, IS NULL true.
        let city_is_a = Predicate::compare(
            "city",
            CompareOp::Eq,
            arrow_array::Scalar::new(Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
        );
        assert!(rules_out(&residual(&city_is_a.clone().not())));
        assert!(keeps_all(&residual(&Predicate::IsNull(vec!["city".into()]))));
        // null OR x < 3 is true where x < 3: the file is read, with the null kept as a part.
        assert!(matches!(residual(&city_is_a.or(x_small)), Predicate::Or(parts) if parts.len() == 2));
    }

    #[test]
    fn refuses_paths_into_partition_columns() {
        let (fields, values) = partitions();
        let part = Predicate::IsNull(vec!["year".into(), "x".into()]);
        assert!(partition_residual(&part, &fields, &values).is_err());
    }
}
