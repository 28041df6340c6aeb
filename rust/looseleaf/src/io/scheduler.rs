//! [`IoScheduler`]: runs requests by priority, with a bounded I/O depth and a byte budget.
//!
//! # Ordering
//! Requests are split into reads ([`coalesce_ranges`]) and queued in a binary heap ordered by
//! (priority, submission order). Reads leave the queue only from its head, so with an I/O depth
//! of one they are issued in priority order among the reads queued at that moment.
//!
//! # Backpressure
//! A read reserves its length from the I/O buffer (`IoOptions::buffer`, the byte budget of data
//! read but not yet consumed) when it is issued. A request made for a page carries the page's
//! [`ReservationHolder`]: its reservation then moves into the holder when the request
//! completes, and is returned when the holder is dropped — when the page's decoder and every
//! batch cut from it are done, since they share the holder. A request without a holder (the
//! metadata of the file, say) returns its reservation when its future resolves. A page that
//! grows in memory after it is read (a decompressed page) adds to its holder's reservation
//! ([`ReservationHolder::grow`]). The head of the queue is issued only while
//! - fewer reads than the I/O depth are in flight, and
//! - the reserved bytes plus the read fit in the budget, **or** the read's priority is at most
//!   the lowest priority holding a reservation (or nothing is reserved at all).
//!
//! The second arm is the *bypass*: the budget may be exceeded, but only by a read at least as
//! urgent as everything already buffered. A request whose [`Urgency`](super::Urgency) is set —
//! a decoder is waiting for it — also goes past the budget when the head of the queue is held
//! back by it (counted in [`IoStats::urgent_reads`]); that covers requests whose priority is an
//! estimate, which the priority bypass alone could leave behind later rows. Without it a request the decoder waits for (list
//! items or string data found through indirect I/O, or a page larger than the budget) could sit
//! behind a buffer full of later rows that the decoder will never take before it: a deadlock.
//! With it, buffered bytes exceed the budget by at most the reads of the lowest rows. Each
//! bypass is counted in [`IoStats::bypassed_reads`].
//!
//! # I/O depth
//! The depth is fixed, or adaptive: a [`DepthController`] under the state lock raises it while
//! throughput rises and halves it when the storage throttles (see [`IoDepth`]). Changing it
//! never cancels a read; a lower depth only holds back the next ones.
//!
//! # A shared budget
//! A scheduler given an [`IoBudget`] also counts its reads and reserved bytes there, with the
//! other reads sharing it: a read is issued only while the shared depth has room, and while
//! its bytes fit in the shared budget too — or pass it by this read's own bypass or urgency
//! (see [`IoBudget`] for why each read keeps its own arms, the bound that results, and how a
//! release in one read wakes the others). Locks are taken in one order: a scheduler's state,
//! then the budget's; other schedulers are woken only once both are released ([`unlock`]).
//!
//! # Checksums
//! A request may carry the [`BufferChecks`] of its page. Once its last read is in, its bytes
//! are put together and verified on the thread that completed the read — after the next read
//! was issued, holding no lock — so that pages are verified in parallel while their bytes are
//! still in cache; a mismatch fails the request with the error naming the buffer.
//!
//! # Tracing
//! A scheduler given a [`Trace`] records each request queued, each read issued (and whether it
//! went past the budget) and completed, each indirect step, and the reserved bytes and reads in
//! flight after every dispatch (under the state lock, so the samples follow the bookkeeping;
//! the trace's lock is a leaf). Without one, each hook is one `Option` check.
//!
//! # Cancel safety
//! Dropping a request's future releases its reservation; its reads still queued are discarded
//! when they reach the head of the queue, and reads in flight are released when they complete.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::budget::{BudgetWaiter, Grant, IoBudget, Reader, wake_all};
use super::depth::{DepthController, IoDepth};
use super::{
    BufferChecks, EncodingsIo, IndirectHint, IoFuture, IoOptions, IoRequest, IoStats, Priority, RangeReader,
    RequestKind, coalesce_ranges,
};
use crate::error::{Error, Result};
use crate::trace::{SpanKind, Trace};

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    indirect_requests: AtomicU64,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    peak_reserved_bytes: AtomicU64,
    bypassed_reads: AtomicU64,
    urgent_reads: AtomicU64,
}

/// Runs the reads of one file by priority with a bounded depth and a byte budget.
///
/// Cloning gives another handle to the same scheduler. Must be created inside a tokio runtime.
#[derive(Clone)]
pub struct IoScheduler {
    inner: Arc<Inner>,
}

struct Inner {
    reader: Arc<dyn RangeReader>,
    options: IoOptions,
    /// The budget shared with other reads, if any.
    budget: Option<IoBudget>,
    /// Whether the scheduler waits in `budget`'s list (see [`BudgetWaiter`]).
    registered: AtomicBool,
    /// Counts this read in the shared budget's active reads while the scheduler lives.
    _reader: Option<Reader>,
    runtime: tokio::runtime::Handle,
    /// Guards the queue and the budget; held only for bookkeeping, never across an await.
    state: Mutex<State>,
    /// Signalled when reads leave the queue while the scheduling loop waits for room in it
    /// ([`EncodingsIo::wait_for_room`]).
    room: Condvar,
    counters: Counters,
    /// Where the read's I/O is recorded, if it is traced.
    trace: Option<Trace>,
}

struct State {
    queue: BinaryHeap<Reverse<QueuedRead>>,
    /// Reads a decoder is waiting for: issued past the budget when the head of `queue` is held
    /// back by it. A read may be in both queues; whichever reaches it first issues it, the
    /// other skips it.
    urgent: BinaryHeap<Reverse<QueuedRead>>,
    next_seq: u64,
    in_flight: usize,
    reserved_bytes: u64,
    /// How many reads hold a reservation at each priority.
    reserved_priorities: BTreeMap<Priority, usize>,
    /// How many reads may be in flight.
    depth: DepthController,
    /// Requests the dispatcher let go of, dropped by [`unlock`] once the lock is released: the
    /// last reference to a request may hold the last clone of a [`ReservationHolder`], whose
    /// drop takes the lock (and `std`'s mutex is not reentrant).
    retired: Vec<Arc<PendingRequest>>,
    /// Schedulers of other reads waiting for the shared budget that a release under the lock
    /// made room for, woken by [`unlock`] once the lock is released.
    to_wake: Vec<Weak<dyn BudgetWaiter>>,
    /// While the scheduling loop waits for room in the queue: the queue length at which it is
    /// woken (see [`EncodingsIo::wait_for_room`]).
    loop_resumes_at: Option<usize>,
}

/// A read issued and not yet started: read `index` of `request`, the bytes `range`.
struct IssuedRead {
    request: Arc<PendingRequest>,
    index: usize,
    range: Range<u64>,
}

impl State {
    fn new(depth: IoDepth) -> Self {
        Self {
            queue: BinaryHeap::new(),
            urgent: BinaryHeap::new(),
            next_seq: 0,
            in_flight: 0,
            reserved_bytes: 0,
            reserved_priorities: BTreeMap::new(),
            depth: DepthController::new(depth),
            retired: Vec::new(),
            to_wake: Vec::new(),
            loop_resumes_at: None,
        }
    }
}

struct QueuedRead {
    priority: Priority,
    seq: u64,
    index: usize,
    request: Arc<PendingRequest>,
}

impl PartialEq for QueuedRead {
    fn eq(&self, other: &Self) -> bool {
        (self.priority, self.seq) == (other.priority, other.seq)
    }
}
impl Eq for QueuedRead {}
impl PartialOrd for QueuedRead {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for QueuedRead {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.priority, self.seq).cmp(&(other.priority, other.seq))
    }
}

/// A request whose reads are queued or in flight.
struct PendingRequest {
    priority: Priority,
    /// The request's number in the read's trace (0 when not traced).
    trace_id: u64,
    /// Where the request's reservation goes once it completes (see the module documentation).
    holder: Option<ReservationHolder>,
    ranges: Vec<Range<u64>>,
    reads: Vec<Range<u64>>,
    /// Verified once every read is in, before the bytes are delivered (see `complete`).
    checks: Option<Arc<BufferChecks>>,
    progress: Mutex<Progress>,
}

struct Progress {
    results: Vec<Option<Bytes>>,
    /// Which reads have been issued.
    issued: Vec<bool>,
    remaining: usize,
    /// Bytes and number of this request's reads that hold a reservation.
    reserved_bytes: u64,
    reserved_reads: usize,
    /// Dropped by its consumer or failed: its reads are no longer issued.
    abandoned: bool,
    sender: Option<oneshot::Sender<Result<Delivery>>>,
}

/// Bytes handed to the consumer, with the reservation that is returned when they are taken
/// (`None` when the request's holder keeps it instead).
struct Delivery {
    buffers: Vec<Bytes>,
    _reservation: Option<Reservation>,
}

/// The reservations of the requests of one page, returned to their schedulers' budgets when the
/// last clone of the holder is dropped: the page's decoder, its place in the decoder's queue,
/// and each piece of it a batch decodes hold one. Cheap to clone.
#[derive(Clone, Default)]
pub struct ReservationHolder(Arc<Mutex<Vec<Reservation>>>);

impl std::fmt::Debug for ReservationHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReservationHolder").field(&self.bytes()).finish()
    }
}

impl ReservationHolder {
    /// A holder of no reservation yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        lock(&self.0).iter().map(|r| r.bytes).sum()
    }

    /// Adds `bytes` to what the holder reserves, in the budget of the scheduler that filled it:
    /// a page that takes more memory once decoded than it took to read (a decompressed page).
    /// The budget may be exceeded by this: the bytes exist already.
    pub fn grow(&self, bytes: u64) {
        let mut held = lock(&self.0);
        let Some(first) = held.first_mut() else { return };
        if let Some(inner) = first.scheduler.upgrade() {
            let mut state = inner.lock_state();
            state.reserved_bytes = state.reserved_bytes.saturating_add(bytes);
            inner.counters.peak_reserved_bytes.fetch_max(state.reserved_bytes, Ordering::Relaxed);
            if let Some(trace) = &inner.trace {
                trace.budget(state.reserved_bytes, state.in_flight as u64);
            }
        }
        if let Some(budget) = &first.budget {
            budget.grow(bytes);
        }
        first.bytes = first.bytes.saturating_add(bytes);
    }

    fn add(&self, reservation: Reservation) {
        lock(&self.0).push(reservation);
    }
}

/// Returns a request's reserved bytes to the budget (and to the shared budget) when dropped.
pub(crate) struct Reservation {
    scheduler: Weak<Inner>,
    /// The shared budget the bytes count in too, returned to it even when the scheduler is
    /// gone (batches may outlive their read).
    budget: Option<IoBudget>,
    priority: Priority,
    bytes: u64,
    reads: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.reads == 0 {
            return;
        }
        match self.scheduler.upgrade() {
            Some(inner) => {
                let mut state = inner.lock_state();
                release_locked(&mut state, self.priority, self.bytes, self.reads);
                if let Some(budget) = &self.budget {
                    budget.release(self.bytes, false, &mut state.to_wake);
                }
                inner.dispatch_locked(&mut state);
                unlock(state);
            }
            None => {
                let mut to_wake = Vec::new();
                if let Some(budget) = &self.budget {
                    budget.release(self.bytes, false, &mut to_wake);
                }
                wake_all(to_wake);
            }
        }
    }
}

/// Releases the state lock, then drops the requests retired while it was held and wakes the
/// schedulers of other reads a release made room for.
fn unlock(mut state: MutexGuard<'_, State>) {
    let retired = std::mem::take(&mut state.retired);
    let to_wake = std::mem::take(&mut state.to_wake);
    drop(state);
    drop(retired);
    wake_all(to_wake);
}

/// Returns `bytes` held by `reads` reads at `priority` to the scheduler's own budget (the
/// shared one is the caller's business: see [`Inner::release_locked`]).
fn release_locked(state: &mut State, priority: Priority, bytes: u64, reads: usize) {
    if reads == 0 {
        return;
    }
    state.reserved_bytes = state.reserved_bytes.saturating_sub(bytes);
    if let Some(count) = state.reserved_priorities.get_mut(&priority) {
        *count = count.saturating_sub(reads);
        if *count == 0 {
            state.reserved_priorities.remove(&priority);
        }
    }
}

impl IoScheduler {
    /// A scheduler reading from `reader`.
    ///
    /// # Panics
    /// If called outside a tokio runtime.
    pub fn new(reader: Arc<dyn RangeReader>, options: IoOptions) -> Self {
        Self::with_runtime(reader, options, tokio::runtime::Handle::current())
    }

    /// A scheduler reading from `reader` whose reads run on `runtime`.
    pub fn with_runtime(reader: Arc<dyn RangeReader>, options: IoOptions, runtime: tokio::runtime::Handle) -> Self {
        Self::build(reader, options, None, None, runtime)
    }

    /// A scheduler reading from `reader` that also counts its reads and bytes in `budget`,
    /// shared with other reads (see [`IoBudget`]).
    ///
    /// # Panics
    /// If called outside a tokio runtime.
    pub fn with_budget(reader: Arc<dyn RangeReader>, options: IoOptions, budget: Option<IoBudget>) -> Self {
        Self::build(reader, options, budget, None, tokio::runtime::Handle::current())
    }

    /// [`with_budget`](Self::with_budget), recording its requests, reads and buffer in `trace`
    /// (see the module documentation).
    ///
    /// # Panics
    /// If called outside a tokio runtime.
    pub(crate) fn with_trace(
        reader: Arc<dyn RangeReader>,
        options: IoOptions,
        budget: Option<IoBudget>,
        trace: Option<Trace>,
    ) -> Self {
        Self::build(reader, options, budget, trace, tokio::runtime::Handle::current())
    }

    fn build(
        reader: Arc<dyn RangeReader>,
        options: IoOptions,
        budget: Option<IoBudget>,
        trace: Option<Trace>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                reader,
                options,
                _reader: budget.as_ref().map(IoBudget::join),
                budget,
                registered: AtomicBool::new(false),
                runtime,
                state: Mutex::new(State::new(options.depth)),
                room: Condvar::new(),
                counters: Counters::default(),
                trace,
            }),
        }
    }

    /// The scheduler's settings.
    pub fn options(&self) -> IoOptions {
        self.inner.options
    }

    /// The budget shared with other reads, if any.
    pub fn budget(&self) -> Option<&IoBudget> {
        self.inner.budget.as_ref()
    }

    /// The file being read.
    pub fn reader(&self) -> &Arc<dyn RangeReader> {
        &self.inner.reader
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> IoStats {
        let c = &self.inner.counters;
        let (io_depth, peak_io_depth) = {
            let state = self.inner.lock_state();
            (state.depth.current() as u64, state.depth.peak() as u64)
        };
        let storage = self.inner.reader.stats();
        IoStats {
            io_depth,
            peak_io_depth,
            retries: storage.retries,
            throttled: storage.throttled,
            hedged: storage.hedged,
            requests: c.requests.load(Ordering::Relaxed),
            indirect_requests: c.indirect_requests.load(Ordering::Relaxed),
            reads: c.reads.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            peak_reserved_bytes: c.peak_reserved_bytes.load(Ordering::Relaxed),
            bypassed_reads: c.bypassed_reads.load(Ordering::Relaxed),
            urgent_reads: c.urgent_reads.load(Ordering::Relaxed),
        }
    }

    /// Bytes currently reserved (in flight or read but not yet taken).
    pub fn reserved_bytes(&self) -> u64 {
        self.inner.lock_state().reserved_bytes
    }
}

impl EncodingsIo for IoScheduler {
    fn submit(&self, request: IoRequest) -> IoFuture {
        let inner = &self.inner;
        inner.counters.requests.fetch_add(1, Ordering::Relaxed);
        if request.kind == RequestKind::Indirect {
            inner.counters.indirect_requests.fetch_add(1, Ordering::Relaxed);
        }
        let reads = coalesce_ranges(&request.ranges, inner.options.coalesce);
        if reads.is_empty() {
            let empty = vec![Bytes::new(); request.ranges.len()];
            return Box::pin(futures::future::ready(Ok(empty)));
        }
        let trace_id = match &inner.trace {
            Some(trace) => {
                trace.request_queued(request.column, request.priority.0, request.kind == RequestKind::Direct, &reads)
            }
            None => 0,
        };
        let (sender, receiver) = oneshot::channel();
        let pending = Arc::new(PendingRequest {
            priority: request.priority,
            trace_id,
            holder: request.holder,
            ranges: request.ranges,
            checks: request.checks,
            progress: Mutex::new(Progress {
                results: vec![None; reads.len()],
                issued: vec![false; reads.len()],
                remaining: reads.len(),
                reserved_bytes: 0,
                reserved_reads: 0,
                abandoned: false,
                sender: Some(sender),
            }),
            reads,
        });
        {
            let mut state = inner.lock_state();
            for index in 0..pending.reads.len() {
                let seq = state.next_seq;
                state.next_seq += 1;
                state.queue.push(Reverse(QueuedRead {
                    priority: pending.priority,
                    seq,
                    index,
                    request: pending.clone(),
                }));
            }
            inner.dispatch_locked(&mut state);
            unlock(state);
        }
        if let Some(urgency) = request.urgency {
            // Registered after the lock is released: if the flag is already set, the listener
            // runs at once and takes the lock itself.
            let scheduler = Arc::downgrade(inner);
            let waiting = Arc::downgrade(&pending);
            urgency.on_set(move || {
                if let (Some(inner), Some(request)) = (scheduler.upgrade(), waiting.upgrade()) {
                    inner.promote(&request);
                }
            });
        }
        let location = inner.reader.location().to_string();
        Box::pin(receiver.map(move |received| match received {
            Ok(Ok(delivery)) => Ok(delivery.buffers),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::internal(format!("the I/O scheduler of {location} stopped before a read completed"))),
        }))
    }

    fn spawn_indirect(&self, hint: IndirectHint, step: BoxFuture<'static, ()>) {
        match &self.inner.trace {
            None => {
                self.inner.runtime.spawn(step);
            }
            Some(trace) => {
                let trace = trace.clone();
                self.inner.runtime.spawn(async move {
                    let start = trace.now();
                    step.await;
                    trace.span(SpanKind::Indirect { column: hint.column, priority: hint.priority.0 }, start);
                });
            }
        }
    }

    fn coalesce_gap(&self) -> u64 {
        self.inner.options.coalesce.gap.get()
    }

    fn wait_for_room(&self, starving: &dyn Fn() -> bool) {
        let inner = &self.inner;
        let mut state = inner.lock_state();
        let started = std::time::Instant::now();
        loop {
            let backlog = (BACKLOG_PER_READ * state.depth.current()).max(MIN_BACKLOG);
            // Once full, the loop waits until the queue is half empty, not for each read to
            // leave it: then it schedules pages in bursts instead of being woken once per read
            // (a take of 1,000 embeddings rows, 1,006 reads, woke it about a thousand times).
            let resume = backlog / 2;
            // The reads waited for are issued without the loop (see `EncodingsIo`); a wait that
            // outlasts `LOOP_WAIT_LIMIT` lets one page through all the same, so that a hole in
            // that argument would slow a read down, never hang it.
            let full_at = if state.loop_resumes_at.is_some() { resume + 1 } else { backlog };
            let full = state.queue.len() >= full_at && !starving();
            let Some(left) = LOOP_WAIT_LIMIT.checked_sub(started.elapsed()).filter(|_| full) else { break };
            state.loop_resumes_at = Some(resume);
            // Decoders do not signal the lock when they start starving: looked at every
            // `STARVING_POLL`.
            state = match inner.room.wait_timeout(state, left.min(STARVING_POLL)) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        state.loop_resumes_at = None;
        unlock(state);
    }
}

/// Reads queued per read in flight before the scheduling loop waits for room.
const BACKLOG_PER_READ: usize = 4;
/// Reads queued before the scheduling loop waits for room, whatever the depth.
const MIN_BACKLOG: usize = 64;
/// The longest the scheduling loop waits for room before scheduling one more page anyway.
const LOOP_WAIT_LIMIT: Duration = Duration::from_secs(10);
/// How often a waiting scheduling loop looks whether a decoder starves.
const STARVING_POLL: Duration = Duration::from_millis(2);

impl BudgetWaiter for Inner {
    fn registered(&self) -> &AtomicBool {
        &self.registered
    }

    fn wake(self: Arc<Self>) {
        let mut state = self.lock_state();
        self.dispatch_locked(&mut state);
        unlock(state);
    }
}

impl Inner {
    /// Returns `bytes` held by `reads` reads at `priority`, to this scheduler's budget and to
    /// the shared one (with one place in the shared depth if `read_done`).
    fn release_locked(&self, state: &mut State, priority: Priority, bytes: u64, reads: usize, read_done: bool) {
        release_locked(state, priority, bytes, reads);
        if let Some(budget) = &self.budget {
            budget.release(if reads == 0 { 0 } else { bytes }, read_done, &mut state.to_wake);
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the bookkeeping half-updated in a way
        // that matters more than losing the read, so a poisoned lock is taken over.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Moves the reads of `request` not yet issued to the urgent queue.
    fn promote(self: &Arc<Self>, request: &Arc<PendingRequest>) {
        let mut state = self.lock_state();
        {
            let progress = lock(&request.progress);
            if progress.abandoned {
                return;
            }
            for (index, issued) in progress.issued.iter().enumerate() {
                if !issued {
                    let seq = state.next_seq;
                    state.next_seq += 1;
                    state.urgent.push(Reverse(QueuedRead {
                        priority: request.priority,
                        seq,
                        index,
                        request: request.clone(),
                    }));
                }
            }
        }
        self.dispatch_locked(&mut state);
        unlock(state);
    }

    /// Issues reads until `io_depth` are in flight: from the head of the queue while the budget
    /// (or the priority bypass) allows, then, once the head is held back by the budget, reads a
    /// decoder is waiting for. Urgent reads therefore never change the order of reads the budget
    /// lets through anyway. Requests leaving a queue go to `state.retired`: the caller must
    /// release the lock with [`unlock`].
    fn dispatch_locked(self: &Arc<Self>, state: &mut State) {
        self.dispatch_locked_into(state, None);
    }

    /// [`Inner::dispatch_locked`], leaving the first read issued in `run_here` (if given and
    /// empty) for the caller's task to run instead of spawning a task for it: a read that
    /// completes usually makes room for one more, so a run of reads then costs one task, not a
    /// task and a worker's wake-up per read (a fifth of the CPU of a 1,000-row take).
    fn dispatch_locked_into(self: &Arc<Self>, state: &mut State, run_here: Option<&mut Option<IssuedRead>>) {
        let queued = state.queue.len();
        self.dispatch_queue_locked(state, run_here);
        if state.loop_resumes_at.is_some_and(|resume| state.queue.len() <= resume) && state.queue.len() < queued {
            self.room.notify_all();
        }
        if let Some(trace) = &self.trace {
            trace.budget(state.reserved_bytes, state.in_flight as u64);
        }
    }

    fn dispatch_queue_locked(self: &Arc<Self>, state: &mut State, mut run_here: Option<&mut Option<IssuedRead>>) {
        loop {
            if state.in_flight >= state.depth.current() {
                if !state.queue.is_empty() {
                    state.depth.note_depth_limited();
                }
                break;
            }
            if let Some(Reverse(head)) = state.queue.peek() {
                let (request, index) = (head.request.clone(), head.index);
                match self.try_issue_locked(state, &request, index, false, run_here.as_deref_mut()) {
                    Issue::Skipped | Issue::Issued => {
                        if let Some(Reverse(read)) = state.queue.pop() {
                            state.retired.push(read.request);
                        }
                        state.retired.push(request);
                        continue;
                    }
                    Issue::HeldBack => {}
                    Issue::NoDepth => {
                        state.retired.push(request);
                        break;
                    }
                }
            }
            let Some(Reverse(read)) = state.urgent.peek() else { break };
            let (request, index) = (read.request.clone(), read.index);
            let issue = self.try_issue_locked(state, &request, index, true, run_here.as_deref_mut());
            state.retired.push(request);
            if issue == Issue::NoDepth {
                // Stays in the urgent queue until the shared depth has room.
                break;
            }
            if let Some(Reverse(read)) = state.urgent.pop() {
                state.retired.push(read.request);
            }
        }
    }

    /// Issues read `index` of `request` unless it was issued already or its request abandoned,
    /// or (unless `urgent`) the budget holds it back.
    fn try_issue_locked(
        self: &Arc<Self>,
        state: &mut State,
        request: &Arc<PendingRequest>,
        index: usize,
        urgent: bool,
        run_here: Option<&mut Option<IssuedRead>>,
    ) -> Issue {
        let mut progress = lock(&request.progress);
        if progress.abandoned || progress.sender.as_ref().is_none_or(|s| s.is_closed()) {
            progress.abandoned = true;
            let (bytes, reads) = (progress.reserved_bytes, progress.reserved_reads);
            progress.reserved_bytes = 0;
            progress.reserved_reads = 0;
            drop(progress);
            self.release_locked(state, request.priority, bytes, reads, false);
            return Issue::Skipped;
        }
        if progress.issued[index] {
            return Issue::Skipped;
        }
        let read = request.reads[index].clone();
        let len = read.end - read.start;
        let fits = state.reserved_bytes.saturating_add(len) <= self.options.buffer.get();
        let most_urgent =
            state.reserved_priorities.first_key_value().is_none_or(|(lowest, _)| request.priority <= *lowest);
        if !fits && !most_urgent && !urgent {
            return Issue::HeldBack;
        }
        if let Some(budget) = &self.budget {
            let waiter: Arc<dyn BudgetWaiter> = self.clone();
            match budget.try_issue(len, most_urgent || urgent, &waiter) {
                Grant::Granted => {}
                Grant::NoBytes => return Issue::HeldBack,
                Grant::NoDepth => return Issue::NoDepth,
            }
        }
        if !fits {
            self.counters.bypassed_reads.fetch_add(1, Ordering::Relaxed);
            if urgent && !most_urgent {
                self.counters.urgent_reads.fetch_add(1, Ordering::Relaxed);
            }
        }
        progress.issued[index] = true;
        progress.reserved_bytes += len;
        progress.reserved_reads += 1;
        drop(progress);
        if let Some(trace) = &self.trace {
            trace.read_issued(request.trace_id, index, !fits, !fits && urgent && !most_urgent);
        }
        state.in_flight += 1;
        state.reserved_bytes += len;
        *state.reserved_priorities.entry(request.priority).or_default() += 1;
        self.counters.peak_reserved_bytes.fetch_max(state.reserved_bytes, Ordering::Relaxed);
        self.counters.reads.fetch_add(1, Ordering::Relaxed);
        let issued = IssuedRead { request: request.clone(), index, range: read };
        match run_here {
            Some(slot @ None) => *slot = Some(issued),
            _ => self.spawn_reads(issued),
        }
        Issue::Issued
    }

    /// Runs `first` on a task of its own, then each read its completion leaves to the task.
    fn spawn_reads(self: &Arc<Self>, first: IssuedRead) {
        let inner = self.clone();
        self.runtime.spawn(async move {
            let mut next = Some(first);
            while let Some(IssuedRead { request, index, range }) = next {
                let result = inner.reader.get_range(range).await;
                next = inner.complete(request, index, result);
                if next.is_some() {
                    // Reads served from the page cache complete without yielding: the task
                    // yields when its turn is up, as tokio's own resources do.
                    tokio::task::coop::consume_budget().await;
                }
            }
        });
    }

    /// Records a read's result, delivers its request once every read of it is in, and issues
    /// reads the completion made room for; returns the one the caller's task runs next (none
    /// when it delivers: the reads then start while it verifies).
    #[must_use = "the read returned is issued: the caller runs it"]
    fn complete(
        self: &Arc<Self>,
        request: Arc<PendingRequest>,
        index: usize,
        result: Result<Bytes>,
    ) -> Option<IssuedRead> {
        if let Some(trace) = &self.trace {
            trace.read_completed(request.trace_id, index, result.is_ok());
        }
        let read_bytes = result.as_ref().map_or(0, |bytes| bytes.len() as u64);
        self.counters.bytes_read.fetch_add(read_bytes, Ordering::Relaxed);
        let mut to_release = None;
        let mut to_send = None;
        let mut to_deliver = None;
        let mut holder_to_fill = None;
        {
            let mut progress = lock(&request.progress);
            let closed = progress.sender.as_ref().is_none_or(|s| s.is_closed());
            match result {
                _ if progress.abandoned || closed => {
                    progress.abandoned = true;
                    to_release = Some((progress.reserved_bytes, progress.reserved_reads));
                    progress.reserved_bytes = 0;
                    progress.reserved_reads = 0;
                }
                Err(e) => {
                    progress.abandoned = true;
                    to_release = Some((progress.reserved_bytes, progress.reserved_reads));
                    progress.reserved_bytes = 0;
                    progress.reserved_reads = 0;
                    to_send = progress.sender.take().map(|s| (s, Err(e)));
                }
                Ok(bytes) => {
                    progress.results[index] = Some(bytes);
                    progress.remaining -= 1;
                    if progress.remaining == 0 {
                        let results = std::mem::take(&mut progress.results);
                        let reservation = Reservation {
                            scheduler: Arc::downgrade(self),
                            budget: self.budget.clone(),
                            priority: request.priority,
                            bytes: std::mem::take(&mut progress.reserved_bytes),
                            reads: std::mem::take(&mut progress.reserved_reads),
                        };
                        let reservation = match &request.holder {
                            Some(holder) => {
                                holder_to_fill = Some((holder.clone(), reservation));
                                None
                            }
                            None => Some(reservation),
                        };
                        to_deliver = progress.sender.take().map(|s| (s, results, reservation));
                    }
                }
            }
        }
        // The holder first, so that a consumer woken by the bytes finds them counted. Neither
        // holds a lock here: dropping a reservation takes the state lock.
        if let Some((holder, reservation)) = holder_to_fill {
            holder.add(reservation);
        }
        // The read leaves the depth (its own and the shared budget's) before its bytes are
        // delivered, so a consumer woken by them never sees the read still in flight.
        let throttles = self.reader.stats().throttled;
        let mut state = self.lock_state();
        state.in_flight -= 1;
        state.depth.on_complete(read_bytes, throttles, std::time::Instant::now());
        let (bytes, reads) = to_release.unwrap_or((0, 0));
        self.release_locked(&mut state, request.priority, bytes, reads, true);
        let mut next = None;
        self.dispatch_locked_into(&mut state, Some(&mut next));
        unlock(state);
        if to_deliver.is_some()
            && let Some(read) = next.take()
        {
            // Putting the request together and verifying it takes a while: the next read
            // starts meanwhile on a task of its own.
            self.spawn_reads(read);
        }
        // The request's bytes are put together and verified here, on the thread that read
        // them, while they are in its cache: not in the decode loop, which would verify every
        // page of the read one after the other. No lock is held, and the next read is issued.
        if let Some((sender, results, reservation)) = to_deliver {
            let delivery = assemble(&request.ranges, &request.reads, results)
                .and_then(|buffers| match &request.checks {
                    Some(checks) => checks.verify(&request.ranges, &buffers).map(|()| buffers),
                    None => Ok(buffers),
                })
                .map(|buffers| Delivery { buffers, _reservation: reservation });
            to_send = Some((sender, delivery));
        }
        // Sending may drop the delivery (and so take the state lock in `Reservation::drop`)
        // when the consumer is gone: do it without holding any lock.
        if let Some((sender, value)) = to_send {
            let _ = sender.send(value);
        }
        next
    }
}

/// What became of a read the dispatcher looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Issue {
    /// Issued now.
    Issued,
    /// Nothing to do: issued earlier, or its request was abandoned.
    Skipped,
    /// Held back by the byte budget (its own or the shared one).
    HeldBack,
    /// Held back, as every read is, until a read of the shared budget completes.
    NoDepth,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cuts the requested ranges out of the reads that cover them (zero-copy unless a range spans
/// several reads of a split).
fn assemble(ranges: &[Range<u64>], reads: &[Range<u64>], results: Vec<Option<Bytes>>) -> Result<Vec<Bytes>> {
    let mut read_bytes = Vec::with_capacity(results.len());
    for result in results {
        read_bytes.push(result.ok_or_else(|| Error::internal("a read completed without data"))?);
    }
    let results = read_bytes;
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        if range.end <= range.start {
            out.push(Bytes::new());
            continue;
        }
        // Reads are sorted and disjoint: the first read ending after the range's start holds
        // its first byte.
        let first = reads.partition_point(|read| read.end <= range.start);
        let read = reads.get(first).ok_or_else(|| Error::internal("range outside its reads"))?;
        if range.end <= read.end {
            let start = (range.start - read.start) as usize;
            out.push(results[first].slice(start..(range.end - read.start) as usize));
            continue;
        }
        let mut joined = BytesMut::with_capacity((range.end - range.start) as usize);
        for (read, bytes) in reads[first..].iter().zip(&results[first..]) {
            if read.start >= range.end {
                break;
            }
            let start = range.start.max(read.start) - read.start;
            let end = range.end.min(read.end) - read.start;
            joined.extend_from_slice(&bytes[start as usize..end as usize]);
        }
        out.push(joined.freeze());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::CoalesceOptions;
    use crate::io::range_reader::RangeReader;
    use crate::units::ByteCount;
    use std::num::NonZeroUsize;
    use std::sync::atomic::AtomicUsize;
    use tokio::sync::Semaphore;

    /// A reader over an in-memory byte string whose reads each wait for a permit, and which
    /// records the order in which reads started.
    #[derive(Debug)]
    struct GatedReader {
        data: Bytes,
        gate: Arc<Semaphore>,
        started: Mutex<Vec<Range<u64>>>,
        active: AtomicUsize,
    }

    impl RangeReader for GatedReader {
        fn location(&self) -> &str {
            "gated"
        }
        fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
            self.started.lock().unwrap().push(range.clone());
            self.active.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                let permit = self.gate.acquire().await.unwrap();
                permit.forget();
                self.active.fetch_sub(1, Ordering::SeqCst);
                Ok(self.data.slice(range.start as usize..range.end as usize))
            })
        }
        fn get_suffix(&self, _len: u64) -> BoxFuture<'_, Result<(Bytes, u64)>> {
            unreachable!()
        }
    }

    fn gated(len: usize) -> Arc<GatedReader> {
        Arc::new(GatedReader {
            data: Bytes::from((0..len).map(|i| i as u8).collect::<Vec<_>>()),
            gate: Arc::new(Semaphore::new(0)),
            started: Mutex::new(vec![]),
            active: AtomicUsize::new(0),
        })
    }

    fn request(range: Range<u64>, priority: u64) -> IoRequest {
        IoRequest {
            ranges: vec![range],
            priority: Priority(priority),
            column: 0,
            kind: RequestKind::Direct,
            urgency: None,
            holder: None,
            checks: None,
        }
    }

    const OPTS: IoOptions = IoOptions {
        depth: IoDepth::Fixed(NonZeroUsize::MIN),
        buffer: ByteCount(100),
        coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(1000) },
        open_read: ByteCount(1000),
    };
    const DEPTH_8: IoDepth = IoDepth::Fixed(NonZeroUsize::MIN.saturating_add(7));

    /// A full queue holds the scheduling loop until it is half empty, not until one read leaves.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scheduling_loop_waits_until_the_queue_is_half_empty() {
        let reader = gated(1000);
        let scheduler = IoScheduler::new(reader.clone(), IoOptions { buffer: ByteCount(1 << 20), ..OPTS });
        // Depth 1: one read in flight, 69 queued, past the backlog of 64.
        let pending: Vec<_> = (0..70).map(|i| scheduler.submit(request(i..i + 1, i))).collect();
        let resumed = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (scheduler, resumed) = (scheduler.clone(), resumed.clone());
            std::thread::spawn(move || {
                scheduler.wait_for_room(&|| false);
                resumed.store(true, Ordering::SeqCst);
            })
        };
        while scheduler.inner.lock_state().loop_resumes_at.is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // 36 reads done: 33 queued, more than half the backlog.
        reader.gate.add_permits(36);
        while reader.started.lock().unwrap().len() < 37 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!resumed.load(Ordering::SeqCst), "the loop went on with 33 reads queued");
        // One more: 32 queued, and the loop is woken (well before its 10 s limit).
        reader.gate.add_permits(1);
        let started = std::time::Instant::now();
        while !resumed.load(Ordering::SeqCst) {
            assert!(started.elapsed() < Duration::from_secs(5), "the loop was not woken");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        waiter.join().unwrap();
        reader.gate.add_permits(100);
        for read in pending {
            read.await.unwrap();
        }
    }

    #[tokio::test]
    async fn issues_by_priority_with_depth_one() {
        let reader = gated(1000);
        let scheduler = IoScheduler::new(reader.clone(), OPTS);
        let first = scheduler.submit(request(0..10, 5));
        let later = scheduler.submit(request(10..20, 9));
        let urgent = scheduler.submit(request(20..30, 1));
        reader.gate.add_permits(3);
        let (a, b, c) = tokio::join!(first, later, urgent);
        assert_eq!(a.unwrap()[0], reader.data.slice(0..10));
        assert_eq!(b.unwrap()[0], reader.data.slice(10..20));
        assert_eq!(c.unwrap()[0], reader.data.slice(20..30));
        // The first was issued at once; of the queued two the urgent one went first.
        assert_eq!(*reader.started.lock().unwrap(), vec![0..10, 20..30, 10..20]);
    }

    #[tokio::test]
    async fn budget_holds_reads_until_bytes_are_taken_and_bypass_lets_urgent_reads_through() {
        let reader = gated(1000);
        let scheduler = IoScheduler::new(reader.clone(), IoOptions { depth: DEPTH_8, ..OPTS });
        reader.gate.add_permits(100);
        // Two 50-byte requests at rows 10 and 20 fill the 100-byte budget.
        let a = scheduler.submit(request(0..50, 10));
        let b = scheduler.submit(request(50..100, 20));
        // A later request must wait: nothing has been taken.
        let c = scheduler.submit(request(100..150, 30));
        tokio::task::yield_now().await;
        while reader.active.load(Ordering::SeqCst) > 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(reader.started.lock().unwrap().len(), 2);
        assert_eq!(scheduler.reserved_bytes(), 100);
        // A request more urgent than everything buffered bypasses the full budget.
        let urgent = scheduler.submit(request(150..160, 5));
        assert_eq!(urgent.await.unwrap()[0], reader.data.slice(150..160));
        assert_eq!(scheduler.stats().bypassed_reads, 1);
        assert_eq!(reader.started.lock().unwrap().len(), 3);
        // Taking the first request's bytes makes room for the waiting one.
        a.await.unwrap();
        assert_eq!(c.await.unwrap()[0], reader.data.slice(100..150));
        b.await.unwrap();
        assert_eq!(scheduler.reserved_bytes(), 0);
        assert!(scheduler.stats().peak_reserved_bytes <= 110);
    }

    #[tokio::test]
    async fn dropped_requests_release_their_budget_and_are_not_read() {
        let reader = gated(1000);
        let scheduler = IoScheduler::new(reader.clone(), IoOptions { depth: DEPTH_8, ..OPTS });
        reader.gate.add_permits(100);
        let a = scheduler.submit(request(0..100, 1));
        let b = scheduler.submit(request(100..200, 2));
        tokio::task::yield_now().await;
        drop(b);
        drop(a);
        let c = scheduler.submit(request(200..300, 3));
        assert_eq!(c.await.unwrap()[0].len(), 100);
        assert!(!reader.started.lock().unwrap().contains(&(100..200)));
        assert_eq!(scheduler.reserved_bytes(), 0);
    }

    /// A queued request may hold the last clone of a page's holder, which holds the
    /// reservation of the page's earlier request: the dispatcher letting go of the request
    /// must not return that reservation while it holds the lock (a self-deadlock, found by the
    /// round-trip property tests).
    #[test]
    fn a_request_holding_the_last_reservation_holder_is_dropped_outside_the_lock() {
        // On its own thread, so that a deadlock fails the test instead of hanging it.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let reader = gated(1000);
                let scheduler = IoScheduler::new(reader.clone(), IoOptions { depth: DEPTH_8, ..OPTS });
                reader.gate.add_permits(100);
                let holder = ReservationHolder::new();
                let with_holder =
                    |range, priority| IoRequest { holder: Some(holder.clone()), ..request(range, priority) };
                // The page's first request completes: the holder keeps its 80 bytes.
                scheduler.submit(with_holder(0..80, 10)).await.unwrap();
                assert_eq!(holder.bytes(), 80);
                // Its second is held back by the budget (and is not the most urgent), then
                // abandoned with the page: the queue has the last clone of the holder.
                drop(scheduler.submit(with_holder(80..130, 20)));
                drop(holder);
                assert_eq!(scheduler.reserved_bytes(), 80);
                // The next dispatch skips the abandoned read and drops the holder's reservation.
                let next = scheduler.submit(request(200..210, 5)).await.unwrap();
                assert_eq!(next[0], reader.data.slice(200..210));
                assert_eq!(scheduler.reserved_bytes(), 0);
            });
            let _ = done.send(());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the scenario failed (its panic is printed above) or the scheduler deadlocked");
    }

    /// Two reads sharing a budget: one's release wakes the other, held back by bytes the
    /// first held (the wake-up crosses schedulers), and the shared depth caps both together.
    #[tokio::test]
    async fn a_shared_budget_holds_reads_of_others_and_their_releases_wake_them() {
        let reader = gated(1000);
        reader.gate.add_permits(1000);
        let budget = IoBudget::new(ByteCount(100), None);
        let options = IoOptions { depth: DEPTH_8, buffer: ByteCount(1000), ..OPTS };
        let a = IoScheduler::with_budget(reader.clone(), options, Some(budget.clone()));
        let b = IoScheduler::with_budget(reader.clone(), options, Some(budget.clone()));
        let holder =
            |h: &ReservationHolder, range, priority| IoRequest { holder: Some(h.clone()), ..request(range, priority) };
        let (held_a, held_b) = (ReservationHolder::new(), ReservationHolder::new());
        a.submit(holder(&held_a, 0..80, 10)).await.unwrap();
        b.submit(holder(&held_b, 100..110, 1)).await.unwrap();
        assert_eq!(budget.stats().reserved_bytes, 90);
        // B's next read fits its own buffer but not the shared one, and is not B's most urgent.
        let waiting = b.submit(holder(&held_b, 200..250, 20));
        tokio::task::yield_now().await;
        assert_eq!(reader.started.lock().unwrap().len(), 2);
        // A gives its bytes back: B is woken and reads.
        drop(held_a);
        assert_eq!(a.reserved_bytes(), 0);
        waiting.await.unwrap();
        assert_eq!(budget.stats().reserved_bytes, 60);
        // Each read's own bypass passes the shared budget: A's read while A holds nothing, and
        // B's read at B's lowest priority.
        let c = ReservationHolder::new();
        a.submit(holder(&c, 300..390, 30)).await.unwrap();
        b.submit(request(400..450, 1)).await.unwrap();
        assert_eq!(budget.stats().bypassed_reads, 2);
        drop((held_b, c));
        assert_eq!(budget.stats().reserved_bytes, 0);
        assert!(budget.stats().peak_reserved_bytes <= 200, "{:?}", budget.stats());
    }

    #[tokio::test]
    async fn a_shared_depth_caps_the_reads_in_flight_of_every_read() {
        let reader = gated(1000);
        let budget = IoBudget::new(ByteCount(1000), NonZeroUsize::new(2));
        let options = IoOptions { depth: DEPTH_8, buffer: ByteCount(1000), ..OPTS };
        let schedulers: Vec<IoScheduler> =
            (0..3).map(|_| IoScheduler::with_budget(reader.clone(), options, Some(budget.clone()))).collect();
        let mut futures = Vec::new();
        for (i, scheduler) in schedulers.iter().enumerate() {
            for j in 0..4u64 {
                let start = (i as u64 * 4 + j) * 10;
                futures.push(scheduler.submit(request(start..start + 10, j)));
            }
        }
        tokio::task::yield_now().await;
        assert_eq!(reader.started.lock().unwrap().len(), 2);
        // Each completion lets exactly one more read start, whichever read it belongs to.
        for done in 1..=10 {
            reader.gate.add_permits(1);
            while reader.started.lock().unwrap().len() < (2 + done).min(12) || reader.active.load(Ordering::SeqCst) > 2
            {
                tokio::task::yield_now().await;
            }
            assert!(budget.stats().in_flight <= 2);
        }
        reader.gate.add_permits(2);
        for future in futures {
            future.await.unwrap();
        }
        let stats = budget.stats();
        assert_eq!((stats.peak_in_flight, stats.reads, stats.in_flight), (2, 12, 0));
    }

    #[test]
    fn assemble_cuts_ranges_across_split_reads() {
        let data: Vec<u8> = (0..100).collect();
        let reads = vec![0..40, 40..80, 90..100];
        let results =
            reads.iter().map(|r| Some(Bytes::copy_from_slice(&data[r.start as usize..r.end as usize]))).collect();
        let out = assemble(&[30..50, 0..10, 95..100, 7..7], &reads, results).unwrap();
        assert_eq!(&out[0][..], &data[30..50]);
        assert_eq!(&out[1][..], &data[0..10]);
        assert_eq!(&out[2][..], &data[95..100]);
        assert!(out[3].is_empty());
    }
}
