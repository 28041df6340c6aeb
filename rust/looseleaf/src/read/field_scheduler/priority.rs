//! [`RowPriority`]: which top-level row a row of some column serves, so that every request can
//! carry the lowest top-level row it serves as its priority.

use std::sync::Arc;

use crate::io::Priority;

/// Maps the rows of a column (top-level rows, or items of lists at some depth) to the
/// top-level rows they belong to.
#[derive(Debug, Clone)]
pub enum RowPriority {
    /// The rows are top-level rows.
    TopLevel,
    /// Items of lists whose offsets were read: `starts[i]` is the first item of the `i`-th
    /// selected non-empty list, which serves top-level row `rows[i]` (both sorted).
    Items {
        /// First item of each list.
        starts: Arc<[u64]>,
        /// Its top-level row.
        rows: Arc<[u64]>,
    },
    /// Items of whole pages of lists read without their offsets: within each page, the
    /// priority is interpolated between the top-level rows of its first and last lists.
    /// `items[k]` is the first item of page `k` and `rows[k]` the top-level row of its first
    /// list (one more entry closes the last page). An estimate; the I/O scheduler's
    /// [`Urgency`](crate::io::Urgency) keeps reads whose estimate is off from being held back.
    Interpolated {
        /// First item of each page, then the end of the last.
        items: Arc<[u64]>,
        /// Top-level row of each page's first list, then of the last page's last list.
        rows: Arc<[u64]>,
    },
    /// Items of fixed-size lists: item `i` belongs to list `i / dimension` of the parent.
    Fixed {
        /// Items per list.
        dimension: u64,
        /// The lists' own mapping.
        parent: Arc<RowPriority>,
    },
}

impl RowPriority {
    /// The priority of `row`.
    pub fn priority(&self, row: u64) -> Priority {
        Priority(self.top_level_row(row))
    }

    fn top_level_row(&self, row: u64) -> u64 {
        match self {
            RowPriority::TopLevel => row,
            RowPriority::Items { starts, rows } => {
                let index = starts.partition_point(|s| *s <= row).saturating_sub(1);
                rows.get(index).copied().unwrap_or(0)
            }
            RowPriority::Interpolated { items, rows } => {
                let page = items.partition_point(|s| *s <= row).saturating_sub(1).min(items.len().saturating_sub(2));
                let (Some(&first_item), Some(&end_item), Some(&first_row), Some(&next_row)) =
                    (items.get(page), items.get(page + 1), rows.get(page), rows.get(page + 1))
                else {
                    return rows.first().copied().unwrap_or(0);
                };
                let offset = row.saturating_sub(first_item).min(end_item - first_item) as u128;
                let span = next_row.saturating_sub(first_row) as u128;
                first_row + (offset * span / (end_item - first_item).max(1) as u128) as u64
            }
            RowPriority::Fixed { dimension, parent } => parent.top_level_row(row / (*dimension).max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_items_to_top_level_rows() {
        let items = RowPriority::Items { starts: vec![0, 5, 7].into(), rows: vec![10, 11, 20].into() };
        assert_eq!(items.priority(0), Priority(10));
        assert_eq!(items.priority(6), Priority(11));
        assert_eq!(items.priority(100), Priority(20));
        let fixed = RowPriority::Fixed { dimension: 4, parent: Arc::new(items) };
        assert_eq!(fixed.priority(21), Priority(11));
        let estimate =
            RowPriority::Interpolated { items: vec![100, 150, 160].into(), rows: vec![1000, 1010, 2000].into() };
        assert_eq!(estimate.priority(100), Priority(1000));
        assert_eq!(estimate.priority(125), Priority(1005));
        assert_eq!(estimate.priority(150), Priority(1010));
        assert_eq!(estimate.priority(155), Priority(1505));
        assert_eq!(estimate.priority(500), Priority(2000));
    }
}
