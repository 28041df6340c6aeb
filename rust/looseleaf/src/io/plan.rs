//! Schedule-only reads: [`PlanningIo`] records the requests of a read instead of performing
//! them, and [`IoPlan`] summarises them.
//!
//! Running the scheduling loop against a `PlanningIo` gives the exact list of requests and
//! storage reads a real read of the same rows and columns makes, because the same schedulers
//! produce the requests and the same [`coalesce_ranges`] turns them into reads. Indirect steps
//! cannot be known without reading; they are reported with an upper bound of their bytes and
//! `known = false`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::{CoalesceOptions, EncodingsIo, IndirectHint, IoFuture, IoRequest, Priority, RequestKind, coalesce_ranges};
use crate::error::Error;

/// One request of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRequest {
    /// The column read.
    pub column: u32,
    /// The lowest top-level row served.
    pub priority: Priority,
    /// Direct (known from metadata) or indirect (depends on bytes read earlier).
    pub kind: RequestKind,
    /// The storage reads it makes (empty when not known in advance).
    pub reads: Vec<Range<u64>>,
    /// Bytes requested: exact for direct requests, an upper bound for indirect ones.
    pub bytes: u64,
}

impl PlannedRequest {
    /// Whether the request is known exactly before reading anything.
    pub fn known(&self) -> bool {
        self.kind == RequestKind::Direct
    }
}

/// Totals of one column in a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ColumnPlan {
    /// Requests (one per scheduled page, plus indirect follow-ups).
    pub requests: u64,
    /// Storage reads of the direct requests.
    pub reads: u64,
    /// Bytes of the direct requests.
    pub bytes: u64,
    /// Bytes of their storage reads (at least `bytes`: merged reads include the gaps).
    pub read_bytes: u64,
    /// Indirect requests, whose reads are not known in advance.
    pub indirect_requests: u64,
    /// Upper bound of the bytes of the indirect requests.
    pub indirect_max_bytes: u64,
}

/// The I/O a read would make.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IoPlan {
    /// Every request, in the order the scheduling loop made them.
    pub requests: Vec<PlannedRequest>,
}

impl IoPlan {
    /// Totals per column.
    pub fn by_column(&self) -> BTreeMap<u32, ColumnPlan> {
        let mut out: BTreeMap<u32, ColumnPlan> = BTreeMap::new();
        for request in &self.requests {
            let entry = out.entry(request.column).or_default();
            entry.requests += 1;
            match request.kind {
                RequestKind::Direct => {
                    entry.reads += request.reads.len() as u64;
                    entry.bytes += request.bytes;
                    entry.read_bytes += request.reads.iter().map(|r| r.end - r.start).sum::<u64>();
                }
                RequestKind::Indirect => {
                    entry.indirect_requests += 1;
                    entry.indirect_max_bytes += request.bytes;
                }
            }
        }
        out
    }

    /// Totals over all columns.
    pub fn total(&self) -> ColumnPlan {
        self.by_column().values().fold(ColumnPlan::default(), |mut acc, c| {
            acc.requests += c.requests;
            acc.reads += c.reads;
            acc.bytes += c.bytes;
            acc.read_bytes += c.read_bytes;
            acc.indirect_requests += c.indirect_requests;
            acc.indirect_max_bytes += c.indirect_max_bytes;
            acc
        })
    }
}

/// An [`EncodingsIo`] that records requests instead of performing them.
pub struct PlanningIo {
    coalesce: CoalesceOptions,
    /// Requests in submission order.
    requests: Mutex<Vec<PlannedRequest>>,
}

impl PlanningIo {
    /// A planner that splits requests into reads as an `IoScheduler` with `coalesce` would.
    pub fn new(coalesce: CoalesceOptions) -> Self {
        Self { coalesce, requests: Mutex::new(Vec::new()) }
    }

    /// The plan recorded so far.
    pub fn plan(&self) -> IoPlan {
        IoPlan { requests: self.requests.lock().unwrap_or_else(|p| p.into_inner()).clone() }
    }

    fn record(&self, request: PlannedRequest) {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).push(request);
    }
}

impl EncodingsIo for PlanningIo {
    fn submit(&self, request: IoRequest) -> IoFuture {
        let reads = coalesce_ranges(&request.ranges, self.coalesce);
        self.record(PlannedRequest {
            column: request.column,
            priority: request.priority,
            kind: request.kind,
            bytes: request.num_bytes(),
            reads,
        });
        Box::pin(futures::future::ready(Err(Error::internal("a planned read was awaited"))))
    }

    fn spawn_indirect(&self, hint: IndirectHint, _step: BoxFuture<'static, ()>) {
        self.record(PlannedRequest {
            column: hint.column,
            priority: hint.priority,
            kind: RequestKind::Indirect,
            reads: Vec::new(),
            bytes: hint.max_bytes,
        });
    }

    fn coalesce_gap(&self) -> u64 {
        self.coalesce.gap.get()
    }
}
