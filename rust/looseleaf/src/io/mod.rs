//! I/O: the one interface schedulers see, and what stands behind it.
//!
//! Schedulers never touch storage. They hand [`IoRequest`]s to an [`EncodingsIo`], whose
//! contract is:
//! - `submit` never blocks and never waits: it queues the request and returns a future of the
//!   bytes, one [`Bytes`] per requested range, in the order asked;
//! - every request carries a [`Priority`], the lowest top-level row it serves; lower rows are
//!   read first;
//! - a request's bytes count against the read's I/O buffer from the moment its first read is
//!   issued until its future resolves, or, if the request names a [`ReservationHolder`], until
//!   that holder is dropped (the page's decoder and the batches cut from it are done);
//! - a request whose [`Urgency`] is set (a decoder is waiting for it) is not held back by the
//!   budget;
//! - a request carrying [`BufferChecks`] resolves to bytes that match them, or to the error
//!   naming the damaged buffer.
//!
//! Two implementations exist: [`IoScheduler`] performs the reads through a [`RangeReader`]
//! (object_store underneath) with a bounded I/O depth and byte-based backpressure, and
//! [`PlanningIo`] only records what would be read, which gives the exact I/O plan of a read
//! without doing it. [`PageIo`] groups all the ranges one page needs into one request, with the
//! checksums of the page's buffers ([`BufferChecks`]); the scheduler verifies them where the
//! read completes, on the runtime's threads while the bytes are still in cache, not in the
//! decode loop that waits for them.

mod budget;
mod buffer_checks;
mod coalesce;
mod depth;
mod location;
mod object_store_reader;
mod options;
mod page_io;
mod plan;
mod range_reader;
mod scheduler;
mod stats;
mod urgency;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;

pub use budget::{IoBudget, IoBudgetStats};
pub use buffer_checks::BufferChecks;
pub use coalesce::{CoalesceOptions, coalesce_ranges};
pub use depth::{DepthController, IoDepth};
pub use location::range_reader;
pub use object_store_reader::ObjectStoreReader;
pub use options::IoOptions;
pub use page_io::{FollowUpIo, IndirectIo, PageIo};
pub use plan::{ColumnPlan, IoPlan, PlannedRequest, PlanningIo};
pub use range_reader::{LocalFileReader, RangeReader, ReaderStats};
pub use scheduler::{IoScheduler, ReservationHolder};
pub use stats::IoStats;
pub use urgency::Urgency;

use crate::error::Result;

/// The priority of an I/O request: the lowest top-level row it serves. Lower is more urgent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Priority(pub u64);

/// Whether a request was known when the read was planned, or derived from data read earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// Known from the metadata alone.
    Direct,
    /// Computed from bytes read earlier (e.g. the data of strings whose offsets were read).
    Indirect,
}

/// A request for some byte ranges of the file, made on behalf of one page of one column.
#[derive(Debug, Clone)]
pub struct IoRequest {
    /// Absolute byte ranges, in the order the caller wants them back.
    pub ranges: Vec<Range<u64>>,
    /// The lowest top-level row the request serves.
    pub priority: Priority,
    /// The column the request reads (for plans and statistics).
    pub column: u32,
    /// Direct or indirect.
    pub kind: RequestKind,
    /// Set when a decoder waits for the page the request serves (see [`Urgency`]).
    pub urgency: Option<Urgency>,
    /// Keeps the request's reservation of the I/O buffer once it completes, for as long as the
    /// page it serves is in use (see [`IoScheduler`]); without one, the reservation ends when
    /// the request's future resolves.
    pub holder: Option<ReservationHolder>,
    /// The checksums of the page's buffers: those the request reads whole are verified before
    /// its bytes are delivered.
    pub checks: Option<Arc<BufferChecks>>,
}

impl IoRequest {
    /// Total requested bytes.
    pub fn num_bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }
}

/// What is known in advance of an indirect step: enough for a plan to report it.
#[derive(Debug, Clone, Copy)]
pub struct IndirectHint {
    /// The column the follow-up reads.
    pub column: u32,
    /// The priority of the follow-up request.
    pub priority: Priority,
    /// An upper bound of the bytes the follow-up request will read.
    pub max_bytes: u64,
}

/// The future of a request's bytes.
pub type IoFuture = BoxFuture<'static, Result<Vec<Bytes>>>;

/// The I/O interface schedulers see (see the module documentation for its contract).
pub trait EncodingsIo: Send + Sync {
    /// Queues a request and returns the future of its bytes. Never blocks.
    fn submit(&self, request: IoRequest) -> IoFuture;

    /// Runs `step`, a follow-up that submits requests it can only compute from earlier reads,
    /// apart from the scheduling loop (which goes on without waiting). A planner records `hint`
    /// instead of running the step.
    fn spawn_indirect(&self, hint: IndirectHint, step: BoxFuture<'static, ()>);

    /// Ranges of one request at most this many bytes apart are read as one. A page scheduler
    /// may read a whole buffer at once when the pieces it needs would merge into (nearly) all
    /// of it anyway, sparing a round trip. 0 by default: nothing merged.
    fn coalesce_gap(&self) -> u64 {
        0
    }

    /// Blocks the calling thread — the scheduling loop's own, never a runtime worker — once
    /// enough reads are queued and not yet issued to keep the storage busy (until the queue is
    /// half empty again, so that the loop is not woken for every read), unless `starving`
    /// says a decoder waits for a page the loop has not sent yet: the loop then stays a bounded
    /// queue ahead of the I/O however large the file, instead of holding the requests of every
    /// page of it. It cannot deadlock: while no decoder starves, every page the decoders wait
    /// for has been sent, so its reads are urgent and issued without the loop; once one
    /// starves, the loop goes on. By default it returns at once.
    fn wait_for_room(&self, starving: &dyn Fn() -> bool) {
        let _ = starving;
    }
}
