//! [`Accumulator`]: one aggregate function's partial results, a group at a time.
//!
//! A partial sum is kept as *pieces* each within the limits of the summed values' type, so that
//! whoever merges the partial results in that type (Spark casts a partial decimal sum back to
//! its argument's type before summing again) never overflows where the total would not: a
//! group's sum that leaves those limits continues in a new piece, handed out as one more row of
//! the group whose other aggregates are neutral (a count of 0, a null minimum, maximum or sum).
//!
//! Final results ([`Accumulator::finish_final`]) add a group's pieces exactly, once.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, make_array};
use arrow_buffer::{MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;

use super::expression::{NumberKind, Numbers};
use crate::error::{Error, Result};

/// The state of one aggregate function over every group.
#[derive(Debug)]
pub enum Accumulator {
    /// Rows counted.
    Count(Vec<i64>),
    /// The sums of a group's values, in pieces within `(min, max)`.
    Sum {
        /// The limits of one piece.
        limits: (i128, i128),
        /// Each group's current piece; `None` before its first value.
        current: Vec<Option<i128>>,
        /// The pieces finished before the current one: (group, piece).
        finished: Vec<(u32, i128)>,
    },
    /// The least (`least`) or greatest value of each group.
    Extreme {
        /// Whether the least value is kept.
        least: bool,
        /// Each group's value so far.
        best: Vec<Option<i128>>,
    },
}

impl Accumulator {
    /// A sum of values of `kind`.
    pub fn sum(kind: NumberKind) -> Self {
        let limits = match kind {
            NumberKind::Decimal { precision, .. } => {
                let max = 10i128.pow(u32::from(precision)) - 1;
                (-max, max)
            }
            NumberKind::Integer { .. } => (i128::from(i64::MIN), i128::from(i64::MAX)),
        };
        Accumulator::Sum { limits, current: Vec::new(), finished: Vec::new() }
    }

    /// Makes room for `groups` groups.
    pub fn grow(&mut self, groups: usize) {
        match self {
            Accumulator::Count(counts) => counts.resize(groups, 0),
            Accumulator::Sum { current, .. } => current.resize(groups, None),
            Accumulator::Extreme { best, .. } => best.resize(groups, None),
        }
    }

    /// Counts the rows of each group whose value is not null (`valid`: `None` when all are).
    pub fn count(&mut self, groups: &[u32], valid: Option<&NullBuffer>) {
        let Accumulator::Count(counts) = self else { return };
        match valid {
            None => groups.iter().for_each(|g| counts[*g as usize] += 1),
            Some(nulls) => {
                for (row, g) in groups.iter().enumerate() {
                    counts[*g as usize] += i64::from(nulls.is_valid(row));
                }
            }
        }
    }

    /// Adds each row's number to its group.
    pub fn update(&mut self, groups: &[u32], numbers: &Numbers) {
        let valid = |row: usize| numbers.nulls.as_ref().is_none_or(|n| n.is_valid(row));
        match self {
            Accumulator::Count(_) => self.count(groups, numbers.nulls.as_ref()),
            Accumulator::Sum { limits: (min, max), current, finished } => {
                for (row, (g, value)) in groups.iter().zip(&numbers.values).enumerate() {
                    if !valid(row) {
                        continue;
                    }
                    let slot = &mut current[*g as usize];
                    *slot = Some(match *slot {
                        None => *value,
                        Some(sum) => match sum.checked_add(*value).filter(|s| (*min..=*max).contains(s)) {
                            Some(s) => s,
                            None => {
                                finished.push((*g, sum));
                                *value
                            }
                        },
                    });
                }
            }
            Accumulator::Extreme { least, best } => {
                for (row, (g, value)) in groups.iter().zip(&numbers.values).enumerate() {
                    if !valid(row) {
                        continue;
                    }
                    let slot = &mut best[*g as usize];
                    let better = match slot {
                        None => true,
                        Some(b) => (*least && *value < *b) || (!*least && *value > *b),
                    };
                    if better {
                        *slot = Some(*value);
                    }
                }
            }
        }
    }

    /// The extra rows this accumulator needs: the groups of its finished pieces.
    pub fn extra_rows(&self) -> Vec<u32> {
        match self {
            Accumulator::Sum { finished, .. } => finished.iter().map(|(g, _)| *g).collect(),
            _ => Vec::new(),
        }
    }

    /// The partial results: one row per group, then the extra rows (`extra`: every
    /// accumulator's, in order; this one's own pieces at `own`, an offset into `extra`).
    ///
    /// # Errors
    /// An internal error for a type the values cannot be built in.
    pub fn finish(&self, data_type: &DataType, extra: &[u32], own: usize) -> Result<ArrayRef> {
        match self {
            Accumulator::Count(counts) => {
                let mut all = counts.clone();
                all.resize(counts.len() + extra.len(), 0);
                Ok(Arc::new(Int64Array::from(all)))
            }
            Accumulator::Sum { current, finished, .. } => {
                let mut all = current.clone();
                all.resize(current.len() + extra.len(), None);
                for (i, (_, piece)) in finished.iter().enumerate() {
                    all[current.len() + own + i] = Some(*piece);
                }
                numbers_array(&all, data_type)
            }
            Accumulator::Extreme { best, .. } => {
                let mut all = best.clone();
                all.resize(best.len() + extra.len(), None);
                numbers_array(&all, data_type)
            }
        }
    }

    /// The final results, one row per group: counts and extremes as they are; each sum the exact
    /// total of its pieces in `data_type` (a decimal's digits or an `i64`), null where it does
    /// not fit (an integer wraps, as Spark's do, and either is an error with `ansi`).
    ///
    /// # Errors
    /// A sum that does not fit, with `ansi`; an internal error for a type the values cannot be
    /// built in.
    pub fn finish_final(&self, data_type: &DataType, ansi: bool) -> Result<ArrayRef> {
        let Accumulator::Sum { current, finished, .. } = self else {
            return self.finish(data_type, &[], 0);
        };
        let mut totals: Vec<Option<WideSum>> = current.iter().map(|c| c.map(WideSum::from)).collect();
        for (group, piece) in finished {
            let total = totals[*group as usize].get_or_insert(WideSum::from(0));
            total.add(*piece);
        }
        let integer = !matches!(data_type, DataType::Decimal128(..));
        let fits = |value: i128| match data_type {
            DataType::Decimal128(precision, _) => value.unsigned_abs() < 10u128.pow(u32::from(*precision)),
            _ => i64::try_from(value).is_ok(),
        };
        let mut values = Vec::with_capacity(totals.len());
        for total in totals {
            values.push(match total {
                None => None,
                Some(total) => match total.exact().filter(|v| fits(*v)) {
                    Some(v) => Some(v),
                    None if ansi => {
                        return Err(Error::invalid_argument(format!(
                            "aggregate: arithmetic overflow: a sum does not fit {data_type} (ANSI mode)"
                        )));
                    }
                    // `low` is the total modulo 2^128, so its low 64 bits are the total's.
                    None if integer => Some(i128::from(total.low as i64)),
                    None => None,
                },
            });
        }
        numbers_array(&values, data_type)
    }
}

/// An integer sum exact beyond `i128`: `low + carries * 2^128`.
#[derive(Debug, Clone, Copy)]
struct WideSum {
    low: i128,
    carries: i64,
}

impl From<i128> for WideSum {
    fn from(low: i128) -> Self {
        Self { low, carries: 0 }
    }
}

impl WideSum {
    fn add(&mut self, value: i128) {
        let (low, overflowed) = self.low.overflowing_add(value);
        if overflowed {
            // A wrap up past i128::MAX when the value was positive, down past MIN otherwise.
            self.carries += if value > 0 { 1 } else { -1 };
        }
        self.low = low;
    }

    /// The total, if it is an `i128`.
    fn exact(self) -> Option<i128> {
        (self.carries == 0).then_some(self.low)
    }
}

/// An array of `data_type` (an integer, date, timestamp or decimal type) holding `values`.
///
/// # Errors
/// An internal error for another type.
pub fn numbers_array(values: &[Option<i128>], data_type: &DataType) -> Result<ArrayRef> {
    let width = data_type
        .primitive_width()
        .filter(|w| matches!(w, 1 | 2 | 4 | 8 | 16))
        .ok_or_else(|| Error::internal(format!("aggregate: results of type {data_type}")))?;
    // Arrow's buffers are aligned for every width (a `Vec<u8>` is not).
    let mut bytes = MutableBuffer::with_capacity(values.len() * width);
    for value in values {
        bytes.extend_from_slice(&value.unwrap_or(0).to_le_bytes()[..width]);
    }
    let nulls = values.iter().any(Option::is_none).then(|| NullBuffer::from_iter(values.iter().map(Option::is_some)));
    let data = ArrayData::builder(data_type.clone())
        .len(values.len())
        .add_buffer(bytes.into())
        .nulls(nulls)
        .build()
        .map_err(|e| Error::internal(format!("aggregate: results of type {data_type}: {e}")))?;
    Ok(make_array(data))
}
