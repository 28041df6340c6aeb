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
//! serves as its priority ([`RowPriority`] maps rows of nested columns to top-level rows).
//!
//! Nested fields compose: a struct's scheduler starts its children's; a list's job schedules its
//! offsets pages and, for each, the items they point at — at once from the page metadata when
//! the whole page is read, or through *indirect I/O* (a task that decodes the offsets and then
//! schedules the items) when only some of its lists are (see [`list`]).

mod column;
mod fixed_size_list;
pub mod list;
mod primitive;
mod priority;
mod selection;
mod r#struct;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, OnceLock};

pub use column::{ColumnJob, ColumnPages, PendingPages, ScheduledPage, ValuesColumnJob};
pub use fixed_size_list::FixedSizeListFieldScheduler;
pub use list::ListFieldScheduler;
pub use primitive::PrimitiveFieldScheduler;
pub use priority::RowPriority;
pub use selection::RowSelection;
pub use r#struct::StructFieldScheduler;

use crate::decoder::FieldDecoder;
use crate::error::{Error, Result, ensure};
use crate::format::schema::{FieldColumns, Layout};
use crate::io::{EncodingsIo, Priority};

/// What every scheduler and decoder of one read shares.
#[derive(Debug, Clone)]
pub struct ReadContext {
    /// The file, for error messages.
    pub location: Arc<str>,
    /// Where the first error of the scheduling loop is kept, for decoders whose pages stopped
    /// arriving because of it.
    pub scheduling_error: Arc<OnceLock<Error>>,
    /// Timings of the read's loops.
    pub metrics: Arc<crate::decoder::ReadMetrics>,
}

impl ReadContext {
    /// A context for reading `location`.
    pub fn new(location: impl Into<Arc<str>>) -> Self {
        Self { location: location.into(), scheduling_error: Arc::new(OnceLock::new()), metrics: Arc::default() }
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
    /// Starts reading the rows of `selection` (top-level rows, or items of the parent list,
    /// mapped to top-level rows by `priority`): returns the jobs that schedule this field's
    /// pages and the decoder that receives them.
    fn start(
        &self,
        selection: &Arc<RowSelection>,
        priority: &Arc<RowPriority>,
        context: &ReadContext,
    ) -> Result<StartedField>;
}

/// Builds the scheduler of the field of `tree`, which holds `num_rows` rows (top-level rows,
/// or items of its parent), from the metadata of its columns (which must all be in `columns`).
///
/// # Errors
/// [`Error::Corrupt`] if a column's row count does not match what its parent says.
pub fn field_scheduler(
    tree: &FieldColumns,
    columns: &HashMap<u32, Arc<ColumnPages>>,
    num_rows: u64,
) -> Result<Arc<dyn FieldScheduler>> {
    let field = &tree.field;
    let column = |c: Option<u32>| -> Result<Option<Arc<ColumnPages>>> {
        let Some(c) = c else { return Ok(None) };
        let pages = columns.get(&c).ok_or_else(|| Error::Internal(format!("column {c} was not loaded")))?;
        ensure!(
            pages.num_rows() == num_rows,
            corrupt,
            "column {c} (field {:?}) holds {} rows where {num_rows} were expected",
            field.name(),
            pages.num_rows()
        );
        Ok(Some(pages.clone()))
    };
    let own = column(tree.column)?;
    let missing = || Error::Internal(format!("field {:?} has no column", field.name()));
    Ok(match Layout::of(field.data_type())? {
        Layout::Leaf => Arc::new(PrimitiveFieldScheduler::new(field.clone(), own.ok_or_else(missing)?)),
        Layout::Struct => {
            let children =
                tree.children.iter().map(|child| field_scheduler(child, columns, num_rows)).collect::<Result<_>>()?;
            Arc::new(StructFieldScheduler::new(field.clone(), own, children))
        }
        Layout::List => {
            let offsets = own.ok_or_else(missing)?;
            let [item] = tree.children.as_slice() else { return Err(missing()) };
            let items = field_scheduler(item, columns, offsets.num_items())?;
            let item_bytes = item.columns().iter().filter_map(|c| columns.get(c)).map(|c| c.num_bytes()).sum();
            Arc::new(ListFieldScheduler::new(field.clone(), offsets, items, item_bytes))
        }
        Layout::FixedSizeList => {
            let [item] = tree.children.as_slice() else { return Err(missing()) };
            let dimension = match field.data_type() {
                arrow_schema::DataType::FixedSizeList(_, n) => u64::try_from(*n).unwrap_or(0),
                _ => 0,
            };
            let num_items = num_rows
                .checked_mul(dimension)
                .ok_or_else(|| Error::corrupt("", format!("field {:?} holds too many items", field.name())))?;
            let items = field_scheduler(item, columns, num_items)?;
            Arc::new(FixedSizeListFieldScheduler::new(field.clone(), own, items, dimension))
        }
    })
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
    let started = std::time::Instant::now();
    let result = schedule_all(&mut jobs, io);
    context.metrics.add_scheduling(started.elapsed());
    if let Err(e) = &result {
        let _ = context.scheduling_error.set(e.clone().with_location(&context.location));
    }
    drop(jobs);
    result.map_err(|e| e.with_location(&context.location))
}

/// Schedules every page of `jobs`, lowest top-level row first (the body of the scheduling loop,
/// also run for the items of a page of lists).
pub fn schedule_all(jobs: &mut [Box<dyn ColumnJob>], io: &Arc<dyn EncodingsIo>) -> Result<()> {
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
