//! The decode loop: [`DecodeBatchStream`] waits for the rows of each batch, then hands out the
//! task that decodes it; [`DecodeBatchStream::into_stream`] runs those tasks in parallel and
//! yields the batches in row order.
//!
//! # Invariants
//! - Batches come out in row order whatever the decode parallelism (`buffered`, not
//!   `buffer_unordered`).
//! - All fields of a batch wait together, so every page the batch needs is taken out of the I/O
//!   buffer as soon as it is loaded: what makes the I/O scheduler's priority bypass sufficient.
//! - Batch size is unrelated to page size: a page is decoded in as many pieces as batches need.

use std::num::NonZeroUsize;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::{StreamExt, TryFutureExt};

use std::time::Instant;

use super::field_decoder::{DecodeTask, FieldDecoder};
use super::metrics::ReadMetrics;
use crate::error::{Error, Result};

/// The decode loop: waits for the rows of each batch, then hands out the task that decodes it.
///
/// [`DecodeBatchStream::into_stream`] runs the tasks of up to `parallelism` consecutive batches
/// at once on the runtime and yields their batches in row order.
pub struct DecodeBatchStream {
    schema: SchemaRef,
    fields: Vec<Box<dyn FieldDecoder>>,
    rows_remaining: u64,
    batch_size: u64,
    failed: bool,
    metrics: Arc<ReadMetrics>,
}

impl DecodeBatchStream {
    /// A stream of `num_rows` rows of `schema`, in batches of `batch_size` rows (the last may be
    /// shorter), from one decoder per field of `schema`.
    pub fn new(
        schema: SchemaRef,
        fields: Vec<Box<dyn FieldDecoder>>,
        num_rows: u64,
        batch_size: NonZeroUsize,
        metrics: Arc<ReadMetrics>,
    ) -> Self {
        let batch_size = batch_size.get() as u64;
        Self { schema, fields, rows_remaining: num_rows, batch_size, failed: false, metrics }
    }

    /// Waits until the rows of the next batch are loaded and returns the task that decodes it,
    /// or `None` when all rows have been handed out (or after an error).
    pub async fn next_task(&mut self) -> Option<Result<BatchDecodeTask>> {
        if self.rows_remaining == 0 || self.failed {
            return None;
        }
        let num_rows = self.rows_remaining.min(self.batch_size);
        // All fields wait together, so that every page the batch needs leaves the I/O budget
        // as soon as it is loaded (see `IoScheduler`: this is what makes the bypass sufficient).
        let started = Instant::now();
        let waits = self.fields.iter_mut().map(|f| f.next_batch(num_rows));
        let result = futures::future::try_join_all(waits).await;
        self.metrics.add_waiting(started.elapsed());
        match result {
            Ok(tasks) => {
                self.rows_remaining -= num_rows;
                Some(Ok(BatchDecodeTask {
                    schema: self.schema.clone(),
                    num_rows,
                    tasks,
                    metrics: self.metrics.clone(),
                }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// The batches, decoded by up to `parallelism` tasks at once on `runtime`, in order.
    pub fn into_stream(
        self,
        parallelism: NonZeroUsize,
        runtime: tokio::runtime::Handle,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        futures::stream::unfold(self, |mut stream| async move { stream.next_task().await.map(|task| (task, stream)) })
            .map(move |task| {
                let runtime = runtime.clone();
                async move {
                    let task = task?;
                    runtime
                        .spawn(async move { task.run() })
                        .map_err(|e| Error::internal(format!("a decode task failed: {e}")))
                        .await?
                }
            })
            .buffered(parallelism.get())
            .boxed()
    }
}

/// Decodes the fields of one batch.
pub struct BatchDecodeTask {
    schema: SchemaRef,
    num_rows: u64,
    tasks: Vec<DecodeTask>,
    metrics: Arc<ReadMetrics>,
}

impl BatchDecodeTask {
    /// Runs the field tasks and assembles the batch.
    pub fn run(self) -> Result<RecordBatch> {
        let started = Instant::now();
        let columns = self.tasks.into_iter().map(|task| task()).collect::<Result<Vec<_>>>();
        self.metrics.add_decoding(started.elapsed());
        let options = RecordBatchOptions::new().with_row_count(Some(self.num_rows as usize));
        Ok(RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns?, &options)?)
    }
}
