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
//! - The loop never awaits I/O: jobs submit requests and send unpolled futures on. It runs on a
//!   blocking thread, not a runtime worker (see [`ReadBuilder::stream`](crate::ReadBuilder::stream)),
//!   where it may block between pages while the I/O queue is full
//!   ([`EncodingsIo::wait_for_room`]): so it stays a bounded queue ahead of the reads, and the
//!   memory of a read does not grow with the file.
//! - Requests are submitted in priority order (ties: the job listed first, the schema's column
//!   order), so an I/O scheduler that issues them in submission order among equal priorities
//!   reads in the ideal order.
//! - With a [`Trace`] in the [`ReadContext`], the loop records its run, each page it
//!   schedules and each wait for room; without one it reads no clock for it.
//! - On error the loop stops and keeps the error in the [`ReadContext`] *before* dropping its
//!   jobs (and with them the channels to the decoders): a decoder whose pages stop always finds
//!   out why.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::pages::ReadContext;
use crate::error::Result;
use crate::io::{EncodingsIo, Priority};
use crate::trace::{SpanKind, Trace};

/// Schedules the pages of one column, one at a time, in row order.
pub trait ColumnJob: Send {
    /// The priority of the next page to schedule (the lowest top-level row it serves), or
    /// `None` when every page has been scheduled.
    fn next_priority(&self) -> Option<Priority>;

    /// Schedules the next page: submits its reads and sends its decoder on. Never waits.
    fn schedule_next(&mut self, io: &Arc<dyn EncodingsIo>) -> Result<()>;
}

/// The shortest wait for room in the I/O queue a trace records (the loop asks before every
/// page, and most of those calls return at once).
const MIN_TRACED_WAIT: std::time::Duration = std::time::Duration::from_micros(20);

/// Runs the scheduling loop of a read over `jobs` (see the module documentation).
pub fn run_scheduling_loop(
    mut jobs: Vec<Box<dyn ColumnJob>>,
    io: &Arc<dyn EncodingsIo>,
    context: &ReadContext,
) -> Result<()> {
    let started = std::time::Instant::now();
    let traced = context.trace.as_ref().map(|trace| (trace, trace.now()));
    let mut waited = std::time::Duration::ZERO;
    let starving = context.starving.clone();
    let starving = move || starving.load(std::sync::atomic::Ordering::SeqCst) > 0;
    let result = schedule_jobs(&mut jobs, io, Some((&mut waited, &starving)), context.trace.as_ref());
    context.metrics.add_scheduling(started.elapsed().saturating_sub(waited));
    if let Some((trace, start)) = traced {
        trace.span(SpanKind::SchedulingLoop, start);
    }
    if let Err(e) = &result {
        let _ = context.scheduling_error.set(e.clone().with_location(&context.location));
    }
    drop(jobs);
    result.map_err(|e| e.with_location(&context.location))
}

/// Schedules every page of `jobs`, lowest top-level row first: the body of the scheduling loop,
/// also run by the indirect step of a page of lists for the items it found.
///
/// It never waits (it may run inside a runtime task); only the top level of the loop waits for
/// room in the I/O queue ([`EncodingsIo::wait_for_room`]), between pages, when every page
/// scheduled so far has been delivered to its decoder.
pub fn schedule_all(jobs: &mut [Box<dyn ColumnJob>], io: &Arc<dyn EncodingsIo>) -> Result<()> {
    schedule_jobs(jobs, io, None, None)
}

/// [`schedule_all`], waiting for room in the I/O queue before each page if `wait` is given:
/// the time spent waiting is added to it, and its function says whether a decoder starves.
/// Each page and each wait is recorded in `trace`, if given.
fn schedule_jobs(
    jobs: &mut [Box<dyn ColumnJob>],
    io: &Arc<dyn EncodingsIo>,
    mut wait: Option<(&mut std::time::Duration, &dyn Fn() -> bool)>,
    trace: Option<&Trace>,
) -> Result<()> {
    let mut heap: BinaryHeap<Reverse<(Priority, usize)>> =
        jobs.iter().enumerate().filter_map(|(i, job)| job.next_priority().map(|p| Reverse((p, i)))).collect();
    while let Some(Reverse((priority, index))) = heap.pop() {
        if let Some((waited, starving)) = wait.as_mut() {
            let started = std::time::Instant::now();
            let traced = trace.map(|trace| (trace, trace.now()));
            io.wait_for_room(*starving);
            let elapsed = started.elapsed();
            **waited += elapsed;
            // Only waits long enough to see: the loop asks before every page.
            if let Some((trace, start)) = traced.filter(|_| elapsed >= MIN_TRACED_WAIT) {
                trace.span(SpanKind::WaitForRoom, start);
            }
        }
        let job = &mut jobs[index];
        let traced = trace.map(|trace| (trace, trace.now()));
        job.schedule_next(io)?;
        if let Some((trace, start)) = traced {
            trace.span(SpanKind::SchedulePage { priority: priority.0 }, start);
        }
        if let Some(priority) = job.next_priority() {
            heap.push(Reverse((priority, index)));
        }
    }
    Ok(())
}
