//! Ruling out zones of rows by their statistics: stage one of a filtered read.
//!
//! Statistics bound a zone's values (null count, minimum, maximum), so a zone can be ruled
//! out, never ruled in. For each zone the predicate is asked whether some row *may* make it
//! true; `NOT` turns that into whether some row may make its part false, so both questions are
//! answered for every form. Anything the statistics do not bound exactly answers "may": float
//! columns for falsity (NaN is left out of their bounds), columns below a struct (no zone maps),
//! a string maximum longer than the writer keeps (omitted), zones without statistics.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_schema::DataType;

use super::bind::{BoundColumn, BoundPredicate, constant_as_bool, constant_as_integer, constant_bytes};
use super::predicate::{CompareOp, NullMatching};
use crate::encodings::statistics::ValueKind;
use crate::encodings::statistics::{StatValue, decode_bound};
use crate::format::proto::PageStatistics;
use crate::selection::RowSelection;

/// The statistics of one column per zone of rows.
#[derive(Debug, Clone)]
pub struct ColumnZones {
    /// First row of each zone, then the column's row count: zone `i` is `starts[i]..starts[i + 1]`.
    pub starts: Vec<u64>,
    /// Each zone's statistics (`None`: unknown).
    pub stats: Vec<Option<PageStatistics>>,
}

impl ColumnZones {
    /// Zones of `rows_per_zone` rows (the last possibly short) over `num_rows` rows.
    pub fn uniform(rows_per_zone: u64, num_rows: u64, stats: Vec<PageStatistics>) -> Self {
        let starts = (0..=stats.len() as u64).map(|i| (i * rows_per_zone).min(num_rows)).collect();
        Self { starts, stats: stats.into_iter().map(Some).collect() }
    }
}

/// How many zones a filtered read ruled out, of how many it looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZoneCounts {
    /// Zones looked at (segments of rows between any two zone boundaries of the filter
    /// columns, within the rows read).
    pub total: u64,
    /// Of which ruled out by the statistics.
    pub skipped: u64,
    /// Rows (of those kept) in zones whose statistics say every row matches: no value can make
    /// the predicate false, and its columns have no nulls there.
    pub certain_rows: u64,
}

/// The rows of `within` that may satisfy `predicate`, given the zones of the top-level columns
/// (by field index) that have them.
pub fn candidate_rows(
    predicate: &BoundPredicate,
    zones: &HashMap<usize, Arc<ColumnZones>>,
    within: &RowSelection,
) -> (RowSelection, ZoneCounts) {
    let mut counts = ZoneCounts::default();
    if zones.is_empty() {
        return (within.clone(), counts);
    }
    // Segments between every boundary of every column's zones.
    let mut boundaries: Vec<u64> = zones.values().flat_map(|z| z.starts.iter().copied()).collect();
    boundaries.sort_unstable();
    boundaries.dedup();
    let mut kept: Vec<Range<u64>> = Vec::new();
    for segment in boundaries.windows(2).map(|w| w[0]..w[1]) {
        if within.within(segment.clone()).is_empty() {
            continue;
        }
        counts.total += 1;
        let zone_of = |field: usize| -> Option<(&PageStatistics, u64)> {
            let column = zones.get(&field)?;
            let i = column.starts.partition_point(|s| *s <= segment.start).checked_sub(1)?;
            let rows = column.starts.get(i + 1)? - column.starts[i];
            column.stats.get(i)?.as_ref().map(|s| (s, rows))
        };
        if may(predicate, true, &zone_of) {
            if !may(predicate, false, &zone_of) && without_nulls(predicate, &zone_of) {
                counts.certain_rows += within.within(segment.clone()).iter().map(|r| r.end - r.start).sum::<u64>();
            }
            match kept.last_mut() {
                Some(last) if last.end == segment.start => last.end = segment.end,
                _ => kept.push(segment),
            }
        } else {
            counts.skipped += 1;
        }
    }
    (within.intersect(&RowSelection::from_sorted_ranges(kept)), counts)
}

type ZoneOf<'a> = dyn Fn(usize) -> Option<(&'a PageStatistics, u64)> + 'a;

/// Whether every column `predicate` reads is known to hold no null in the zone.
fn without_nulls<'a>(predicate: &BoundPredicate, zone_of: &ZoneOf<'a>) -> bool {
    let mut all = true;
    predicate.visit(&mut |column| {
        all &= column.is_top_level() && zone_of(column.field).is_some_and(|(zone, _)| zone.null_count == 0);
    });
    all
}

/// Whether some row of the zone may give `predicate` the value `want`.
fn may<'a>(predicate: &BoundPredicate, want: bool, zone_of: &ZoneOf<'a>) -> bool {
    let stats = |column: &BoundColumn| if column.is_top_level() { zone_of(column.field) } else { None };
    match predicate {
        BoundPredicate::Compare { column, op, value } => {
            let Some((zone, rows)) = stats(column) else { return true };
            if zone.null_count >= rows {
                return false;
            }
            compare_may(column, *op, value, want, zone)
        }
        BoundPredicate::Same { column, value } => {
            let Some((zone, rows)) = stats(column) else { return true };
            if !want {
                return true;
            }
            let constant = match value.data_type() {
                DataType::Float32 => value.as_primitive::<Float32Type>().value(0) as f64,
                _ => value.as_primitive_opt::<Float64Type>().map_or(f64::NAN, |v| v.value(0)),
            };
            let float = |b: Option<&[u8]>| match b.and_then(|b| decode_bound(b, &column.value_type)) {
                Some(StatValue::Float(v)) => Some(v),
                _ => None,
            };
            // NaN is left out of the bounds: a zone may hold it whatever they are.
            zone.null_count < rows
                && (constant.is_nan()
                    || within(
                        CompareOp::Eq,
                        &constant,
                        float(zone.min.as_deref()).as_ref(),
                        float(zone.max.as_deref()).as_ref(),
                    ))
        }
        BoundPredicate::NonNull { column, value } => {
            want == *value && stats(column).is_none_or(|(zone, rows)| zone.null_count < rows)
        }
        BoundPredicate::In { column, parts, set_has_null, nulls } => {
            if !want {
                return true;
            }
            let has_nulls = stats(column).is_none_or(|(zone, _)| zone.null_count > 0);
            (has_nulls && *set_has_null && *nulls == NullMatching::Match) || parts.iter().any(|p| may(p, true, zone_of))
        }
        BoundPredicate::IsNull(column) | BoundPredicate::IsNotNull(column) => {
            let Some((zone, rows)) = stats(column) else { return true };
            let null_wanted = want == matches!(predicate, BoundPredicate::IsNull(_));
            if null_wanted { zone.null_count > 0 } else { zone.null_count < rows }
        }
        BoundPredicate::Column(column) => {
            let Some((zone, rows)) = stats(column) else { return true };
            if zone.null_count >= rows {
                return false;
            }
            let bound = if want { &zone.max } else { &zone.min };
            bound.as_deref().and_then(|b| b.first()).is_none_or(|b| (*b != 0) == want)
        }
        BoundPredicate::Literal(value) => *value == Some(want),
        BoundPredicate::And(parts) if want => parts.iter().all(|p| may(p, true, zone_of)),
        BoundPredicate::And(parts) => parts.iter().any(|p| may(p, false, zone_of)),
        BoundPredicate::Or(parts) if want => parts.iter().any(|p| may(p, true, zone_of)),
        BoundPredicate::Or(parts) => parts.iter().all(|p| may(p, false, zone_of)),
        BoundPredicate::Not(part) => may(part, !want, zone_of),
    }
}

/// Whether some non-null value within the zone's bounds may make `column <op> value` `want`.
fn compare_may(column: &BoundColumn, op: CompareOp, value: &ArrayRef, want: bool, zone: &PageStatistics) -> bool {
    let op = if want { op } else { op.negate() };
    let (min, max) = (zone.min.as_deref(), zone.max.as_deref());
    match ValueKind::of(&column.value_type) {
        ValueKind::Integer { .. } => {
            let Some(constant) = constant_as_integer(value) else { return true };
            let int = |b: Option<&[u8]>| match b.and_then(|b| decode_bound(b, &column.value_type)) {
                Some(StatValue::Int(v)) => Some(v),
                _ => None,
            };
            within(op, &constant, int(min).as_ref(), int(max).as_ref())
        }
        ValueKind::Float => {
            // NaN, left out of the bounds, makes every comparison but `!=` false.
            if !want || op == CompareOp::NotEq {
                return true;
            }
            let Some(constant) = value.as_any().downcast_ref::<arrow_array::Float64Array>().map(|v| v.value(0)) else {
                return true;
            };
            let float = |b: Option<&[u8]>| match b.and_then(|b| decode_bound(b, &column.value_type)) {
                Some(StatValue::Float(v)) => Some(v),
                _ => None,
            };
            within(op, &constant, float(min).as_ref(), float(max).as_ref())
        }
        ValueKind::Bytes if !matches!(column.value_type, DataType::FixedSizeBinary(_)) => {
            let Some(constant) = constant_bytes(value) else { return true };
            // A stored minimum may be a prefix of the true one: still a lower bound.
            within(op, constant, min, max)
        }
        ValueKind::Boolean => {
            let Some(constant) = constant_as_bool(value) else { return true };
            let bool_of = |b: Option<&[u8]>| b.and_then(|b| b.first()).map(|b| *b != 0);
            within(op, &constant, bool_of(min).as_ref(), bool_of(max).as_ref())
        }
        _ => true,
    }
}

/// Whether some value `v` with `min <= v <= max` (an unknown bound is no bound) may satisfy
/// `v <op> constant`.
fn within<T: PartialOrd + ?Sized>(op: CompareOp, constant: &T, min: Option<&T>, max: Option<&T>) -> bool {
    match op {
        CompareOp::Eq => min.is_none_or(|m| m <= constant) && max.is_none_or(|m| m >= constant),
        CompareOp::NotEq => !(min.is_some_and(|m| m == constant) && max.is_some_and(|m| m == constant)),
        CompareOp::Lt => min.is_none_or(|m| m < constant),
        CompareOp::LtEq => min.is_none_or(|m| m <= constant),
        CompareOp::Gt => max.is_none_or(|m| m > constant),
        CompareOp::GtEq => max.is_none_or(|m| m >= constant),
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::Int32Array;
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::filter::Predicate;

    fn stats(min: i32, max: i32, nulls: u64) -> PageStatistics {
        PageStatistics {
            null_count: nulls,
            min: Some(min.to_le_bytes().to_vec()),
            max: Some(max.to_le_bytes().to_vec()),
        }
    }

    #[test]
    fn zones_ruled_out_by_bounds_and_nulls() {
        let schema = Schema::new(vec![Field::new("x", DataType::Int32, true)]);
        // Zones of 10 rows: [0, 9], [10, 19], all null, [30, 39] with 2 nulls.
        let all_null = PageStatistics { null_count: 10, min: None, max: None };
        let zones = ColumnZones::uniform(10, 40, vec![stats(0, 9, 0), stats(10, 19, 0), all_null, stats(30, 39, 2)]);
        let zones: HashMap<usize, Arc<ColumnZones>> = [(0, Arc::new(zones))].into_iter().collect();
        let x = |op, v: i32| Predicate::Compare {
            column: vec!["x".into()],
            op,
            value: Arc::new(Int32Array::from(vec![v])),
        };
        let run = |p: Predicate| {
            let bound = BoundPredicate::bind(&p, schema.fields()).unwrap();
            let (rows, counts) = candidate_rows(&bound, &zones, &RowSelection::all(40));
            (rows.ranges().to_vec(), counts.skipped)
        };
        assert_eq!(run(x(CompareOp::Gt, 15)), (vec![10..20, 30..40], 2));
        assert_eq!(run(x(CompareOp::Lt, 10).not()), (vec![10..20, 30..40], 2));
        assert_eq!(run(Predicate::IsNull(vec!["x".into()])), (vec![20..40], 2));
        assert_eq!(run(x(CompareOp::Eq, 5).or(x(CompareOp::Eq, 35))), (vec![0..10, 30..40], 2));
        assert_eq!(run(x(CompareOp::Gt, 100)), (vec![], 4));
    }
}
