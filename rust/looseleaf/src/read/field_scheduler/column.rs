//! The pages of one column, and the job that schedules the selected ones in order.
//!
//! # Pages in parts
//! A column of values may load a page a part at a time: when the read's budget cannot hold a
//! page of every column a batch needs (1,000 columns of 1 MiB pages under a 16 MiB budget),
//! the read sets [`ReadContext::page_part_bytes`], and a page whose selected rows would take
//! more than that, in a layout where a run of rows costs its share of the bytes
//! ([`reads_in_parts`]), is scheduled as parts of at most that many bytes, each its own load
//! with the priority of its first row. The decoders see each part as a page of its own. Memory
//! then stays near the budget plus the batches in flight, at the cost of more, smaller reads.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use super::RowPriority;
use crate::encodings::compression::CompressedPageScheduler;
use crate::encodings::physical::{PageContext, page_scheduler, reads_in_parts};
use crate::encodings::{PageLoad, PageScheduler};
use crate::error::{Result, ensure};
use crate::format::proto::{ColumnMetadata, PageMetadata, ZoneMapLocation};
use crate::io::{BufferChecks, EncodingsIo, PageIo, Priority};
use crate::read::pages::{PageReceiver, PageSender, ReadContext, ScheduledPage, page_channel};
use crate::read::scheduling_loop::ColumnJob;
use crate::selection::RowSelection;

/// The decoded metadata of one column, with each page's first row.
#[derive(Debug)]
pub struct ColumnPages {
    /// The column's number.
    pub column: u32,
    /// The column's dotted path and number, for error messages.
    pub label: Arc<str>,
    /// The pages.
    pub pages: Vec<PageMetadata>,
    /// First row of each page, plus the total row count at the end.
    starts: Vec<u64>,
    /// For list offsets: first item of each page, plus the total item count at the end.
    item_starts: Vec<u64>,
    /// End of the region where page buffers may lie.
    pub data_end: u64,
    /// Where the column's zone map is, if it has one.
    pub zone_map: Option<ZoneMapLocation>,
}

impl ColumnPages {
    /// Wraps the metadata of `column`, whose dotted path is `path`.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the page row counts overflow.
    pub fn try_new(column: u32, path: &str, metadata: ColumnMetadata, data_end: u64) -> Result<Self> {
        let overflow = || crate::Error::corrupt(format!("row or item counts of column {column} overflow"));
        let mut starts = Vec::with_capacity(metadata.pages.len() + 1);
        let mut item_starts = Vec::with_capacity(metadata.pages.len() + 1);
        let (mut rows, mut items) = (0u64, 0u64);
        starts.push(0);
        item_starts.push(0);
        for page in &metadata.pages {
            rows = rows.checked_add(page.num_rows).ok_or_else(overflow)?;
            items = items.checked_add(page.num_items).ok_or_else(overflow)?;
            starts.push(rows);
            item_starts.push(items);
        }
        let label = format!("{path:?} (number {column})").into();
        Ok(Self { column, label, pages: metadata.pages, starts, item_starts, data_end, zone_map: metadata.zone_map })
    }

    /// Total number of values in the column.
    pub fn num_rows(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Rows of page `index`.
    pub fn page_rows(&self, index: usize) -> Range<u64> {
        self.starts[index]..self.starts[index + 1]
    }

    /// Total number of items of a column of list offsets (the sum of its pages' `num_items`).
    pub fn num_items(&self) -> u64 {
        self.item_starts.last().copied().unwrap_or(0)
    }

    /// Items of page `index` of a column of list offsets.
    pub fn page_items(&self, index: usize) -> Range<u64> {
        self.item_starts[index]..self.item_starts[index + 1]
    }

    /// Total bytes of the column's page buffers.
    pub fn num_bytes(&self) -> u64 {
        (0..self.pages.len()).map(|i| self.page_bytes(i)).fold(0u64, u64::saturating_add)
    }

    /// Bytes of page `index`'s buffers.
    pub fn page_bytes(&self, index: usize) -> u64 {
        self.pages[index].buffers.iter().map(|b| b.size).fold(0u64, u64::saturating_add)
    }

    /// Bytes of the column's largest page.
    pub fn largest_page_bytes(&self) -> u64 {
        (0..self.pages.len()).map(|i| self.page_bytes(i)).max().unwrap_or(0)
    }

    /// `ranges` (selected rows of page `index`, relative to it) cut into parts of at most
    /// `part_bytes` of the page's bytes each, on a grid of whole [`PART_ROWS`] (see the module
    /// documentation); one part if the page is small enough or its layout is not read in parts.
    fn parts(&self, index: usize, ranges: Vec<Range<u64>>, part_bytes: u64) -> VecDeque<Vec<Range<u64>>> {
        let page = &self.pages[index];
        let (rows, bytes) = (page.num_rows, self.page_bytes(index));
        let selected: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let selected_bytes = u128::from(bytes) * u128::from(selected) / u128::from(rows.max(1));
        if page.compression != 0 || !reads_in_parts(page.encoding.as_ref()) || selected_bytes <= u128::from(part_bytes)
        {
            return VecDeque::from([ranges]);
        }
        let rows_per_part = u128::from(rows) * u128::from(part_bytes) / u128::from(bytes.max(1));
        let rows_per_part = u64::try_from(rows_per_part).unwrap_or(u64::MAX).div_ceil(PART_ROWS).max(1) * PART_ROWS;
        let mut parts: VecDeque<Vec<Range<u64>>> = VecDeque::new();
        let mut last_part = None;
        for range in ranges {
            let mut start = range.start;
            while start < range.end {
                let part = start / rows_per_part;
                let end = range.end.min((part + 1).saturating_mul(rows_per_part));
                if last_part != Some(part) {
                    parts.push_back(Vec::new());
                    last_part = Some(part);
                }
                if let Some(current) = parts.back_mut() {
                    current.push(start..end);
                }
                start = end;
            }
        }
        parts
    }

    /// The pages overlapping `selection`, each with its selected rows (relative to the page):
    /// what a column's [`PendingPages`] schedule, page by page.
    #[cfg(test)]
    pub fn select(&self, selection: &RowSelection) -> Vec<(usize, Vec<Range<u64>>)> {
        self.selected_pages(selection)
            .into_iter()
            .map(|index| (index, selection.within(self.page_rows(index))))
            .collect()
    }

    /// The pages overlapping `selection`, in order.
    ///
    /// Walks the pages holding selected rows, skipping the selection's ranges a page covers
    /// by binary search: a take of 1,000 rows from a column of one page looks the page up
    /// once, not once per row (which, for each of 300 columns, was most of the time before a
    /// wide take's first read).
    pub fn selected_pages(&self, selection: &RowSelection) -> Vec<usize> {
        let ranges = selection.ranges();
        let mut out = Vec::new();
        // Rows before `done` are handled; `next` is the first range ending after it.
        let (mut done, mut next) = (0u64, 0usize);
        while let Some(range) = ranges.get(next) {
            let start = range.start.max(done);
            if start >= range.end {
                next += 1;
                continue;
            }
            // The page holding `start`: the last one starting at or before it (pages of no
            // rows start where the next one does, so they are never found).
            let index = self.starts.partition_point(|s| *s <= start).saturating_sub(1);
            if index >= self.pages.len() {
                break;
            }
            let rows = self.page_rows(index);
            if start >= rows.end {
                break;
            }
            // Row `start` is selected and lies in the page.
            out.push(index);
            done = rows.end;
            next += ranges[next..].partition_point(|r| r.end <= done);
        }
        out
    }

    /// Builds the scheduler tree of page `index`.
    pub fn page_scheduler(&self, index: usize) -> Result<Box<dyn PageScheduler>> {
        let page = &self.pages[index];
        let scheduler = if page.compression != 0 {
            Box::new(CompressedPageScheduler::try_new(page, self.data_end)?)
        } else {
            let context = PageContext { buffers: &page.buffers, num_rows: page.num_rows, data_end: self.data_end };
            page_scheduler(page.encoding.as_ref(), &context)?
        };
        ensure!(
            scheduler.num_rows() == page.num_rows,
            corrupt,
            "page {index} of column {} is inconsistent",
            self.column
        );
        Ok(scheduler)
    }

    /// Schedules rows `ranges` of page `index` at `priority`: its page scheduler asks for the
    /// page's byte ranges through the returned [`PageIo`], which the caller submits (with
    /// [`ScheduledPage::submit`]) once it has added what else the page needs. With
    /// `verify_checksums`, the buffers read whole are checked against their checksums.
    pub fn schedule_page(
        &self,
        index: usize,
        ranges: &[Range<u64>],
        priority: Priority,
        io: &Arc<dyn EncodingsIo>,
        verify_checksums: bool,
    ) -> Result<(PageLoad, PageIo)> {
        let scheduler = self.page_scheduler(index)?;
        let checks = verify_checksums.then(|| BufferChecks::of_page(&self.label, index, &self.pages[index])).flatten();
        let page_io = PageIo::new(io.clone(), priority, self.column).with_checks(checks);
        let load = scheduler.schedule_ranges(ranges, &page_io);
        Ok((load, page_io))
    }
}

/// Rows of the grid pages are cut into parts on (a multiple of the bit-packed block, 1,024
/// values).
pub const PART_ROWS: u64 = 1024;

/// The least bytes of a page part: smaller parts would cost more in requests than they save.
pub const MIN_PAGE_PART_BYTES: u64 = 64 * 1024;

/// The selected pages of a column not yet scheduled, in order, with their priorities.
pub struct PendingPages {
    column: Arc<ColumnPages>,
    /// The pages left to schedule, in order.
    pages: VecDeque<usize>,
    /// The page being scheduled in parts and its parts left (see the module documentation).
    current: Option<(usize, VecDeque<Vec<Range<u64>>>)>,
    /// The bytes above which a page is scheduled in parts, if pages may be.
    part_bytes: Option<u64>,
    /// The rows of the column to read (shared with the read's other columns): each page's
    /// rows are cut from it as the page is scheduled, so that the pages of every column of a
    /// read do not all hold their rows at once.
    selection: RowSelection,
    priority: Arc<RowPriority>,
    verify_checksums: bool,
}

impl PendingPages {
    /// The pages of `column` holding rows of `selection` (rows of the column, mapped to
    /// top-level rows by `priority`), for the read of `context`.
    pub fn new(
        column: Arc<ColumnPages>,
        selection: &RowSelection,
        priority: Arc<RowPriority>,
        context: &ReadContext,
    ) -> Self {
        let pages = column.selected_pages(selection).into();
        Self {
            column,
            pages,
            current: None,
            part_bytes: None,
            selection: selection.clone(),
            priority,
            verify_checksums: context.verify_checksums,
        }
    }

    /// The pages scheduled in parts where the read asks for it ([`ReadContext::page_part_bytes`]):
    /// for columns of values, whose decoders take any run of rows as a page.
    pub fn in_parts(mut self, context: &ReadContext) -> Self {
        self.part_bytes = context.page_part_bytes;
        self
    }

    /// Schedules rows `ranges` of page `index` of the column (see
    /// [`ColumnPages::schedule_page`]), verifying checksums if the read does.
    pub fn schedule_page(
        &self,
        index: usize,
        ranges: &[Range<u64>],
        priority: Priority,
        io: &Arc<dyn EncodingsIo>,
    ) -> Result<(PageLoad, PageIo)> {
        self.column.schedule_page(index, ranges, priority, io, self.verify_checksums)
    }

    /// The column.
    pub fn column(&self) -> &Arc<ColumnPages> {
        &self.column
    }

    /// The rows' mapping to top-level rows.
    pub fn row_priority(&self) -> &Arc<RowPriority> {
        &self.priority
    }

    /// The priority of the next page (or part): the top-level row of its first selected row.
    pub fn next_priority(&self) -> Option<Priority> {
        if let Some((index, parts)) = &self.current
            && let Some(first) = parts.front().and_then(|part| part.first())
        {
            return Some(self.priority.priority(self.column.page_rows(*index).start + first.start));
        }
        let rows = self.column.page_rows(*self.pages.front()?);
        Some(self.priority.priority(self.selection.first_within(rows.clone()).unwrap_or(rows.start)))
    }

    /// The next page (or part of one), its selected rows (relative to the page) and its
    /// priority.
    pub fn pop(&mut self) -> Option<(usize, Vec<Range<u64>>, Priority)> {
        let priority = self.next_priority()?;
        if let Some((index, parts)) = &mut self.current {
            let index = *index;
            let part = parts.pop_front();
            if parts.is_empty() {
                self.current = None;
            }
            if let Some(part) = part {
                return Some((index, part, priority));
            }
        }
        let index = self.pages.pop_front()?;
        let ranges = self.selection.within(self.column.page_rows(index));
        let Some(part_bytes) = self.part_bytes else { return Some((index, ranges, priority)) };
        let mut parts = self.column.parts(index, ranges, part_bytes);
        let first = parts.pop_front().unwrap_or_default();
        if !parts.is_empty() {
            self.current = Some((index, parts));
        }
        Some((index, first, priority))
    }

    /// Whether the next page is selected whole (and not in parts).
    pub fn next_is_whole(&self) -> bool {
        self.current.is_none()
            && self.pages.front().is_some_and(|index| self.selection.covers(self.column.page_rows(*index)))
    }

    /// The index of the next page.
    pub fn peek_index(&self) -> Option<usize> {
        self.current.as_ref().map(|(index, _)| *index).or_else(|| self.pages.front().copied())
    }

    /// Forgets the remaining pages (their decoder is gone).
    pub fn clear(&mut self) {
        self.current = None;
        self.pages.clear();
    }
}

/// The [`ColumnJob`] of a column of values (or of a struct's validity): each page's scheduler
/// tree submits its reads, and the decoder receives the page's [`PageDecoder`](crate::encodings::PageDecoder) future.
pub struct ValuesColumnJob {
    pages: PendingPages,
    sender: PageSender,
}

impl ValuesColumnJob {
    /// A job scheduling `pages`, sending them to `sender`.
    pub fn new(pages: PendingPages, sender: PageSender) -> Self {
        Self { pages, sender }
    }
}

/// The job of a validity column (of a struct or fixed-size list), if the field has one, and
/// the pages it will send.
pub fn validity_job(
    column: Option<&Arc<ColumnPages>>,
    selection: &RowSelection,
    priority: &Arc<RowPriority>,
    context: &ReadContext,
) -> (Option<Box<dyn ColumnJob>>, Option<PageReceiver>) {
    match column {
        Some(column) => {
            let (sender, receiver) = page_channel();
            let pages = PendingPages::new(column.clone(), selection, priority.clone(), context).in_parts(context);
            (Some(Box::new(ValuesColumnJob::new(pages, sender))), Some(receiver))
        }
        None => (None, None),
    }
}

impl ColumnJob for ValuesColumnJob {
    fn next_priority(&self) -> Option<Priority> {
        self.pages.next_priority()
    }

    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()> {
        if self.sender.is_closed() {
            // The decoder is gone (the read was dropped): schedule nothing more.
            self.pages.clear();
            return Ok(());
        }
        let Some((index, ranges, priority)) = self.pages.pop() else { return Ok(()) };
        let (load, page_io) = self.pages.schedule_page(index, &ranges, priority, io)?;
        let num_rows = ranges.iter().map(|r| r.end - r.start).sum();
        // A closed channel means the decoder is gone (the read was dropped): nothing to do.
        let _ = self.sender.send(ScheduledPage::submit(num_rows, load, page_io));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(rows: &[u64]) -> ColumnPages {
        let metadata = ColumnMetadata {
            pages: rows.iter().map(|n| PageMetadata { num_rows: *n, ..Default::default() }).collect(),
            zone_map: None,
        };
        ColumnPages::try_new(0, "x", metadata, 0).unwrap()
    }

    #[test]
    fn select_finds_pages_and_relative_rows() {
        let c = column(&[10, 10, 0, 10]);
        assert_eq!(c.select(&RowSelection::all(30)), vec![(0, vec![0..10]), (1, vec![0..10]), (3, vec![0..10])]);
        let s = RowSelection::from_sorted_indices(&[3, 5, 12, 29]);
        assert_eq!(c.select(&s), vec![(0, vec![3..4, 5..6]), (1, vec![2..3]), (3, vec![9..10])]);
        assert_eq!(c.select(&RowSelection::range(9..21)), vec![(0, vec![9..10]), (1, vec![0..10]), (3, vec![0..1])]);
        assert_eq!(c.select(&RowSelection::range(30..30)), vec![]);
    }

    #[test]
    fn select_matches_a_page_by_page_intersection() {
        let sizes = [7, 0, 1, 13, 0, 0, 30, 2, 9];
        let c = column(&sizes);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200 {
            // Random sorted, disjoint ranges over the column's 62 rows (some past its end).
            let mut ranges = Vec::new();
            let mut row = 0;
            while row < 70 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let (gap, len) = (state % 9, state / 9 % 12);
                let start = row + gap;
                if len > 0 && start < 70 {
                    ranges.push(start..(start + len).min(70));
                }
                row = start + len + 1;
            }
            let selection = RowSelection::from_sorted_ranges(ranges.clone());
            let expected: Vec<(usize, Vec<Range<u64>>)> = (0..sizes.len())
                .map(|i| (i, selection.within(c.page_rows(i))))
                .filter(|(i, r)| !r.is_empty() && !c.page_rows(*i).is_empty())
                .collect();
            assert_eq!(c.select(&selection), expected, "{ranges:?}");
            // What a column's pending pages ask of the selection, against the rows cut out.
            for i in (0..sizes.len()).filter(|i| !c.page_rows(*i).is_empty()) {
                let (rows, within) = (c.page_rows(i), selection.within(c.page_rows(i)));
                assert_eq!(selection.first_within(rows.clone()), within.first().map(|r| rows.start + r.start));
                assert_eq!(selection.covers(rows.clone()), within == [0..rows.end - rows.start]);
            }
        }
    }
}
