//! [`IoStats`]: what an [`IoScheduler`](super::IoScheduler) counted (requests, reads, bytes,
//! the budget's peak, depth, retries), and how the counts of several reads add up.

/// Counters of an [`IoScheduler`](super::IoScheduler), for tests, plans and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Requests submitted.
    pub requests: u64,
    /// Of which indirect (computed from earlier reads).
    pub indirect_requests: u64,
    /// Reads issued to storage.
    pub reads: u64,
    /// Bytes read from storage.
    pub bytes_read: u64,
    /// The largest number of bytes reserved at any moment.
    pub peak_reserved_bytes: u64,
    /// Reads issued over the budget (by the priority bypass or because a decoder waited).
    pub bypassed_reads: u64,
    /// Reads issued past the budget (and ahead of the queue) only because a decoder was
    /// waiting for them: the priority bypass would not have let them through.
    pub urgent_reads: u64,
    /// The I/O depth now (for an adaptive depth, the one it settled on so far).
    pub io_depth: u64,
    /// The highest I/O depth used.
    pub peak_io_depth: u64,
    /// Requests the storage made the reader try again (of every read of this file so far).
    pub retries: u64,
    /// Answers of the storage asking to slow down (of every read of this file so far).
    pub throttled: u64,
    /// Requests issued a second time because the first was far slower than its peers (of every
    /// read of this file so far).
    pub hedged: u64,
}

impl IoStats {
    /// Adds `other`'s counts to these: counts add up, depths and the peak of reserved bytes
    /// are the larger of the two (reads that share one budget take its peak instead, see
    /// `IoBudget::stats`).
    pub fn merge(&mut self, other: &IoStats) {
        self.requests += other.requests;
        self.indirect_requests += other.indirect_requests;
        self.reads += other.reads;
        self.bytes_read += other.bytes_read;
        self.peak_reserved_bytes = self.peak_reserved_bytes.max(other.peak_reserved_bytes);
        self.bypassed_reads += other.bypassed_reads;
        self.urgent_reads += other.urgent_reads;
        self.io_depth = self.io_depth.max(other.io_depth);
        self.peak_io_depth = self.peak_io_depth.max(other.peak_io_depth);
        self.retries += other.retries;
        self.throttled += other.throttled;
        self.hedged += other.hedged;
    }
}
