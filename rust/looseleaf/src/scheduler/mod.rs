//! Scheduling: working out, from metadata alone, which pages and byte ranges a read needs, and
//! asking for them in top-level row order.
//!
//! Each projected field has a [`FieldScheduler`]. Starting a read, it returns the
//! [`ColumnJob`]s that walk its columns' pages and the [`FieldDecoder`] those pages are sent to.
//! The scheduling loop ([`run_scheduling_loop`]) then repeatedly takes the job whose next page
//! starts at the lowest top-level row, lets it schedule that page (the page's
//! [`PageScheduler`](crate::encodings::PageScheduler) submits the byte ranges) and moves on.
//! It never waits for I/O: with columns of different page sizes the order is the ideal one of
//! the design (`C0P0 C1P0 C2P0 C2P1 ... C1P1 ...`), each request tagged with the lowest row it
//! serves as its priority.

mod column;
mod primitive;
mod selection;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, OnceLock};

pub use column::{ColumnJob, ColumnPages, ScheduledPage};
pub use primitive::PrimitiveFieldScheduler;
pub use selection::RowSelection;

use crate::decoder::FieldDecoder;
use crate::error::{Error, Result};
use crate::io::{EncodingsIo, Priority};

/// What every scheduler and decoder of one read shares.
#[derive(Debug, Clone)]
pub struct ReadContext {
    /// The file, for error messages.
    pub location: Arc<str>,
    /// Where the first error of the scheduling loop is kept, for decoders whose pages stopped
    /// arriving because of it.
    pub scheduling_error: Arc<OnceLock<Error>>,
}

impl ReadContext {
    /// A context for reading `location`.
    pub fn new(location: impl Into<Arc<str>>) -> Self {
        Self { location: location.into(), scheduling_error: Arc::new(OnceLock::new()) }
    }

    /// The error to report when a decoder's pages stop before the rows it was promised.
    pub fn pages_ended_error(&self, what: &str) -> Error {
        match self.scheduling_error.get() {
            Some(e) => e.clone(),
            None => Error::Internal(format!("{what} of {} ended before the rows it was asked for", self.location)),
        }
    }
}

/// A started field: the jobs that schedule its pages and the decoder that receives them.
pub type StartedField = (Vec<Box<dyn ColumnJob>>, Box<dyn FieldDecoder>);

/// Plans one output field: which pages of which columns, in what order.
pub trait FieldScheduler: Send + Sync {
    /// Starts reading the top-level rows of `selection`: returns the jobs that schedule this
    /// field's pages and the decoder that receives them.
    fn start(&self, selection: &Arc<RowSelection>, context: &ReadContext) -> Result<StartedField>;
}

/// Runs the scheduling loop: schedules every page of every job, lowest top-level row first,
/// without waiting for any I/O.
///
/// On error the loop stops, keeps the error in `context` for the decoders and returns it. The
/// jobs (and with them the channels to the decoders) are dropped when it returns, after the
/// error is kept: a decoder whose pages stop always finds out why.
pub fn run_scheduling_loop(
    mut jobs: Vec<Box<dyn ColumnJob>>,
    io: &Arc<dyn EncodingsIo>,
    context: &ReadContext,
) -> Result<()> {
    let result = schedule_all(&mut jobs, io);
    if let Err(e) = &result {
        let _ = context.scheduling_error.set(e.clone().with_location(&context.location));
    }
    drop(jobs);
    result.map_err(|e| e.with_location(&context.location))
}

fn schedule_all(jobs: &mut [Box<dyn ColumnJob>], io: &Arc<dyn EncodingsIo>) -> Result<()> {
    // Ties go to the job listed first (the schema's column order).
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
