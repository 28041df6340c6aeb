//! [`IoBudget`]: one byte budget and one I/O depth shared by many reads (a process-wide cap).
//!
//! Each read has its own [`IoScheduler`](super::IoScheduler), with its own buffer and depth
//! ([`IoOptions`](super::IoOptions)). Reads given the same `IoBudget` also count every read
//! they issue, and every byte they hold, against it: `N` concurrent reads then hold one budget
//! and run one depth of reads, not `N`.
//!
//! # Rules
//! - **Depth** is a hard cap: a read is issued only while fewer than `depth` reads of all the
//!   budget's reads are in flight. Reads in flight always complete (they wait on storage, not
//!   on a consumer), so waiting for depth can never deadlock.
//! - **Bytes**: a read is issued while the bytes reserved by all the budget's reads, plus its
//!   own, fit — or when its own read lets it past *its* budget: the priority bypass and the
//!   urgency arm of each [`IoScheduler`](super::IoScheduler) pass the shared budget too.
//!   Priorities of different reads are not comparable (row 10 of one file is not more urgent
//!   than row 5000 of another), so each read keeps its own arms: a read whose consumer is
//!   slow, or gone quiet, cannot stop another read forever, and a read never deadlocks on
//!   bytes another read holds. What results is the bound of the shared budget: the budget,
//!   plus, for each read, the bytes its own arms let past it (its minimum progress: the pages
//!   of the rows its decoders wait for).
//!
//! # Wake-ups
//! A read held back by the shared budget (depth or bytes) registers its scheduler as a
//! *waiter* under the budget's lock, in the same critical section in which it found the budget
//! short. Every release (bytes returned, a read completed) happens under that lock and takes
//! the waiters registered before it. A release therefore either happens before the check (which
//! then sees it) or after the registration (and wakes the waiter): no wake-up is lost. Waiters
//! are woken after every lock is released (each re-runs its dispatch, and registers again if the
//! budget is still short), and wake-ups that a wake-up causes on the same thread are queued,
//! not nested, so a chain of reads waking each other never deepens the stack. Nothing is fair
//! between waiters: whichever finds room first takes it.

use std::cell::RefCell;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

use crate::units::ByteCount;

/// A byte budget and an I/O depth shared by the reads it is given to (see the module
/// documentation). Cheap to clone; clones are the same budget. Two budgets are equal when they
/// are the same budget.
#[derive(Clone)]
pub struct IoBudget(Arc<Shared>);

struct Shared {
    bytes: u64,
    depth: usize,
    state: Mutex<BudgetState>,
    peak_reserved_bytes: AtomicU64,
    peak_in_flight: AtomicU64,
    reads: AtomicU64,
    bypassed_reads: AtomicU64,
    /// Schedulers alive that use the budget.
    readers: AtomicUsize,
}

#[derive(Default)]
struct BudgetState {
    reserved_bytes: u64,
    in_flight: usize,
    /// Schedulers held back by the budget, woken at the next release.
    waiters: Vec<Weak<dyn BudgetWaiter>>,
}

/// Counters of an [`IoBudget`], over every read that used it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoBudgetStats {
    /// Bytes reserved now (read or being read, not yet consumed).
    pub reserved_bytes: u64,
    /// The most bytes reserved at any moment.
    pub peak_reserved_bytes: u64,
    /// Reads in flight now.
    pub in_flight: u64,
    /// The most reads in flight at any moment.
    pub peak_in_flight: u64,
    /// Reads issued.
    pub reads: u64,
    /// Reads issued past the shared bytes by a read's own bypass or urgency.
    pub bypassed_reads: u64,
}

/// What the budget said to a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Issued: its bytes and its place in the depth are taken.
    Granted,
    /// Held back: no read may be issued until a read completes.
    NoDepth,
    /// Held back: its bytes do not fit (and it may not pass).
    NoBytes,
}

/// A scheduler that waits for room in a shared budget.
pub(crate) trait BudgetWaiter: Send + Sync {
    /// Whether the waiter is registered already (set under the budget's lock, cleared by
    /// [`BudgetWaiter::wake`]): a waiter is registered once however often it is held back.
    fn registered(&self) -> &AtomicBool;

    /// Tries again to issue what was held back. Called with no lock held.
    fn wake(self: Arc<Self>);
}

static PROCESS_DEFAULT: RwLock<Option<IoBudget>> = RwLock::new(None);

impl IoBudget {
    /// A budget of `bytes` bytes reserved at once and `depth` reads in flight at once (`None`:
    /// no shared cap on reads in flight), over every read given it.
    pub fn new(bytes: ByteCount, depth: Option<NonZeroUsize>) -> Self {
        Self(Arc::new(Shared {
            bytes: bytes.get(),
            depth: depth.map_or(usize::MAX, NonZeroUsize::get),
            state: Mutex::new(BudgetState::default()),
            peak_reserved_bytes: AtomicU64::new(0),
            peak_in_flight: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            bypassed_reads: AtomicU64::new(0),
            readers: AtomicUsize::new(0),
        }))
    }

    /// The budget of reads that are given none (`None` until [`set_process_default`] sets one).
    ///
    /// [`set_process_default`]: Self::set_process_default
    pub fn process_default() -> Option<IoBudget> {
        PROCESS_DEFAULT.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Makes `budget` the budget of every read started from now on without one of its own
    /// (`None`: each read only has its own buffer and depth again). Reads already running keep
    /// the budget they started with.
    pub fn set_process_default(budget: Option<IoBudget>) {
        *PROCESS_DEFAULT.write().unwrap_or_else(|p| p.into_inner()) = budget;
    }

    /// The bytes the reads may reserve at once (past which only their own arms let reads
    /// through).
    pub fn bytes(&self) -> ByteCount {
        ByteCount(self.0.bytes)
    }

    /// The reads that may be in flight at once, if capped.
    pub fn depth(&self) -> Option<NonZeroUsize> {
        (self.0.depth != usize::MAX).then(|| NonZeroUsize::new(self.0.depth)).flatten()
    }

    /// A number identifying the budget while it lives (equal budgets have equal ids).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// How many reads use the budget now (their I/O schedulers are alive).
    pub fn active_reads(&self) -> usize {
        self.0.readers.load(Ordering::Relaxed)
    }

    /// Counts a read using the budget until the returned guard is dropped.
    pub(crate) fn join(&self) -> Reader {
        self.0.readers.fetch_add(1, Ordering::Relaxed);
        Reader(self.clone())
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> IoBudgetStats {
        let (reserved_bytes, in_flight) = {
            let state = self.lock();
            (state.reserved_bytes, state.in_flight as u64)
        };
        IoBudgetStats {
            reserved_bytes,
            in_flight,
            peak_reserved_bytes: self.0.peak_reserved_bytes.load(Ordering::Relaxed),
            peak_in_flight: self.0.peak_in_flight.load(Ordering::Relaxed),
            reads: self.0.reads.load(Ordering::Relaxed),
            bypassed_reads: self.0.bypassed_reads.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BudgetState> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks to issue a read of `len` bytes; `may_pass` when the read's own arms let it past its
    /// budget. On [`Grant::Granted`] the bytes and a place in the depth are taken; otherwise
    /// `waiter` is registered, to be woken at the next release.
    pub(crate) fn try_issue(&self, len: u64, may_pass: bool, waiter: &Arc<dyn BudgetWaiter>) -> Grant {
        let mut state = self.lock();
        let grant = if state.in_flight >= self.0.depth {
            Grant::NoDepth
        } else if state.reserved_bytes.saturating_add(len) <= self.0.bytes {
            Grant::Granted
        } else if may_pass {
            self.0.bypassed_reads.fetch_add(1, Ordering::Relaxed);
            Grant::Granted
        } else {
            Grant::NoBytes
        };
        if grant == Grant::Granted {
            state.in_flight += 1;
            state.reserved_bytes = state.reserved_bytes.saturating_add(len);
            self.0.reads.fetch_add(1, Ordering::Relaxed);
            self.0.peak_in_flight.fetch_max(state.in_flight as u64, Ordering::Relaxed);
            self.0.peak_reserved_bytes.fetch_max(state.reserved_bytes, Ordering::Relaxed);
        } else if !waiter.registered().swap(true, Ordering::AcqRel) {
            state.waiters.push(Arc::downgrade(waiter));
        }
        grant
    }

    /// Adds `bytes` that already exist (a decompressed page) to what is reserved.
    pub(crate) fn grow(&self, bytes: u64) {
        let mut state = self.lock();
        state.reserved_bytes = state.reserved_bytes.saturating_add(bytes);
        self.0.peak_reserved_bytes.fetch_max(state.reserved_bytes, Ordering::Relaxed);
    }

    /// Returns `bytes` and, if `read_done`, one place in the depth; the waiters to wake (after
    /// every lock is released: see [`wake_all`]) are added to `to_wake`.
    pub(crate) fn release(&self, bytes: u64, read_done: bool, to_wake: &mut Vec<Weak<dyn BudgetWaiter>>) {
        let mut state = self.lock();
        state.reserved_bytes = state.reserved_bytes.saturating_sub(bytes);
        if read_done {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
        if (bytes > 0 || read_done) && !state.waiters.is_empty() {
            to_wake.append(&mut state.waiters);
        }
    }
}

/// A read counted in [`IoBudget::active_reads`] while it lives.
pub(crate) struct Reader(IoBudget);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.0.readers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PartialEq for IoBudget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for IoBudget {}

impl std::fmt::Debug for IoBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoBudget").field("bytes", &self.bytes()).field("depth", &self.depth()).finish()
    }
}

thread_local! {
    /// Waiters to wake on this thread while a wake-up runs here (`None` when none runs).
    static WAKING: RefCell<Option<Vec<Weak<dyn BudgetWaiter>>>> = const { RefCell::new(None) };
}

/// Wakes `waiters`, with no lock held. Wake-ups caused by a wake-up on the same thread are
/// queued and run by the outermost call, in a loop.
pub(crate) fn wake_all(waiters: Vec<Weak<dyn BudgetWaiter>>) {
    if waiters.is_empty() {
        return;
    }
    let nested = WAKING.with(|waking| match waking.borrow_mut().as_mut() {
        Some(queue) => {
            queue.extend(waiters.iter().cloned());
            true
        }
        None => false,
    });
    if nested {
        return;
    }
    /// Ends the wake-up loop of this thread however it is left.
    struct Running;
    impl Drop for Running {
        fn drop(&mut self) {
            WAKING.with(|waking| *waking.borrow_mut() = None);
        }
    }
    WAKING.with(|waking| *waking.borrow_mut() = Some(waiters));
    let _running = Running;
    loop {
        let next = WAKING.with(|waking| waking.borrow_mut().as_mut().and_then(Vec::pop));
        let Some(waiter) = next else { break };
        if let Some(waiter) = waiter.upgrade() {
            waiter.registered().store(false, Ordering::Release);
            waiter.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counter {
        registered: AtomicBool,
        woken: AtomicUsize,
    }

    impl BudgetWaiter for Counter {
        fn registered(&self) -> &AtomicBool {
            &self.registered
        }
        fn wake(self: Arc<Self>) {
            self.woken.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn depth_and_bytes_are_shared_and_releases_wake_waiters_once() {
        let budget = IoBudget::new(ByteCount(100), NonZeroUsize::new(2));
        let counter = Arc::new(Counter { registered: AtomicBool::new(false), woken: AtomicUsize::new(0) });
        let waiter: Arc<dyn BudgetWaiter> = counter.clone();
        assert_eq!(budget.try_issue(60, false, &waiter), Grant::Granted);
        assert_eq!(budget.try_issue(60, false, &waiter), Grant::NoBytes);
        // Held back twice, registered once.
        assert_eq!(budget.try_issue(60, false, &waiter), Grant::NoBytes);
        assert_eq!(budget.try_issue(60, true, &waiter), Grant::Granted);
        assert_eq!(budget.try_issue(1, true, &waiter), Grant::NoDepth);
        let stats = budget.stats();
        assert_eq!((stats.reserved_bytes, stats.in_flight, stats.bypassed_reads), (120, 2, 1));
        let mut to_wake = Vec::new();
        budget.release(0, true, &mut to_wake);
        assert_eq!(to_wake.len(), 1);
        wake_all(to_wake);
        assert_eq!(counter.woken.load(Ordering::SeqCst), 1);
        assert!(!counter.registered.load(Ordering::SeqCst));
        // Nobody waits: a release wakes nobody.
        let mut to_wake = Vec::new();
        budget.release(60, true, &mut to_wake);
        assert!(to_wake.is_empty());
        assert_eq!(budget.stats().reserved_bytes, 60);
        assert_eq!(budget, budget.clone());
        assert_ne!(budget, IoBudget::new(ByteCount(100), None));
    }
}
