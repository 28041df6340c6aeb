//! Turning the ranges of one request into the reads sent to storage.
//!
//! Ranges closer than `gap` bytes are merged into one read (one storage call is cheaper than two
//! small ones, and the bytes in between are few); a read longer than `max_read` is split so
//! that a huge buffer streams through several parallel calls. The same function serves the
//! [`IoScheduler`](super::IoScheduler) and the planner, so a plan reports exactly the reads a
//! read performs.

use std::ops::Range;

use crate::units::ByteCount;

/// How ranges are merged and split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoalesceOptions {
    /// Ranges whose gap is at most this many bytes are read together.
    pub gap: ByteCount,
    /// Reads longer than this are split into pieces of at most this length.
    pub max_read: ByteCount,
}

/// Computes the storage reads covering `ranges`: sorted, non-overlapping, each at most
/// `options.max_read` long. Empty ranges need no read.
pub fn coalesce_ranges(ranges: &[Range<u64>], options: CoalesceOptions) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    sorted.extend(ranges.iter().filter(|r| r.end > r.start).cloned());
    sorted.sort_unstable_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match merged.last_mut() {
            Some(last) if range.start <= last.end.saturating_add(options.gap.get()) => {
                last.end = last.end.max(range.end);
            }
            _ => merged.push(range),
        }
    }
    let max_read = options.max_read.get().max(1);
    let mut reads = Vec::with_capacity(merged.len());
    for range in merged {
        let mut start = range.start;
        while range.end - start > max_read {
            reads.push(start..start + max_read);
            start += max_read;
        }
        reads.push(start..range.end);
    }
    reads
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: CoalesceOptions = CoalesceOptions { gap: ByteCount(10), max_read: ByteCount(100) };

    #[test]
    fn merges_near_ranges_and_splits_long_ones() {
        assert_eq!(coalesce_ranges(&[25..30, 0..10, 35..40], OPTS), vec![0..10, 25..40]);
        assert_eq!(coalesce_ranges(&[0..10, 21..30], OPTS), vec![0..10, 21..30]);
        assert_eq!(coalesce_ranges(&[0..250], OPTS), vec![0..100, 100..200, 200..250]);
        assert_eq!(coalesce_ranges(&[5..5, 0..3, 1..2], OPTS), vec![0..3]);
        assert!(coalesce_ranges(&[], OPTS).is_empty());
    }
}
