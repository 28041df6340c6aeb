//! [`RowSelection`]: which top-level rows a read wants, and the one place where rows a caller
//! names (indices, ranges, row numbers from a front end) are checked.

use std::fmt::Display;
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, Result, ensure};

/// Converts row numbers a front end received (possibly negative) into rows, refusing negative
/// ones with an error naming `argument`.
///
/// # Errors
/// [`Error::InvalidArgument`] for the first negative value.
pub fn row_numbers<T>(argument: &str, values: impl IntoIterator<Item = T>) -> Result<Vec<u64>>
where
    T: TryInto<u64> + Display + Copy,
{
    values
        .into_iter()
        .map(|value| {
            value.try_into().map_err(|_| Error::invalid_argument(format!("{argument}: row {value} is negative")))
        })
        .collect()
}

/// A set of top-level rows as sorted, disjoint, non-adjacent, non-empty ranges.
///
/// Clones share the ranges: every column of a read holds the read's selection, and a take of
/// 1,000 rows from 300 columns kept 300 copies of its 1,000 ranges (fresh memory, which a
/// process's first read pays a page fault per 4 KiB for).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowSelection {
    ranges: Arc<[Range<u64>]>,
}

impl RowSelection {
    /// Every row of a file of `num_rows` rows.
    pub fn all(num_rows: u64) -> Self {
        Self::from_sorted(vec![0..num_rows])
    }

    /// The rows of `range`.
    pub fn range(range: Range<u64>) -> Self {
        Self::from_sorted(vec![range])
    }

    /// The rows of `range`, checked to run forwards and to lie within a file of `num_rows` rows.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the range.
    pub fn try_range(range: Range<u64>, num_rows: u64) -> Result<Self> {
        ensure!(range.start <= range.end, invalid, "row range {range:?} ends before it starts");
        ensure!(range.end <= num_rows, invalid, "row range {range:?} is out of range for a file of {num_rows} rows");
        Ok(Self::range(range))
    }

    /// The rows at `indices` (any order, repeats allowed), checked to lie within a file of
    /// `num_rows` rows.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first index out of range.
    pub fn try_from_indices(indices: &[u64], num_rows: u64) -> Result<Self> {
        if let Some(bad) = indices.iter().find(|i| **i >= num_rows) {
            return Err(Error::invalid_argument(format!(
                "indices: row index {bad} is out of range for a file of {num_rows} rows"
            )));
        }
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        Ok(Self::from_sorted_indices(&sorted))
    }

    /// The rows of `indices`, which must be sorted ascending (duplicates allowed).
    pub fn from_sorted_indices(indices: &[u64]) -> Self {
        Self::from_sorted(indices.iter().map(|i| *i..*i + 1).collect())
    }

    /// Normalises sorted ranges (merging overlapping and touching ones, dropping empty ones).
    fn from_sorted(ranges: Vec<Range<u64>>) -> Self {
        let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
        for range in ranges.into_iter().filter(|r| r.end > r.start) {
            match out.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => out.push(range),
            }
        }
        Self { ranges: out.into() }
    }

    /// Checks that every selected row is below `num_rows`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the first row out of range.
    pub fn check_bounds(&self, num_rows: u64) -> Result<()> {
        if let Some(last) = self.ranges.last() {
            ensure!(
                last.end <= num_rows,
                invalid,
                "row {} is out of range for a file of {num_rows} rows",
                last.end - 1
            );
        }
        Ok(())
    }

    /// The ranges.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Number of selected rows.
    pub fn num_rows(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// The items of the selected rows of fixed-size lists of `dimension` items.
    pub fn scaled(&self, dimension: u64) -> Self {
        Self::from_sorted(
            self.ranges.iter().map(|r| r.start.saturating_mul(dimension)..r.end.saturating_mul(dimension)).collect(),
        )
    }

    /// A selection of sorted, possibly touching or empty ranges.
    pub fn from_sorted_ranges(ranges: Vec<Range<u64>>) -> Self {
        Self::from_sorted(ranges)
    }

    /// The rows selected by both.
    pub fn intersect(&self, other: &RowSelection) -> Self {
        let (mut a, mut b) = (self.ranges.iter().peekable(), other.ranges.iter().peekable());
        let mut out = Vec::new();
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            let (start, end) = (x.start.max(y.start), x.end.min(y.end));
            if start < end {
                out.push(start..end);
            }
            if x.end <= y.end {
                a.next();
            } else {
                b.next();
            }
        }
        Self::from_sorted(out)
    }

    /// The selected ranges overlapping `span` (not cut to it).
    fn overlapping(&self, span: &Range<u64>) -> &[Range<u64>] {
        let first = self.ranges.partition_point(|r| r.end <= span.start);
        let last = self.ranges.partition_point(|r| r.start < span.end).max(first);
        &self.ranges[first..last]
    }

    /// The first selected row of `span`, if any.
    pub fn first_within(&self, span: Range<u64>) -> Option<u64> {
        self.overlapping(&span).first().map(|r| r.start.max(span.start))
    }

    /// Whether every row of `span` is selected.
    pub fn covers(&self, span: Range<u64>) -> bool {
        matches!(self.overlapping(&span), [r] if r.start <= span.start && span.end <= r.end)
    }

    /// The selected rows within `span`, relative to `span.start`.
    pub fn within(&self, span: Range<u64>) -> Vec<Range<u64>> {
        self.overlapping(&span)
            .iter()
            .map(|r| r.start.max(span.start) - span.start..r.end.min(span.end) - span.start)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_normalises_and_intersects() {
        let s = RowSelection::from_sorted_indices(&[1, 2, 2, 3, 7, 9, 10]);
        assert_eq!(s.ranges(), &[1..4, 7..8, 9..11]);
        assert_eq!(s.num_rows(), 6);
        assert_eq!(s.within(0..5), vec![1..4]);
        assert_eq!(s.within(3..10), vec![0..1, 4..5, 6..7]);
        assert_eq!(s.within(11..20), Vec::<Range<u64>>::new());
        assert_eq!((s.first_within(0..5), s.first_within(2..9), s.first_within(4..7)), (Some(1), Some(2), None));
        assert!(s.covers(1..4) && s.covers(2..3) && s.covers(9..11));
        assert!(!s.covers(0..2) && !s.covers(3..5) && !s.covers(7..10) && !s.covers(4..7));
        assert!(s.check_bounds(11).is_ok());
        assert!(s.check_bounds(10).is_err());
        let t = RowSelection::from_sorted_ranges(vec![0..2, 3..8, 10..20]);
        assert_eq!(s.intersect(&t).ranges(), &[1..2, 3..4, 7..8, 10..11]);
        assert_eq!(t.intersect(&s), s.intersect(&t));
        assert_eq!(s.intersect(&RowSelection::default()).ranges(), &[] as &[Range<u64>]);
    }
}
