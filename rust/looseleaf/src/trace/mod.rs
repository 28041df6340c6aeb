//! [`Trace`]: a timeline of one read — every I/O request and storage read, the scheduling loop,
//! each decode task and each batch handed out — for the user's own read, as the design
//! documents draw it.
//!
//! A read given a trace ([`ReadBuilder::with_trace`](crate::ReadBuilder::with_trace)) records
//! into it from each of its three loops and from the consumer's side:
//! - the **scheduling loop**: its whole run, each page it schedules (with the page's priority),
//!   and each wait for room in the I/O queue;
//! - the **I/O scheduler**: each request when it is queued (column, priority, direct or indirect,
//!   its storage reads), each storage read when it is issued (and whether it went past the byte
//!   budget, by the priority bypass or because a decoder waited for it) and when it completed;
//!   the bytes reserved in the I/O buffer and the reads in flight after every change; each
//!   indirect step (list offsets or string offsets read, follow-up requests computed);
//! - the **decode loop**: each wait for the pages of a step, and each decode task (on the
//!   thread that ran it);
//! - the **consumer**: each batch handed out, from the moment it was asked for.
//!
//! A filtered read's stages share one I/O scheduler and its trace: every sub-read records into
//! the same timeline.
//!
//! # Cost
//! A read without a trace pays one `Option` check per hook (a request, a read, a page, a decode
//! task, a batch): no clock is read and nothing is allocated. A traced read takes the clock and
//! one short lock per event (a push onto a vector); an event is a few dozen bytes, so a scan of
//! a few thousand pages records well under a megabyte.
//!
//! # Locks
//! The trace's lock is a leaf: it is taken for a push (or a snapshot) and never held while
//! another lock is taken. The I/O scheduler records while holding its state lock (so the
//! budget samples follow its bookkeeping exactly): the order is always the scheduler's state,
//! then the trace.
//!
//! # Time
//! Timestamps are microseconds since the trace was created ([`Trace::new`]). A trace given to
//! several reads collects them all on one clock; one trace per read gives the clearest picture.
//!
//! This type deliberately does not sample: every event is kept, so a trace of a read can be
//! checked against its plan ([`ReadBuilder::plan`](crate::ReadBuilder::plan)) request by
//! request. Nor does it trace the opening of the file or the loading of column metadata, which
//! happen before (and outside) the read's I/O scheduler.

mod chrome;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Instant;

/// A recorder of the events of one or more reads. Cheap to clone: clones share the events.
///
/// `Send` and `Sync`: the read's loops record into it from their own threads.
#[derive(Clone)]
pub struct Trace {
    inner: Arc<Inner>,
}

struct Inner {
    origin: Instant,
    /// Numbers the I/O requests recorded, from 1.
    next_request: AtomicU64,
    /// Guards everything recorded; a leaf lock (see the module documentation).
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    events: Vec<Event>,
    /// Small numbers for the threads that recorded, in order of first appearance.
    threads: HashMap<ThreadId, u32>,
    /// The last budget sample, so that an unchanged state is not sampled twice.
    last_budget: Option<(u64, u64)>,
    info: TraceInfo,
}

/// What was recorded, in the order it was.
enum Event {
    Queued { request: u64, at: u64, column: u32, priority: u64, known: bool, reads: Vec<Range<u64>> },
    Issued { request: u64, read: usize, at: u64, bypassed: bool, urgent: bool },
    Completed { request: u64, read: usize, at: u64, ok: bool },
    Budget(BudgetSample),
    Span(TracedSpan),
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace").field("events", &self.lock().events.len()).finish()
    }
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

/// What the read told the trace about itself (the last read recorded, if several were).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceInfo {
    /// The file read.
    pub location: Option<String>,
    /// The read's I/O buffer (its byte budget), in bytes.
    pub io_buffer_bytes: Option<u64>,
    /// The read's I/O depth, as configured (`8`, or `auto(8..256)`).
    pub io_depth: Option<String>,
}

/// One storage read of a traced request, with its three moments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedRead {
    /// The request the read belongs to (numbered from 1 in the order requests were queued).
    pub request: u64,
    /// The read's position among its request's reads (a request's ranges are coalesced and
    /// split into reads as in [`coalesce_ranges`](crate::io::coalesce_ranges)).
    pub index: usize,
    /// The column the request reads.
    pub column: u32,
    /// The request's priority: the lowest top-level row it serves.
    pub priority: u64,
    /// Whether its request was known from metadata alone (direct, as a plan lists it), not
    /// computed from bytes read earlier (indirect).
    pub known: bool,
    /// The bytes of the file read.
    pub range: Range<u64>,
    /// When its request was queued (µs since the trace was created).
    pub queued: u64,
    /// When it got a slot in the I/O depth and room in the budget, if it did.
    pub issued: Option<u64>,
    /// When its bytes arrived (or its failure), if they did.
    pub completed: Option<u64>,
    /// Whether it was issued past the byte budget (by the priority bypass, or because a
    /// decoder waited for it).
    pub bypassed: bool,
    /// Whether only a decoder waiting for it let it past the budget (see
    /// [`IoStats::urgent_reads`](crate::IoStats::urgent_reads)).
    pub urgent: bool,
    /// Whether the storage returned an error.
    pub failed: bool,
}

impl TracedRead {
    /// Bytes read.
    pub fn num_bytes(&self) -> u64 {
        self.range.end - self.range.start
    }
}

/// A sample of the I/O buffer, taken after every change of the scheduler's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetSample {
    /// µs since the trace was created.
    pub at: u64,
    /// Bytes reserved: in flight, or read and not yet consumed.
    pub reserved_bytes: u64,
    /// Storage reads in flight.
    pub reads_in_flight: u64,
}

/// Where a span is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// The scheduling loop (loop 1).
    Scheduling,
    /// Indirect steps: offsets read, follow-up requests computed (they overlap).
    Indirect,
    /// The decode loop's waits for the pages of its steps.
    DecodeLoop,
    /// Decode tasks, one row per thread that ran them.
    Decode,
    /// Batches handed to the reader's consumer.
    Consumer,
}

impl Lane {
    /// The lane's name, as exported.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Scheduling => "scheduling",
            Lane::Indirect => "indirect",
            Lane::DecodeLoop => "decode loop",
            Lane::Decode => "decode",
            Lane::Consumer => "consumer",
        }
    }
}

/// What a span covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// The scheduling loop of one (sub-)read, from its first page to its last.
    SchedulingLoop,
    /// One page scheduled: its requests submitted, its decoder sent on.
    SchedulePage {
        /// The page's priority (the lowest top-level row it serves).
        priority: u64,
    },
    /// The scheduling loop waiting for room in the I/O queue.
    WaitForRoom,
    /// An indirect step, from its start to its follow-up requests submitted.
    Indirect {
        /// The column it reads.
        column: u32,
        /// The priority of its follow-up.
        priority: u64,
    },
    /// The decode loop waiting for the pages of a step.
    WaitForPages {
        /// The step's number within its (sub-)read.
        step: u64,
        /// Rows of the step.
        rows: u64,
    },
    /// A decode task: the fields of one step decoded and assembled.
    Decode {
        /// The step's number within its (sub-)read.
        step: u64,
        /// Rows of the step.
        rows: u64,
    },
    /// A batch handed to the consumer, from the moment it was asked for.
    Batch {
        /// The batch's number in the read.
        index: u64,
        /// Rows of the batch.
        rows: u64,
        /// Memory of the batch's arrays.
        bytes: u64,
    },
}

impl SpanKind {
    /// The lane the span is drawn in.
    pub fn lane(self) -> Lane {
        match self {
            SpanKind::SchedulingLoop | SpanKind::SchedulePage { .. } | SpanKind::WaitForRoom => Lane::Scheduling,
            SpanKind::Indirect { .. } => Lane::Indirect,
            SpanKind::WaitForPages { .. } => Lane::DecodeLoop,
            SpanKind::Decode { .. } => Lane::Decode,
            SpanKind::Batch { .. } => Lane::Consumer,
        }
    }

    /// A short name of the span.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::SchedulingLoop => "scheduling loop",
            SpanKind::SchedulePage { .. } => "schedule page",
            SpanKind::WaitForRoom => "wait for room",
            SpanKind::Indirect { .. } => "indirect step",
            SpanKind::WaitForPages { .. } => "wait for pages",
            SpanKind::Decode { .. } => "decode",
            SpanKind::Batch { .. } => "batch",
        }
    }
}

/// A span of time on one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedSpan {
    /// What it covers.
    pub kind: SpanKind,
    /// The thread that recorded it (numbered from 0 in order of first appearance).
    pub thread: u32,
    /// µs since the trace was created.
    pub start: u64,
    /// µs since the trace was created (at least `start`).
    pub end: u64,
}

/// Everything a trace holds, in the form it is analysed or exported in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceSnapshot {
    /// Every storage read, by request then position.
    pub reads: Vec<TracedRead>,
    /// Every span, in the order they ended.
    pub spans: Vec<TracedSpan>,
    /// The I/O buffer over time.
    pub budget: Vec<BudgetSample>,
    /// What the read told about itself.
    pub info: TraceInfo,
}

impl TraceSnapshot {
    /// The batches handed out: `(rows, bytes)` each, in order.
    pub fn batches(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.spans.iter().filter_map(|s| match s.kind {
            SpanKind::Batch { rows, bytes, .. } => Some((rows, bytes)),
            _ => None,
        })
    }

    /// The trace as Chrome's Trace Event Format (JSON), which Perfetto (ui.perfetto.dev) and
    /// `chrome://tracing` open: complete events (`X`) for spans, one lane (thread) per kind and
    /// decode thread; async events (`b`/`e`) for each storage read, queued then in flight;
    /// counters (`C`) for the I/O buffer and the reads in flight; metadata (`M`) naming lanes.
    pub fn to_chrome_json(&self) -> String {
        chrome::to_chrome_json(self)
    }
}

impl Trace {
    /// An empty trace whose clock starts now.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                origin: Instant::now(),
                next_request: AtomicU64::new(1),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Everything recorded so far (a read still running goes on recording).
    pub fn snapshot(&self) -> TraceSnapshot {
        let state = self.lock();
        let mut reads: Vec<TracedRead> = Vec::new();
        // Requests are numbered in the order they were queued, so a request's reads start at
        // the position its number maps to.
        let mut first_read: BTreeMap<u64, usize> = BTreeMap::new();
        let mut spans = Vec::new();
        let mut budget = Vec::new();
        for event in &state.events {
            match event {
                Event::Queued { request, at, column, priority, known, reads: ranges } => {
                    first_read.insert(*request, reads.len());
                    reads.extend(ranges.iter().enumerate().map(|(index, range)| TracedRead {
                        request: *request,
                        index,
                        column: *column,
                        priority: *priority,
                        known: *known,
                        range: range.clone(),
                        queued: *at,
                        issued: None,
                        completed: None,
                        bypassed: false,
                        urgent: false,
                        failed: false,
                    }));
                }
                Event::Issued { request, read, at, bypassed, urgent } => {
                    if let Some(traced) = first_read.get(request).and_then(|first| reads.get_mut(first + read)) {
                        traced.issued = Some(*at);
                        traced.bypassed = *bypassed;
                        traced.urgent = *urgent;
                    }
                }
                Event::Completed { request, read, at, ok } => {
                    if let Some(traced) = first_read.get(request).and_then(|first| reads.get_mut(first + read)) {
                        traced.completed = Some(*at);
                        traced.failed = !ok;
                    }
                }
                Event::Budget(sample) => budget.push(*sample),
                Event::Span(span) => spans.push(*span),
            }
        }
        TraceSnapshot { reads, spans, budget, info: state.info.clone() }
    }

    /// [`TraceSnapshot::to_chrome_json`] of everything recorded so far.
    pub fn to_chrome_json(&self) -> String {
        self.snapshot().to_chrome_json()
    }

    /// Microseconds since the trace was created.
    pub(crate) fn now(&self) -> u64 {
        self.inner.origin.elapsed().as_micros() as u64
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while pushing an event leaves nothing half-done worth more than the trace.
        self.inner.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records what the read says about itself.
    pub(crate) fn set_info(&self, info: TraceInfo) {
        self.lock().info = info;
    }

    /// Records a request queued with these storage reads; returns its number, for
    /// [`read_issued`](Self::read_issued) and [`read_completed`](Self::read_completed).
    pub(crate) fn request_queued(&self, column: u32, priority: u64, known: bool, reads: &[Range<u64>]) -> u64 {
        let request = self.inner.next_request.fetch_add(1, Ordering::Relaxed);
        let at = self.now();
        let event = Event::Queued { request, at, column, priority, known, reads: reads.to_vec() };
        self.lock().events.push(event);
        request
    }

    /// Records read `read` of `request` issued: past the budget if `bypassed`, and only
    /// because a decoder waited for it if `urgent`.
    pub(crate) fn read_issued(&self, request: u64, read: usize, bypassed: bool, urgent: bool) {
        let at = self.now();
        self.lock().events.push(Event::Issued { request, read, at, bypassed, urgent });
    }

    /// Records read `read` of `request` completed (`ok`: with its bytes).
    pub(crate) fn read_completed(&self, request: u64, read: usize, ok: bool) {
        let at = self.now();
        self.lock().events.push(Event::Completed { request, read, at, ok });
    }

    /// Samples the I/O buffer, unless it is as last sampled.
    pub(crate) fn budget(&self, reserved_bytes: u64, reads_in_flight: u64) {
        let at = self.now();
        let mut state = self.lock();
        if state.last_budget == Some((reserved_bytes, reads_in_flight)) {
            return;
        }
        state.last_budget = Some((reserved_bytes, reads_in_flight));
        state.events.push(Event::Budget(BudgetSample { at, reserved_bytes, reads_in_flight }));
    }

    /// Records a span of `kind` from `start` (a [`now`](Self::now)) to now, on the calling
    /// thread.
    pub(crate) fn span(&self, kind: SpanKind, start: u64) {
        let end = self.now().max(start);
        let id = std::thread::current().id();
        let mut state = self.lock();
        let next = state.threads.len() as u32;
        let thread = *state.threads.entry(id).or_insert(next);
        state.events.push(Event::Span(TracedSpan { kind, thread, start, end }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn traces_are_send_and_sync() {
        assert_send_sync::<Trace>();
        assert_send_sync::<TraceSnapshot>();
    }

    #[test]
    fn a_snapshot_joins_the_moments_of_each_read() {
        let trace = Trace::new();
        let a = trace.request_queued(3, 10, true, &[0..100, 200..300]);
        let b = trace.request_queued(4, 0, false, &[500..510]);
        trace.read_issued(b, 0, true, true);
        trace.read_issued(a, 1, false, false);
        trace.budget(110, 2);
        trace.budget(110, 2);
        trace.read_completed(a, 1, true);
        trace.read_completed(b, 0, false);
        let start = trace.now();
        trace.span(SpanKind::Decode { step: 0, rows: 5 }, start);
        let snapshot = trace.snapshot();
        assert_eq!(snapshot.reads.len(), 3);
        let (first, second, third) = (&snapshot.reads[0], &snapshot.reads[1], &snapshot.reads[2]);
        assert_eq!((first.range.clone(), first.issued, first.completed), (0..100, None, None));
        assert!(second.issued.is_some() && second.completed.is_some() && !second.bypassed);
        assert!(third.bypassed && third.urgent && third.failed && !third.known);
        assert_eq!(snapshot.budget.len(), 1, "an unchanged budget is sampled once");
        assert_eq!(snapshot.spans[0].kind.lane(), Lane::Decode);
        assert!(snapshot.spans[0].end >= snapshot.spans[0].start);
    }
}
