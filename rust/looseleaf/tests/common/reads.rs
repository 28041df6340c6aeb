//! Running a read to the end ([`read_to_end`], under the [`HANG`](super::run::HANG) deadline)
//! and drawing random read settings ([`with_random_settings`]: I/O depth, budget, coalescing,
//! decode parallelism), so that each read of a property test goes through a different schedule.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::TryStreamExt;
use looseleaf::io::{CoalesceOptions, IoDepth};
use looseleaf::{ByteCount, IoOptions, IoStats, ReadBuilder};
use rand::Rng;
use rand::rngs::StdRng;

use super::run::{HANG, within_deadline};

/// A non-zero count for the read options (tests pass literals and small computed values).
pub fn nz(n: usize) -> std::num::NonZeroUsize {
    std::num::NonZeroUsize::new(n).expect("a count of at least 1")
}

/// The output of a read: its schema, its batches and its I/O counters at the end.
#[derive(Debug)]
pub struct ReadOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub stats: IoStats,
}

impl ReadOutput {
    /// The batches concatenated.
    pub fn concat(&self) -> RecordBatch {
        arrow_select::concat::concat_batches(&self.schema, &self.batches).unwrap()
    }
}

/// Runs a read to the end.
pub async fn read_to_end(read: ReadBuilder) -> looseleaf::Result<ReadOutput> {
    within_deadline("a read to the end", HANG, async {
        let mut stream = read.stream().await?;
        let schema = stream.schema().clone();
        let batches: Vec<RecordBatch> = (&mut stream).try_collect().await?;
        Ok(ReadOutput { schema, batches, stats: stream.io_stats() })
    })
    .await
}

/// A random I/O configuration: the storage defaults, an I/O depth of one, a budget of one byte
/// (every read goes through the bypass), tiny split reads, or wide coalescing.
pub fn random_io(rng: &mut StdRng) -> Option<IoOptions> {
    let local = IoOptions::LOCAL;
    match rng.random_range(0..6) {
        0 => None,
        1 => Some(IoOptions { depth: IoDepth::Fixed(nz(1)), ..local }),
        2 => Some(IoOptions { depth: IoDepth::Fixed(nz(1)), buffer: ByteCount(1), ..local }),
        3 => Some(IoOptions { depth: IoDepth::Fixed(nz(4)), buffer: ByteCount(1), ..local }),
        4 => Some(IoOptions {
            depth: IoDepth::Fixed(nz(3)),
            buffer: ByteCount(4096),
            coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(rng.random_range(16..=200)) },
            ..local
        }),
        _ => Some(IoOptions {
            coalesce: CoalesceOptions { gap: ByteCount(1 << 20), max_read: ByteCount(1 << 30) },
            ..local
        }),
    }
}

/// Applies random I/O options and decode parallelism to a read.
pub fn with_random_settings(rng: &mut StdRng, read: ReadBuilder) -> ReadBuilder {
    let read = match random_io(rng) {
        Some(io) => read.with_io_options(io),
        None => read,
    };
    match rng.random_range(0..3) {
        0 => read,
        n => read.with_decode_parallelism(nz(n)),
    }
}
