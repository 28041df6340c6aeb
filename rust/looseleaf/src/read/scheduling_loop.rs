//! The scheduling loop: every page of every column job of a read, lowest top-level row first,
//! without waiting for any I/O.
//!
//! A read's [`FieldScheduler`](super::field_scheduler::FieldScheduler)s each start one or more
//! [`ColumnJob`]s, which walk the selected pages of one column. The loop keeps the jobs in a
//! heap keyed by the priority of their next page (the lowest top-level row it serves), lets the
//! first one schedule that page (its page scheduler submits the page's byte ranges, and the page
//! goes to its decoder), and puts it back. With columns of different page sizes this is the
//! order of the design: `C0P0 C1P0 C1P1 C1P2 C0P1 ...`.
//!
//! # Invariants
//! - The loop never awaits: jobs submit requests and send unpolled futures on. A long pass over
//!   a large file therefore runs on a blocking thread, not a runtime worker (see
//!   [`ReadBuilder::stream`](crate::ReadBuilder::stream)).
//! - Requests are submitted in priority order (ties: the job listed first, the schema's column
//!   order), so an I/O scheduler that issues them in submission order among equal priorities
//!   reads in the ideal order.
//! - On error the loop stops and keeps the error in the [`ReadContext`] *before* dropping its
//!   jobs (and with them the channels to the decoders): a decoder whose pages stop always finds
//!   out why.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::pages::ReadContext;
use crate::error::Result;
use crate::io::{EncodingsIo, Priority};

/// Schedules the pages of one column, one at a time, in row order.
pub trait ColumnJob: Send {
    /// The priority of the next page to schedule (the lowest top-level row it serves), or
    /// `None` when every page has been scheduled.
    fn next_priority(&self) -> Option<Priority>;

    /// Schedules the next page: submits its reads and sends its decoder on. Never waits.
    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()>;
}

/// Runs the scheduling loop of a read over `jobs` (see the module documentation).
pub fn run_scheduling_loop(
    mut jobs: Vec<Box<dyn ColumnJob>>,
    io: &Arc<dyn EncodingsIo>,
    context: &ReadContext,
) -> Result<()> {
    let started = std::time::Instant::now();
    let result = schedule_all(&mut jobs, io);
    context.metrics.add_scheduling(started.elapsed());
    if let Err(e) = &result {
        let _ = context.scheduling_error.set(e.clone().with_location(&context.location));
    }
    drop(jobs);
    result.map_err(|e| e.with_location(&context.location))
}

/// Schedules every page of `jobs`, lowest top-level row first: the body of the scheduling loop,
/// also run by the indirect step of a page of lists for the items it found.
pub fn schedule_all(jobs: &mut [Box<dyn ColumnJob>], io: &Arc<dyn EncodingsIo>) -> Result<()> {
    let mut heap: BinaryHeap<Reverse<(Priority, usize)>> =
        jobs.iter().enumerate().filter_map(|(i, job)| job.next_priority().map(|p| Reverse((p, i)))).collect();
    while let Some(Reverse((_, index))) = heap.pop() {
        let job = &mut jobs[index];
        job.schedule_next(io)?;
        if let Some(priority) = job.next_priority() {
            heap.push(Reverse((priority, index)));
        }
    }
    Ok(())
}
