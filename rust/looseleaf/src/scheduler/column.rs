//! The pages of one column, and the job that schedules the selected ones in order.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::RowSelection;
use crate::encodings::PageLoad;
use crate::encodings::physical::{PageContext, page_scheduler};
use crate::error::{Result, ensure};
use crate::format::proto::{ColumnMetadata, PageMetadata};
use crate::io::{EncodingsIo, PageIo, Priority};

/// The decoded metadata of one column, with each page's first row.
#[derive(Debug)]
pub struct ColumnPages {
    /// The column's number.
    pub column: u32,
    /// The pages.
    pub pages: Vec<PageMetadata>,
    /// First row of each page, plus the total row count at the end.
    starts: Vec<u64>,
    /// End of the region where page buffers may lie.
    pub data_end: u64,
}

impl ColumnPages {
    /// Wraps the metadata of `column`.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the page row counts overflow.
    pub fn try_new(column: u32, metadata: ColumnMetadata, data_end: u64) -> Result<Self> {
        let mut starts = Vec::with_capacity(metadata.pages.len() + 1);
        let mut total = 0u64;
        starts.push(0);
        for page in &metadata.pages {
            total = total
                .checked_add(page.num_rows)
                .ok_or_else(|| crate::Error::corrupt("", format!("row counts of column {column} overflow")))?;
            starts.push(total);
        }
        Ok(Self { column, pages: metadata.pages, starts, data_end })
    }

    /// Total number of values in the column.
    pub fn num_rows(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Rows of page `index`.
    pub fn page_rows(&self, index: usize) -> Range<u64> {
        self.starts[index]..self.starts[index + 1]
    }

    /// The pages overlapping `selection`, each with its selected rows (relative to the page).
    pub fn select(&self, selection: &RowSelection) -> Vec<(usize, Vec<Range<u64>>)> {
        let mut out = Vec::new();
        for range in selection.ranges() {
            let first = self.starts.partition_point(|s| *s <= range.start).saturating_sub(1);
            for index in first..self.pages.len() {
                let rows = self.page_rows(index);
                if rows.start >= range.end {
                    break;
                }
                if rows.is_empty() || (out.last().is_some_and(|(last, _): &(usize, _)| *last == index)) {
                    continue;
                }
                out.push((index, selection.within(rows)));
            }
        }
        out.retain(|(_, ranges)| !ranges.is_empty());
        out
    }

    /// Builds the scheduler tree of page `index`.
    pub fn page_scheduler(&self, index: usize) -> Result<Box<dyn crate::encodings::PageScheduler>> {
        let page = &self.pages[index];
        let context = PageContext { buffers: &page.buffers, num_rows: page.num_rows, data_end: self.data_end };
        let scheduler = page_scheduler(page.encoding.as_ref(), &context)?;
        ensure!(
            scheduler.num_rows() == page.num_rows,
            corrupt,
            "page {index} of column {} is inconsistent",
            self.column
        );
        Ok(scheduler)
    }
}

/// A scheduled page on its way to a decoder.
pub struct ScheduledPage {
    /// Number of selected rows in the page.
    pub num_rows: u64,
    /// The future of the page's decoder.
    pub load: PageLoad,
}

/// Schedules the pages of one column, one at a time, in row order.
pub trait ColumnJob: Send {
    /// The priority of the next page to schedule (the lowest top-level row it serves), or
    /// `None` when every page has been scheduled.
    fn next_priority(&self) -> Option<Priority>;

    /// Schedules the next page: submits its reads and sends its decoder on. Never waits.
    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()>;
}

/// The [`ColumnJob`] of a column whose rows are top-level rows.
pub struct TopLevelColumnJob {
    column: Arc<ColumnPages>,
    /// Selected pages not yet scheduled, with their page-relative row ranges.
    pending: VecDeque<(usize, Vec<Range<u64>>)>,
    sender: mpsc::UnboundedSender<ScheduledPage>,
}

impl TopLevelColumnJob {
    /// A job scheduling the pages of `column` that hold rows of `selection`, sending them to
    /// `sender`.
    pub fn new(
        column: Arc<ColumnPages>,
        selection: &RowSelection,
        sender: mpsc::UnboundedSender<ScheduledPage>,
    ) -> Self {
        let pending = column.select(selection).into();
        Self { column, pending, sender }
    }
}

impl ColumnJob for TopLevelColumnJob {
    fn next_priority(&self) -> Option<Priority> {
        self.pending.front().map(|(index, ranges)| {
            Priority(self.column.page_rows(*index).start + ranges.first().map_or(0, |r| r.start))
        })
    }

    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()> {
        if self.sender.is_closed() {
            // The decoder is gone (the read was dropped): schedule nothing more.
            self.pending.clear();
            return Ok(());
        }
        let Some(priority) = self.next_priority() else { return Ok(()) };
        let Some((index, ranges)) = self.pending.pop_front() else { return Ok(()) };
        let scheduler = self.column.page_scheduler(index)?;
        let page_io = PageIo::new(io.clone(), priority, self.column.column);
        let load = scheduler.schedule_ranges(&ranges, &page_io);
        page_io.finish();
        let num_rows = ranges.iter().map(|r| r.end - r.start).sum();
        // A closed channel means the decoder is gone (the read was dropped): nothing to do.
        let _ = self.sender.send(ScheduledPage { num_rows, load });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(rows: &[u64]) -> ColumnPages {
        let metadata = ColumnMetadata {
            pages: rows.iter().map(|n| PageMetadata { num_rows: *n, ..Default::default() }).collect(),
        };
        ColumnPages::try_new(0, metadata, 0).unwrap()
    }

    #[test]
    fn select_finds_pages_and_relative_rows() {
        let c = column(&[10, 10, 0, 10]);
        assert_eq!(c.select(&RowSelection::all(30)), vec![(0, vec![0..10]), (1, vec![0..10]), (3, vec![0..10])]);
        let s = RowSelection::from_sorted_indices(&[3, 5, 12, 29]);
        assert_eq!(c.select(&s), vec![(0, vec![3..4, 5..6]), (1, vec![2..3]), (3, vec![9..10])]);
        assert_eq!(c.select(&RowSelection::range(9..21)), vec![(0, vec![9..10]), (1, vec![0..10]), (3, vec![0..1])]);
    }
}
