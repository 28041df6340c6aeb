//! [`IoOptions`]: the settings of an [`IoScheduler`](super::IoScheduler) — depth, I/O buffer,
//! coalescing, the size of the read that opens a file — and the defaults of each kind of
//! storage ([`IoOptions::LOCAL`], [`IoOptions::OBJECT_STORE`]). A read's
//! [`ReadOptions`](crate::ReadOptions) are laid over them.

use std::num::NonZeroUsize;

use super::{CoalesceOptions, IoDepth};
use crate::units::ByteCount;

/// Settings of an [`IoScheduler`](super::IoScheduler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoOptions {
    /// How many reads are in flight at once: fixed, or found while reading (see [`IoDepth`]).
    pub depth: IoDepth,
    /// The I/O buffer: bytes read but not yet consumed before reads pause (see the module
    /// documentation for when it may be exceeded). A buffer of 0 bytes is allowed: every read
    /// then waits for the bypass, one at a time.
    pub buffer: ByteCount,
    /// How ranges are merged and split into reads.
    pub coalesce: CoalesceOptions,
    /// Bytes read at the end of a file when it is opened: enough for the tail, the footer and
    /// the column table of most files, so that opening costs one request.
    pub open_read: ByteCount,
}

impl IoOptions {
    /// Defaults for local disks: 8 reads in flight, a 128 MiB buffer, ranges within 4 KiB
    /// merged, reads of at most 16 MiB, 64 KiB read on open.
    ///
    /// The buffer holds a page of each of 16 columns at the default page size (8 MiB), and no
    /// more: memory read ahead is memory a process's first read must fault in (a scan's batches
    /// share the pages they were cut from), and a fresh-process scan of the embeddings set took
    /// 143 ms with 256 MiB, 112 ms with 128 MiB, against 56–60 ms once its memory is reused;
    /// cold scans were as fast (see `docs/benchmarks.md`).
    pub const LOCAL: IoOptions = IoOptions {
        depth: IoDepth::Fixed(NonZeroUsize::MIN.saturating_add(7)),
        buffer: ByteCount::mib(128),
        coalesce: CoalesceOptions { gap: ByteCount::kib(4), max_read: ByteCount::mib(16) },
        open_read: ByteCount::kib(64),
    };

    /// Defaults for object stores, where a request costs tens of milliseconds before its first
    /// byte and runs at tens of MiB/s: an adaptive depth from 8 to 256 reads in flight, a
    /// 1 GiB buffer, ranges within 256 KiB merged (a 25 ms round trip costs as much as ~2 MiB
    /// of transfer), reads split at 8 MiB (a straggler then holds less of a column, and the
    /// pieces of a large page run in parallel), and 1 MiB read on open (the tail, footer and
    /// column table of a file of ~10,000 columns in one request). See `docs/benchmarks.md` for
    /// the measurements behind them.
    pub const OBJECT_STORE: IoOptions = IoOptions {
        depth: IoDepth::Adaptive {
            min: NonZeroUsize::MIN.saturating_add(7),
            max: NonZeroUsize::MIN.saturating_add(255),
        },
        buffer: ByteCount::gib(1),
        coalesce: CoalesceOptions { gap: ByteCount::kib(256), max_read: ByteCount::mib(8) },
        open_read: ByteCount::mib(1),
    };
}

impl Default for IoOptions {
    fn default() -> Self {
        Self::LOCAL
    }
}
