//! Lists, large lists and maps: the offsets column, and indirect I/O for the items.
//!
//! A page of list offsets says which items (rows of the item field's columns) its lists hold,
//! but only once it is read — except when the whole page is read: its items are then all the
//! items of the page, known from the metadata (`num_items`). A run of consecutive whole pages
//! is scheduled in one step: the offsets of each page, and the items of the whole run, at once
//! and without an offsets-then-items round trip. One set of item pages serves the run (so an item
//! page straddling two list pages is read once, whole, and nested lists below are whole pages
//! again); the items' priorities are interpolated within each page between its first and last
//! rows ([`RowPriority::Interpolated`]), and the I/O scheduler orders everything by priority.
//!
//! When only some lists of a page are read, [`ListColumnJob`] schedules the offsets of those
//! lists and hands a follow-up step to a separate task (the scheduling loop goes on): the step
//! waits for the offsets, works out the items they point at, and schedules those items — with
//! the exact top-level row each serves as priority ([`RowPriority::Items`]) and as indirect
//! requests, urgent whenever the page is (a decoder waiting for the page waits for its items
//! too; see [`IndirectIo`]). Each level of list nesting adds one such step. The page carries
//! the offsets and the pages of exactly those items ([`ListPage`]).

use std::ops::Range;
use std::sync::Arc;

use arrow_schema::FieldRef;
use futures::FutureExt;
use tokio::sync::oneshot;

use super::column::PendingPages;
use super::{ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, StartedField};
use crate::encodings::PageDecoder;
use crate::encodings::logical::list::{offset_bounds, offsets_from_block};
use crate::error::{Error, Result, ensure};
use crate::io::{EncodingsIo, IndirectIo, Priority};
use crate::read::pages::{FieldPages, ListItems, ListPage, PageSender, ScheduledPage, page_channel};
use crate::read::scheduling_loop::{ColumnJob, schedule_all};

/// The most pages of lists scheduled as one run of whole pages.
const MAX_WHOLE_RUN: usize = 64;

/// Schedules a list field: its offsets column and, through it, its items.
pub struct ListFieldScheduler {
    field: FieldRef,
    offsets: Arc<ColumnPages>,
    items: Arc<dyn FieldScheduler>,
    /// Bytes of all the items' columns: the bound a plan gives for an indirect step.
    item_bytes: u64,
}

impl ListFieldScheduler {
    /// The scheduler of `field`, with its offsets column and its items' scheduler.
    pub fn new(field: FieldRef, offsets: Arc<ColumnPages>, items: Arc<dyn FieldScheduler>, item_bytes: u64) -> Self {
        Self { field, offsets, items, item_bytes }
    }
}

impl FieldScheduler for ListFieldScheduler {
    fn start(
        &self,
        selection: &Arc<RowSelection>,
        priority: &Arc<RowPriority>,
        context: &ReadContext,
    ) -> Result<StartedField> {
        let (sender, receiver) = page_channel();
        let job = ListColumnJob {
            pages: PendingPages::new(self.offsets.clone(), selection, priority.clone(), context),
            items: self.items.clone(),
            item_bytes: self.item_bytes,
            context: context.clone(),
            sender,
        };
        Ok((vec![Box::new(job)], FieldPages::List { data_type: self.field.data_type().clone(), pages: receiver }))
    }
}

/// Schedules the pages of a list's offsets column and the items they hold.
pub struct ListColumnJob {
    pages: PendingPages,
    items: Arc<dyn FieldScheduler>,
    item_bytes: u64,
    context: ReadContext,
    sender: PageSender<ListPage>,
}

impl ColumnJob for ListColumnJob {
    fn next_priority(&self) -> Option<Priority> {
        self.pages.next_priority()
    }

    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()> {
        if self.sender.is_closed() {
            self.pages.clear();
            return Ok(());
        }
        if self.pages.next_is_whole() {
            return self.schedule_whole_run(io);
        }
        let Some((index, ranges, priority)) = self.pages.pop() else { return Ok(()) };
        let column = self.pages.column().clone();
        let (offsets, page_io) = self.pages.schedule_page(index, &ranges, priority, io)?;
        let urgency = page_io.urgency().clone();
        let num_rows: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        // Indirect I/O: the items are known once these lists' offsets are decoded.
        let (sender, receiver) = oneshot::channel();
        let step = ItemsStep {
            offsets,
            ranges,
            page_first_row: column.page_rows(index).start,
            page_items: column.page_items(index),
            parent: self.pages.row_priority().clone(),
            items: self.items.clone(),
            context: self.context.clone(),
            // The items are follow-ups of this page: urgent when the page is.
            io: Arc::new(IndirectIo::new(io.clone(), urgency.clone())),
        };
        page_io.spawn_indirect(
            self.item_bytes,
            async move {
                // The step stops (its requests dropped, so never issued or abandoned in
                // flight) as soon as nobody waits for the page: the read was dropped.
                let mut sender = sender;
                let outcome = {
                    let (run, closed) = (step.run(), sender.closed());
                    futures::pin_mut!(run, closed);
                    match futures::future::select(run, closed).await {
                        futures::future::Either::Left((result, _)) => Some(result),
                        futures::future::Either::Right(_) => None,
                    }
                };
                if let Some(result) = outcome {
                    let _ = sender.send(result);
                }
            }
            .boxed(),
        );
        let load = async move {
            let (offsets, items) =
                receiver.await.map_err(|_| Error::internal("the indirect read of a page of lists was cancelled"))??;
            Ok(ListPage { offsets, items: ListItems::new(items) })
        }
        .boxed();
        let _ = self.sender.send(ScheduledPage::submit(num_rows, load, page_io));
        Ok(())
    }
}

impl ListColumnJob {
    /// Schedules the run of whole pages at the head of the queue: each page's offsets, and all
    /// their items at once (their range is known from the page metadata).
    fn schedule_whole_run(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()> {
        let column = self.pages.column().clone();
        let parent = self.pages.row_priority().clone();
        let mut pages = Vec::new();
        let (mut breakpoint_items, mut breakpoint_rows) = (Vec::new(), Vec::new());
        let mut last_row = 0;
        while self.pages.next_is_whole() {
            let Some((index, ranges, priority)) = self.pages.pop() else { break };
            let (offsets, page_io) = self.pages.schedule_page(index, &ranges, priority, io)?;
            let (rows, items) = (column.page_rows(index), column.page_items(index));
            breakpoint_items.push(items.start);
            breakpoint_rows.push(parent.priority(rows.start).0);
            last_row = parent.priority(rows.end.saturating_sub(1)).0;
            let end = items.end;
            pages.push((rows.end - rows.start, items, offsets, page_io));
            // The run's items must be one range: stop at a page not adjacent to this one. A run
            // is also scheduled at once, items and all: it stops after `MAX_WHOLE_RUN` pages, so
            // that the scheduling loop stays a bounded distance ahead of the I/O (an item page
            // straddling two runs is then read by each).
            if pages.len() >= MAX_WHOLE_RUN
                || self.pages.peek_index().is_some_and(|next| column.page_items(next).start != end)
            {
                break;
            }
        }
        let (Some(first), Some(last)) = (pages.first(), pages.last()) else { return Ok(()) };
        let item_range = first.1.start..last.1.end;
        breakpoint_items.push(item_range.end);
        breakpoint_rows.push(last_row);
        let priority =
            Arc::new(RowPriority::Interpolated { items: breakpoint_items.into(), rows: breakpoint_rows.into() });
        // The offsets pages are submitted first (they serve the lowest rows), then the items.
        let mut submitted = Vec::with_capacity(pages.len());
        for (num_rows, page_items, offsets, page_io) in pages {
            submitted.push((num_rows, page_items, ScheduledPage::submit(num_rows, offsets, page_io)));
        }
        let (mut jobs, items) =
            self.items.start(&Arc::new(RowSelection::range(item_range)), &priority, &self.context)?;
        schedule_all(&mut jobs, io)?;
        let items = ListItems::new(items);
        for (num_rows, page_items, page) in submitted {
            let items = items.clone();
            let num_items = page_items.end - page_items.start;
            let offsets = page.load;
            let load = async move {
                let offsets = offsets.await?;
                check_whole_page(offsets.as_ref(), num_items)?;
                Ok(ListPage { offsets, items })
            }
            .boxed();
            let _ = self.sender.send(ScheduledPage { num_rows, load, urgency: page.urgency, holder: page.holder });
        }
        Ok(())
    }
}

/// Checks that the offsets of a whole page start at zero, never decrease, and end at its item
/// count: the decoders of the run's pages take their items in turn from the run's, trusting each
/// batch's offsets to stay within the page's.
fn check_whole_page(offsets: &dyn PageDecoder, num_items: u64) -> Result<()> {
    let (first, last) = offset_bounds(&offsets.decode(0, offsets.num_rows())?)?;
    ensure!(
        first == 0 && last == num_items,
        corrupt,
        "a page of list offsets does not span the {num_items} items its metadata gives"
    );
    Ok(())
}

/// The follow-up step of a partly read page of lists.
struct ItemsStep {
    /// The offsets (and validity) of the selected lists.
    offsets: crate::encodings::PageLoad,
    /// The selected lists, relative to the page.
    ranges: Vec<Range<u64>>,
    page_first_row: u64,
    /// The items of the whole page.
    page_items: Range<u64>,
    parent: Arc<RowPriority>,
    items: Arc<dyn FieldScheduler>,
    context: ReadContext,
    io: Arc<dyn EncodingsIo>,
}

impl ItemsStep {
    /// Waits for the offsets, then schedules the items they point at (without waiting for
    /// those) and returns the offsets and the pages of the items.
    async fn run(self) -> Result<(Box<dyn PageDecoder>, FieldPages)> {
        let offsets = self.offsets.await?;
        let num_items = self.page_items.end - self.page_items.start;
        let mut item_ranges = Vec::with_capacity(self.ranges.len());
        let (mut starts, mut rows) = (Vec::new(), Vec::new());
        let mut decoded = 0;
        // Where the previous range's items end: the ranges are in row order, so their items
        // must be too. Each range's offsets are checked not to decrease when decoded, but only
        // within the range; items of two ranges overlapping, or out of order, would make a
        // selection of fewer items than the decoder takes from it.
        let mut previous_end = 0;
        for range in &self.ranges {
            let len = range.end - range.start;
            // One range at a time, so the offsets are the page's own (not rebased).
            let (list_offsets, _) = offsets_from_block(offsets.decode(decoded, len)?)?;
            decoded += len;
            let (Some(&first), Some(&last)) = (list_offsets.first(), list_offsets.last()) else { continue };
            ensure!(last <= num_items, corrupt, "list offsets point past the {num_items} items of their page");
            ensure!(first >= previous_end, corrupt, "list offsets decrease");
            previous_end = last;
            item_ranges.push(self.page_items.start + first..self.page_items.start + last);
            for (i, pair) in list_offsets.windows(2).enumerate() {
                if pair[1] > pair[0] {
                    starts.push(self.page_items.start + pair[0]);
                    rows.push(self.parent.priority(self.page_first_row + range.start + i as u64).0);
                }
            }
        }
        let selection = Arc::new(RowSelection::from_sorted_ranges(item_ranges));
        let priority = Arc::new(RowPriority::Items { starts: starts.into(), rows: rows.into() });
        let (mut jobs, items) = self.items.start(&selection, &priority, &self.context)?;
        schedule_all(&mut jobs, &self.io)?;
        Ok((offsets, items))
    }
}
