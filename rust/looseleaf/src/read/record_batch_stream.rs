//! [`RecordBatchStream`]: the batches of a read, file or dataset, in row order, and
//! [`ReadStats`], a handle on the read's counters that outlives it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use super::filtered_read::{FilterCounts, FilterStats};
use super::metrics::{ReadMetrics, ReadTimings};
use crate::error::Result;
use crate::io::{IoBudget, IoScheduler, IoStats};
use crate::trace::{SpanKind, Trace};

/// The batches of a read, in row order.
pub struct RecordBatchStream {
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch>>,
    stats: ReadStats,
    /// Records the batches handed out, if the read is traced (set by the `stream` of a file or
    /// a dataset only: the streams of sub-reads hand their batches to the read, not to its
    /// caller).
    pub(crate) consumer: Option<ConsumerTrace>,
}

impl RecordBatchStream {
    pub(crate) fn new(schema: SchemaRef, batches: BoxStream<'static, Result<RecordBatch>>, stats: ReadStats) -> Self {
        Self { schema, batches, stats, consumer: None }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The read's counters (a handle that outlives the stream).
    pub fn stats(&self) -> ReadStats {
        self.stats.clone()
    }

    /// The read's I/O counters so far.
    pub fn io_stats(&self) -> IoStats {
        self.stats.io_stats()
    }

    /// Where the read's time went so far: scheduling, waiting for I/O, decoding.
    pub fn timings(&self) -> ReadTimings {
        self.stats.timings()
    }

    /// A filtered read's counters: zones ruled out, rows matched, how the other columns were
    /// read (`None` for a read without a filter).
    pub fn filter_stats(&self) -> Option<FilterCounts> {
        self.stats.filter_stats()
    }
}

impl Stream for RecordBatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(consumer) = &mut this.consumer else { return this.batches.poll_next_unpin(cx) };
        let asked = *consumer.asked.get_or_insert_with(|| consumer.trace.now());
        let polled = this.batches.poll_next_unpin(cx);
        if let Poll::Ready(ready) = &polled {
            consumer.asked = None;
            if let Some(Ok(batch)) = ready {
                let (rows, bytes) = (batch.num_rows() as u64, batch.get_array_memory_size() as u64);
                consumer.trace.span(SpanKind::Batch { index: consumer.batches, rows, bytes }, asked);
                consumer.batches += 1;
            }
        }
        polled
    }
}

/// The consumer's side of a traced read: each batch from the moment it was asked for.
pub(crate) struct ConsumerTrace {
    trace: Trace,
    /// When the batch being waited for was first asked for.
    asked: Option<u64>,
    /// Batches handed out.
    batches: u64,
}

impl ConsumerTrace {
    pub(crate) fn new(trace: Trace) -> Self {
        Self { trace, asked: None, batches: 0 }
    }
}

/// The counters of one file read.
#[derive(Clone)]
struct FileCounters {
    io: IoScheduler,
    metrics: Arc<ReadMetrics>,
    filter: Option<Arc<FilterStats>>,
}

/// A handle on a read's counters that outlives its stream: I/O, timings and filter counts,
/// summed over the file reads it is made of (one for a file, one per file started for a
/// dataset).
#[derive(Clone, Default)]
pub struct ReadStats {
    /// Guarded by its own lock: the file reads counted so far.
    files: Arc<Mutex<Vec<FileCounters>>>,
    /// The budget the file reads share, if they share one: its peak is the read's (their own
    /// peaks happened at different times).
    shared: Option<IoBudget>,
}

impl ReadStats {
    /// The counters of one file read.
    pub(crate) fn of_read(io: IoScheduler, metrics: Arc<ReadMetrics>, filter: Option<Arc<FilterStats>>) -> Self {
        Self { files: Arc::new(Mutex::new(vec![FileCounters { io, metrics, filter }])), shared: None }
    }

    /// The counters of file reads sharing `budget`, none started yet.
    pub(crate) fn of_shared(budget: IoBudget) -> Self {
        Self { files: Arc::default(), shared: Some(budget) }
    }

    /// Counts the file reads of `other` too (those it has started so far): one handle on the
    /// counters of several reads.
    pub fn add(&self, other: &ReadStats) {
        let theirs = other.lock().clone();
        self.lock().extend(theirs);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<FileCounters>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// File reads started.
    pub fn files_read(&self) -> usize {
        self.lock().len()
    }

    /// The I/O counters of every file read, summed (see [`IoStats::merge`]).
    pub fn io_stats(&self) -> IoStats {
        let mut total = IoStats::default();
        for file in self.lock().iter() {
            total.merge(&file.io.stats());
        }
        if let Some(shared) = &self.shared {
            total.peak_reserved_bytes = shared.stats().peak_reserved_bytes;
        }
        total
    }

    /// Bytes the reads hold in their I/O buffers now.
    pub fn reserved_bytes(&self) -> u64 {
        self.lock().iter().map(|file| file.io.reserved_bytes()).sum()
    }

    /// The timings of every file read, summed.
    pub fn timings(&self) -> ReadTimings {
        let mut total = ReadTimings::default();
        for file in self.lock().iter() {
            total.merge(&file.metrics.snapshot());
        }
        total
    }

    /// The filtered reads' counters, summed (`None` if no file was read with a filter).
    pub fn filter_stats(&self) -> Option<FilterCounts> {
        let files = self.lock();
        let mut total: Option<FilterCounts> = None;
        for counts in files.iter().filter_map(|f| f.filter.as_ref()).map(|f| f.snapshot()) {
            total.get_or_insert_with(FilterCounts::default).merge(&counts);
        }
        total
    }
}
