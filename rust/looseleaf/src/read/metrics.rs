//! [`ReadMetrics`]: where the time of a read goes.
//!
//! Three clocks, kept by the three loops: the scheduling loop's running time, the time the
//! decode loop spent waiting for pages to arrive (I/O the reader could not hide), and the CPU
//! time of decode tasks (summed over tasks, which run in parallel). Counters are relaxed
//! atomics: cheap enough to leave on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Timings of one read, shared by its loops.
#[derive(Debug, Default)]
pub struct ReadMetrics {
    scheduling_nanos: AtomicU64,
    waiting_nanos: AtomicU64,
    decoding_nanos: AtomicU64,
    batches: AtomicU64,
}

/// A snapshot of [`ReadMetrics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadTimings {
    /// Time the scheduling loop ran.
    pub scheduling: Duration,
    /// Time the decode loop waited for the pages of its batches.
    pub waiting_for_io: Duration,
    /// CPU time of the decode tasks, summed.
    pub decoding: Duration,
    /// Batches decoded.
    pub batches: u64,
}

impl ReadTimings {
    /// Adds `other`'s time and batches to these.
    pub fn merge(&mut self, other: &ReadTimings) {
        self.scheduling += other.scheduling;
        self.waiting_for_io += other.waiting_for_io;
        self.decoding += other.decoding;
        self.batches += other.batches;
    }
}

impl ReadMetrics {
    /// Adds to the scheduling time.
    pub fn add_scheduling(&self, time: Duration) {
        self.scheduling_nanos.fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Adds to the time spent waiting for pages.
    pub fn add_waiting(&self, time: Duration) {
        self.waiting_nanos.fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Adds time spent decoding (a step's, or part of it when its fields are split).
    pub fn add_decoding(&self, time: Duration) {
        self.decoding_nanos.fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Counts one decoded batch (a step of the read).
    pub fn add_batch(&self) {
        self.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// The timings so far.
    pub fn snapshot(&self) -> ReadTimings {
        ReadTimings {
            scheduling: Duration::from_nanos(self.scheduling_nanos.load(Ordering::Relaxed)),
            waiting_for_io: Duration::from_nanos(self.waiting_nanos.load(Ordering::Relaxed)),
            decoding: Duration::from_nanos(self.decoding_nanos.load(Ordering::Relaxed)),
            batches: self.batches.load(Ordering::Relaxed),
        }
    }
}
